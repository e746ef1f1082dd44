internal import Foundation
package import PaymentCapability
public import Proxima
internal import ProximaCore
public import ProximaCrypto
public import ProximaKernel

/// The processor side for integrators without a processor: issue reader tokens and open card data envelopes with
/// the TEST processor key (`Config/keys/psp-test-private.pem`) or a key from ``ProcessorKeyPair/generate()``.
/// What `proxima psp token` and `proxima psp decrypt` run, and how the example and the tests get tokens.
///
/// Its own product, `ProximaProcessorSandbox`: never linked into an app. A real processor keeps its private key
/// on its own servers and opens envelopes there (`Docs/card-data-envelope.md` specifies them byte for byte).
public struct PaymentProcessorSandbox: Sendable {
    let settings: PaymentSettings
    public let tokenIssuer: ReaderTokenIssuer
    public var privateKey: P256.PrivateKey { tokenIssuer.privateKey }
    /// The reader public keys registered with this sandbox processor: the kernel's own reader key (the sandbox runs
    /// beside the kernel and reads it where the kernel keeps it) and any added with ``registering(readerKey:)``.
    public private(set) var readerKeys: [P256.PublicKey]
    /// The kernel's reader identifier the sandbox issues tokens for (`capabilities.payment.readerIdentifier`).
    public var readerIdentifier: String { settings.readerIdentifier }

    /// The private key the sandbox uses when none is given: `keys/psp-test-private.pem` next to the manifest.
    public static let defaultPrivateKeyFile = "keys/psp-test-private.pem"

    /// A sandbox for a manifest's `capabilities.payment`, signing with `privateKeyFile` (relative paths resolve
    /// against the manifest's folder; default ``defaultPrivateKeyFile``).
    /// - Throws: `ProximaError.invalidArgument` without payment settings, or for a key file that is unreadable,
    ///   holds no P-256 private key, or not the private key of the manifest's `processorPublicKey`.
    public init(manifest: Manifest, privateKeyFile: String? = nil) throws {
        do {
            settings = try PaymentSettings(manifest: manifest)
        } catch {
            throw ProximaError(.invalidArgument, error.reason, underlying: error)
        }
        let file = PathResolution.resolve(privateKeyFile ?? Self.defaultPrivateKeyFile, against: manifest.baseDirectory)
        tokenIssuer = try ReaderTokenIssuer(settings: settings, privateKeyFile: file)
        do {
            readerKeys = [
                try ReaderKeyStore(settings: settings, dataDirectory: manifest.dataDirectory).loadOrCreate().publicKey
            ]
        } catch {
            throw ProximaError(.invalidArgument, error.reason, underlying: error)
        }
    }

    /// This sandbox with `readerKey` registered too (what a processor does when an account is linked).
    public func registering(readerKey: P256.PublicKey) -> PaymentProcessorSandbox {
        var copy = self
        if !copy.readerKeys.contains(readerKey) { copy.readerKeys.append(readerKey) }
        return copy
    }

    /// The identifier a version 2 envelope carries for a reader key: SHA-256 of its uncompressed point.
    public static func readerKeyID(of key: P256.PublicKey) -> [UInt8] { ReaderKeyStore.keyID(of: key) }

    /// A sandbox for the manifest `PaymentCardReader()` uses (`PROXIMA_CONFIG`, else `Config/proxima.json`), with
    /// the private key `PSP_PRIVATE_KEY` names, else ``defaultPrivateKeyFile`` next to the manifest.
    public static func forDefaultConfiguration() throws -> PaymentProcessorSandbox {
        try PaymentProcessorSandbox(
            manifest: try PaymentCardReader.defaultManifest(),
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

    /// Opens a `paymentCardData` string with the sandbox key and checks that it has not expired.
    /// - Throws: `ProximaError.malformedData` naming the problem (`malformed`, `unsupported`, `decryptionFailed`,
    ///   `invalidPayload`, `expired`), with the envelope error as its cause.
    public func open(_ paymentCardData: String, now: Date = Date()) throws -> OpenedCardData {
        do {
            return OpenedCardData(
                contents: try CardDataEnvelope.open(
                    paymentCardData,
                    privateKey: privateKey,
                    readerKeys: readerKeys,
                    now: now
                )
            )
        } catch let error as CardDataEnvelopeError {
            throw ProximaError(.malformedData, "card data envelope: \(error)", underlying: error)
        }
    }
}

/// An opened card data envelope as the sandbox shows it: the transaction, and the card masked (brand, last four).
///
/// The EMV data objects themselves (PAN, track 2, cryptogram) stay inside the package: `proxima psp decrypt
/// --reveal` and the tests reach them; an integrator's processor opens envelopes with its own code from the
/// byte-level specification.
public struct OpenedCardData: Hashable, Sendable, CustomStringConvertible {
    package let contents: CardDataEnvelope.Contents

    package init(contents: CardDataEnvelope.Contents) { self.contents = contents }

    public var transactionID: String { contents.transactionID }
    /// `purchase`, `refund` or `verification`.
    public var kind: String { contents.kind.rawValue }
    public var amount: String { contents.amount }
    public var currencyCode: String { contents.currencyCode }
    public var merchantID: String { contents.merchantID }
    public var readerIdentifier: String { contents.readerIdentifier }
    public var lane: String { contents.lane }
    public var device: String { contents.device }
    public var readAt: Date { contents.readAt }
    public var expiresAt: Date { contents.expiresAt }
    /// The EMV outcome (`onlineRequest`, `approved`, `declined`, …).
    public var outcome: String { contents.outcome }
    public var cardholderVerification: String { contents.cardholderVerification }
    /// The tags the envelope carries, without their values.
    public var tagNames: [String] { contents.emv.map(\.tag.description) }

    /// Every field, the PAN as its last four digits and track data as its length.
    public var description: String { contents.formatted(revealingPAN: false) }
}
