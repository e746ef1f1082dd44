internal import Foundation
package import ProximaCore
package import ProximaCrypto
package import ProximaKernel
internal import ProximaSystem

/// The payment settings of a manifest: `capabilities.payment`, checked strictly (unknown keys are errors naming
/// their JSON path).
///
/// ```json
/// "capabilities": {
///   "payment": {
///     "processorPublicKey": "keys/psp-test-public.pem",
///     "tokenIssuer": "https://psp.example.test",
///     "merchantIdClaim": "merchant_id",
///     "allowedAudiences": ["*"],
///     "readerIdentifier": "proxima-store-001",
///     "terminal": {
///       "countryCode": 840,
///       "merchantCategoryCode": "5999",
///       "merchantNameAndLocation": "Proxima Test Store, Springfield",
///       "terminalIdentification": "PROXIMA1"
///     },
///     "cardDataTTLSeconds": 60
///   }
/// }
/// ```
///
/// - `processorPublicKey` (required): path of the payment processor's P-256 public key, PEM SubjectPublicKeyInfo,
///   resolved against the manifest's folder. Processor tokens are verified with it and card data is encrypted to
///   it (HPKE, `Docs/card-data-envelope.md`).
/// - `tokenIssuer` (required): the `iss` every processor token must carry.
/// - `readerIdentifier` (required): this kernel's identity towards the processor, 1–128 characters of
///   `A–Z a–z 0–9 . _ : -` starting with a letter or digit. Tokens must name it in `aud`; it goes into every card
///   data envelope. It is required rather than defaulted so that two kernels never share an identity by accident.
/// - `merchantIdClaim` (default `"merchant_id"`): the claim holding the merchant id, a non-empty string.
/// - `allowedAudiences` (default none): further `aud` values accepted besides `readerIdentifier`, such as a
///   store-wide audience or `"*"` for processor tokens valid on any reader. `"*"` is accepted only when listed
///   here; it matches a token whose `aud` is literally `"*"`, never a token issued to another reader.
/// - `terminal` (optional): `countryCode` (ISO 3166-1 numeric, 1–999, default 840), `merchantCategoryCode`
///   (ISO 18245, four digits as a string, default `"5999"`), `merchantNameAndLocation` (printable ASCII, at most
///   40 characters, sent as `9F4E` when a card asks), `terminalIdentification` (`9F1C`, exactly 8 letters or
///   digits, default `"PROXIMA1"`).
/// - `cardDataTTLSeconds` (default 60, 1…600): how long after a read the encrypted card data stays valid; the
///   envelope carries the expiry and processors must refuse it afterwards (Apple's is 60 s).
package struct PaymentSettings: Sendable {
    /// The manifest key of these settings under `capabilities`.
    package static let capabilityID: CapabilityID = "payment"

    /// The processor key file, absolute.
    package var processorPublicKeyPath: String
    package var processorPublicKey: P256.PublicKey
    package var tokenIssuer: String
    package var merchantIdClaim: String
    /// Audiences accepted besides ``readerIdentifier``.
    package var allowedAudiences: [String]
    package var readerIdentifier: String
    /// The terminal data objects sent to cards.
    package var terminal: TerminalSettings
    package var cardDataTTL: Duration
    /// CA public keys for offline data authentication: `keys/ca-public-keys-test.json` next to the manifest when it
    /// exists (until the manifest names the file), else none.
    package var certificationAuthorities: CertificationAuthorityKeys = .none

    /// Every `aud` value a token may carry to be accepted here: ``readerIdentifier`` first, then
    /// ``allowedAudiences``.
    package var acceptedAudiences: [String] {
        [readerIdentifier] + allowedAudiences.filter { $0 != readerIdentifier }
    }

    /// Reads and checks the settings object found at `path`.
    ///
    /// - Parameters:
    ///   - json: The `capabilities.payment` object.
    ///   - path: Its JSON path, for messages (`capabilities.payment`).
    ///   - baseDirectory: The manifest's folder; `processorPublicKey` resolves against it.
    /// - Throws: `ProximaError.invalidManifest` whose `jsonPath` names the problem.
    package init(json: JSONValue, path: String, baseDirectory: String) throws {
        var object = try StrictObject(json, at: path)
        let keyFile = try object.string("processorPublicKey")
        let keyPath = PathResolution.resolve(keyFile, against: baseDirectory)
        processorPublicKeyPath = keyPath
        processorPublicKey = try Self.loadPublicKey(keyPath, at: object.path(of: "processorPublicKey"))
        tokenIssuer = try object.string("tokenIssuer")
        merchantIdClaim = try object.optionalString("merchantIdClaim") ?? "merchant_id"
        readerIdentifier = try object.string("readerIdentifier")
        guard Self.isValidReaderIdentifier(readerIdentifier) else {
            throw object.fail(
                "readerIdentifier",
                "\"\(readerIdentifier)\" is not a reader identifier: 1–128 characters of A–Z a–z 0–9 . _ : -, "
                    + "starting with a letter or digit"
            )
        }
        let decoder = object
        let audiences =
            try object.optionalArray("allowedAudiences") { value, elementPath in
                try decoder.decodeString(value, at: elementPath)
            } ?? []
        if let duplicate = audiences.enumerated().first(where: { audiences[..<$0.offset].contains($0.element) }) {
            throw ProximaError(
                .invalidManifest,
                "\"\(duplicate.element)\" is listed twice",
                jsonPath: "\(object.path(of: "allowedAudiences"))[\(duplicate.offset)]"
            )
        }
        allowedAudiences = audiences
        let terminalPath = object.path(of: "terminal")
        terminal =
            try object.value("terminal").map { try Self.terminalSettings($0, at: terminalPath) } ?? TerminalSettings()
        cardDataTTL = .seconds(try object.optionalInteger("cardDataTTLSeconds", in: 1...600) ?? 60)
        certificationAuthorities = try CertificationAuthorityKeys.defaultKeys(baseDirectory: baseDirectory)
        try object.finish()
    }

    /// The settings of `manifest`, as the payment API needs them.
    ///
    /// - Throws: ``PaymentServiceError/Code/notAllowed`` when the manifest has no `capabilities.payment` block or
    ///   it is invalid (the manifest loader normally refuses the latter already).
    package init(manifest: Manifest) throws(PaymentServiceError) {
        let file = manifest.sourcePath ?? "the manifest"
        guard let json = manifest.capabilities[Self.capabilityID] else {
            throw PaymentServiceError(
                .notAllowed,
                "\(file) has no capabilities.payment block: add processorPublicKey, tokenIssuer and "
                    + "readerIdentifier (see Config/proxima.json)"
            )
        }
        do {
            try self.init(json: json, path: "capabilities.payment", baseDirectory: manifest.baseDirectory)
        } catch let error as ProximaError {
            throw PaymentServiceError(.notAllowed, "\(file): \(error.pathAndReason)", underlying: error)
        } catch {
            throw PaymentServiceError(.notAllowed, "\(file): \(error)", underlying: error)
        }
    }

    /// The capability type the built-in registry holds, whose validator is this initialiser.
    package static let capabilityType = CapabilityType(
        id: capabilityID,
        summary: "EMV contactless payments: processor key and tokens, reader identity, terminal data"
    ) { settings, path, baseDirectory in
        _ = try PaymentSettings(json: settings, path: path, baseDirectory: baseDirectory)
    }

    static func isValidReaderIdentifier(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (1...128).contains(bytes.count), let first = bytes.first, isAlphanumeric(first) else { return false }
        return bytes.allSatisfy {
            isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ":")
                || $0 == UInt8(ascii: "-")
        }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
    }

    private static func loadPublicKey(_ path: String, at jsonPath: String) throws -> P256.PublicKey {
        let data: [UInt8]
        do {
            data = try SystemFile.read(path, limit: 64 * 1024)
        } catch {
            throw ProximaError(
                .invalidManifest,
                "cannot read \(path): \(error.reason)",
                jsonPath: jsonPath,
                underlying: error
            )
        }
        do {
            return try P256.PublicKey(pemRepresentation: String(decoding: data, as: UTF8.self))
        } catch let error as CryptoError {
            throw ProximaError(
                .invalidManifest,
                "\(path) is not a P-256 public key in PEM (BEGIN PUBLIC KEY): \(error.reason)",
                jsonPath: jsonPath,
                underlying: error
            )
        }
    }

    private static func terminalSettings(_ json: JSONValue, at path: String) throws -> TerminalSettings {
        var object = try StrictObject(json, at: path)
        var settings = TerminalSettings()
        if let country = try object.optionalInteger("countryCode", in: 1...999) { settings.countryCode = Int(country) }
        if let category = try object.optionalString("merchantCategoryCode") {
            guard category.utf8.count == 4, category.utf8.allSatisfy({ (48...57).contains($0) }),
                let value = Int(category)
            else {
                throw object.fail("merchantCategoryCode", "\"\(category)\" is not a four-digit ISO 18245 code")
            }
            settings.merchantCategoryCode = value
        }
        if let name = try object.optionalString("merchantNameAndLocation") {
            guard name.utf8.count <= 40, name.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) else {
                throw object.fail("merchantNameAndLocation", "expected at most 40 printable ASCII characters")
            }
            settings.merchantNameAndLocation = name
        }
        if let terminal = try object.optionalString("terminalIdentification") {
            guard terminal.utf8.count == 8, terminal.utf8.allSatisfy({ isAlphanumeric($0) }) else {
                throw object.fail(
                    "terminalIdentification",
                    "\"\(terminal)\" is not a Terminal Identification (9F1C): exactly 8 letters or digits"
                )
            }
            settings.terminalIdentification = terminal
        }
        try object.finish()
        return settings
    }
}
