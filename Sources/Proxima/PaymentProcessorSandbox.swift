import Foundation
import ProximaCore
public import ProximaCrypto
public import ProximaKernel

/// The processor side for integrators without a processor: issue reader tokens and open card data envelopes with
/// the TEST processor key (`Config/keys/psp-test-private.pem`) or a key from ``ProcessorKeyPair/generate()``.
/// What `proxima psp token` and `proxima psp decrypt` run, and how the example gets a token.
///
/// Never use it with a real processor key outside a sandbox: a real processor keeps its private key on its own
/// servers.
public struct PaymentProcessorSandbox: Sendable {
    /// The payment settings it acts for (issuer, merchant claim, reader identifier, processor key).
    public var settings: PaymentSettings
    public var tokenIssuer: ReaderTokenIssuer
    public var privateKey: P256.PrivateKey { tokenIssuer.privateKey }

    /// The private key the sandbox uses when none is given: `keys/psp-test-private.pem` next to the manifest.
    public static let defaultPrivateKeyFile = "keys/psp-test-private.pem"

    /// A sandbox for `settings`, signing with the private key in `privateKeyFile`.
    /// - Throws: `ProximaError.invalidArgument` when the file holds no P-256 private key or not the private key
    ///   of `settings.processorPublicKey`.
    public init(settings: PaymentSettings, privateKeyFile: String) throws {
        self.settings = settings
        self.tokenIssuer = try ReaderTokenIssuer(settings: settings, privateKeyFile: privateKeyFile)
    }

    /// A sandbox for a manifest's `capabilities.payment`, signing with `privateKeyFile` (relative paths resolve
    /// against the manifest's folder; default ``defaultPrivateKeyFile``).
    /// - Throws: ``PaymentCardReaderError/notAllowed(_:)`` without payment settings; `ProximaError.invalidArgument`
    ///   for the key.
    public init(manifest: Manifest, privateKeyFile: String? = nil) throws {
        let settings = try PaymentSettings(manifest: manifest)
        let file = PathResolution.resolve(privateKeyFile ?? Self.defaultPrivateKeyFile, against: manifest.baseDirectory)
        try self.init(settings: settings, privateKeyFile: file)
    }

    /// A sandbox for the manifest `PaymentCardReader()` uses (`PROXIMA_CONFIG`, else `Config/proxima.json`), with
    /// the private key `PSP_PRIVATE_KEY` names, else ``defaultPrivateKeyFile`` next to the manifest.
    public static func forDefaultConfiguration() throws -> PaymentProcessorSandbox {
        try PaymentProcessorSandbox(
            manifest: try DefaultPaymentKernel.manifest(),
            privateKeyFile: ProcessInfo.processInfo.environment["PSP_PRIVATE_KEY"]
        )
    }

    /// A reader token for `merchantID`, valid for `lifetime` from `now`, for this kernel's reader identifier
    /// (or the audiences given).
    public func issueToken(
        merchantID: String,
        audience: [String]? = nil,
        lifetime: Duration = .seconds(3600),
        now: Date = Date()
    ) throws -> PaymentCardReader.Token {
        try tokenIssuer.issue(
            merchantID: merchantID,
            audience: audience ?? [settings.readerIdentifier],
            lifetime: lifetime,
            now: now
        )
    }

    /// Opens a `paymentCardData` string with the sandbox key (see ``CardDataEnvelope/open(_:privateKey:now:)-(String,_,_)``).
    public func open(_ paymentCardData: String, now: Date = Date()) throws -> CardDataEnvelope.Contents {
        try CardDataEnvelope.open(paymentCardData, privateKey: privateKey, now: now)
    }
}
