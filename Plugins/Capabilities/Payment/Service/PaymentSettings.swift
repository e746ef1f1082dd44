internal import EMVCommon
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
///   Also `type` (Terminal Type `9F35`, two digits as in Book 4 Annex A1, default `"21"`), `capabilities`
///   (`9F33`, 3 bytes hex, default `"006800"`), `additionalCapabilities` (`9F40`, 5 bytes hex), `ttq` (`9F66` of
///   combinations without their own, 4 bytes hex) and `merchantIdentifier` (`9F16`, at most 15 characters).
/// - `applications` (optional, non-empty): the reader's combinations (``TerminalApplication``), each
///   `{ "aid": hex 5–16 bytes, "kernel": EMVCo Kernel ID this build implements, "partialSelection": true,
///   "label": "CB", "ttq": hex 4 bytes, "statusCheck": false, "zeroAmountAllowed": true,
///   "terminalActionCodes": { "denial": hex 5 bytes, "online": …, "default": … },
///   "limits": { "EUR": { "contactlessTransaction": "50.00", "cvmRequired": "50.00", "floor": "0.00" } } }`;
///   limit amounts are strings read by ``ISO4217Currency/minorUnits(parsing:)``. Absent: every implemented kernel
///   on its scheme's AIDs (``TerminalApplication/defaults``).
/// - `preferredAIDs` (optional): the merchant's brand preference for co-badged cards, most preferred first (AIDs
///   or prefixes, hex); Entry Point puts them ahead of the card's priority.
/// - `caPublicKeys` (optional): path of the CA public keys file for offline data authentication, or a non-empty
///   array of such paths whose keys are merged (for example the schemes' test keys next to an acquirer's file); a
///   RID and index listed in two files is refused (``CertificationAuthorityKeys/init(merging:)``).
/// - `readerKey` (optional): path of the reader's P-256 private key (PEM) that seals envelopes v2; absent:
///   `<dataDirectory>/reader-key.pem`, created on first use (``ReaderKeyStore``).
/// - `education` (optional): path of a merchant education translations file (``MerchantEducation/Translations``):
///   the store's own wording and languages for `ProximityReaderDiscovery`, ahead of the built-in English, French
///   and German.
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
    /// The terminal data objects sent to cards, the combinations (`applications`), the brand preference
    /// (`preferredAIDs`) and the CA public keys file (`caPublicKeys`).
    package var terminal: TerminalSettings
    package var cardDataTTL: Duration
    /// The reader's private key file (`readerKey`), absolute; `nil`: `<dataDirectory>/reader-key.pem`, created on
    /// first use (``ReaderKeyStore``).
    package var readerKeyPath: String?
    /// CA public keys for offline data authentication: the `caPublicKeys` file, else
    /// `keys/ca-public-keys-test.json` next to the manifest when that exists (the TEST keys of the virtual cards), else
    /// none (then no offline approval is ever reported: ODA cannot succeed).
    package var certificationAuthorities: CertificationAuthorityKeys = .none
    /// The store's merchant education texts (`education`), ahead of the built-in ones.
    package var education = MerchantEducation.Translations()

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
        var terminal =
            try object.value("terminal").map { try Self.terminalSettings($0, at: terminalPath) } ?? TerminalSettings()
        let applicationsPath = object.path(of: "applications")
        if let applications = try object.value("applications").map({
            try Self.applications($0, at: applicationsPath)
        }) {
            terminal.supportedApplications = applications
        }
        let checker = object
        let preferred =
            try object.optionalArray("preferredAIDs") { value, elementPath in
                try Self.hex(checker.decodeString(value, at: elementPath), bytes: 5...16, "an AID", at: elementPath)
            } ?? []
        if let duplicate = preferred.enumerated().first(where: { preferred[..<$0.offset].contains($0.element) }) {
            throw ProximaError(
                .invalidManifest,
                "\(duplicate.element.hexString) is listed twice",
                jsonPath: "\(object.path(of: "preferredAIDs"))[\(duplicate.offset)]"
            )
        }
        terminal.preferredApplications = preferred
        let keyFiles =
            try object.value("caPublicKeys").map {
                try Self.keyFiles($0, at: checker.path(of: "caPublicKeys"), baseDirectory: baseDirectory, checker)
            } ?? []
        terminal.caPublicKeysPaths = keyFiles.map(\.path)
        self.terminal = terminal
        cardDataTTL = .seconds(try object.optionalInteger("cardDataTTLSeconds", in: 1...600) ?? 60)
        education =
            try object.optionalString("education").map {
                try MerchantEducation.Translations(
                    contentsOf: PathResolution.resolve($0, against: baseDirectory),
                    jsonPath: checker.path(of: "education")
                )
            } ?? MerchantEducation.Translations()
        readerKeyPath = try object.optionalString("readerKey").map {
            PathResolution.resolve($0, against: baseDirectory)
        }
        certificationAuthorities =
            try keyFiles.isEmpty
            ? CertificationAuthorityKeys.defaultKeys(baseDirectory: baseDirectory)
            : CertificationAuthorityKeys(merging: keyFiles)
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

    /// `caPublicKeys`: one path (a string) or a non-empty array of distinct paths, each resolved against the
    /// manifest's folder and paired with the JSON path its errors name.
    private static func keyFiles(
        _ json: JSONValue,
        at path: String,
        baseDirectory: String,
        _ decoder: StrictObject
    ) throws -> [(path: String, jsonPath: String?)] {
        if case .string = json {
            let file = try decoder.decodeString(json, at: path)
            return [(PathResolution.resolve(file, against: baseDirectory), path)]
        }
        guard case .array(let elements) = json else {
            throw decoder.mismatch(json, "a path or an array of paths", at: path)
        }
        guard !elements.isEmpty else {
            throw ProximaError(.invalidManifest, "expected at least one path", jsonPath: path)
        }
        var files: [(path: String, jsonPath: String?)] = []
        for (offset, element) in elements.enumerated() {
            let elementPath = "\(path)[\(offset)]"
            let file = PathResolution.resolve(
                try decoder.decodeString(element, at: elementPath),
                against: baseDirectory
            )
            guard !files.contains(where: { $0.path == file }) else {
                throw ProximaError(.invalidManifest, "\(file) is listed twice", jsonPath: elementPath)
            }
            files.append((file, elementPath))
        }
        return files
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

    /// `hex` as bytes when it is an even number of hex digits whose byte count is in `bytes`.
    static func hex(_ text: String, bytes: ClosedRange<Int>, _ what: String, at path: String) throws -> [UInt8] {
        let digits = text.utf8
        guard digits.count.isMultiple(of: 2),
            digits.allSatisfy({ (48...57).contains($0) || (65...70).contains($0) || (97...102).contains($0) }),
            bytes.contains(digits.count / 2)
        else {
            let size = bytes.count == 1 ? "\(bytes.lowerBound)" : "\(bytes.lowerBound)–\(bytes.upperBound)"
            throw ProximaError(
                .invalidManifest,
                "\"\(text)\" is not \(what): expected \(size) bytes as hex digits",
                jsonPath: path
            )
        }
        return [UInt8](hex: text) ?? []
    }

    /// `capabilities.payment.applications`: the reader's combinations (see ``TerminalApplication``).
    static func applications(_ json: JSONValue, at path: String) throws -> [TerminalApplication] {
        guard case .array(let elements) = json else {
            throw ProximaError(.invalidManifest, "expected an array, found \(json.typeName)", jsonPath: path)
        }
        guard !elements.isEmpty else {
            throw ProximaError(
                .invalidManifest,
                "the list is empty: leave \"applications\" out to accept every implemented kernel on its scheme's AIDs",
                jsonPath: path
            )
        }
        var applications: [TerminalApplication] = []
        for (index, element) in elements.enumerated() {
            let elementPath = "\(path)[\(index)]"
            let application = try Self.application(element, at: elementPath)
            if let twin = applications.firstIndex(where: {
                $0.identifier == application.identifier && $0.kernel == application.kernel
            }) {
                throw ProximaError(
                    .invalidManifest,
                    "\(application.identifier.hexString) on \(application.kernel) is already \(path)[\(twin)]",
                    jsonPath: elementPath
                )
            }
            applications.append(application)
        }
        return applications
    }

    private static func application(_ json: JSONValue, at path: String) throws -> TerminalApplication {
        var object = try StrictObject(json, at: path)
        let aid = try hex(object.string("aid"), bytes: 5...16, "an AID", at: object.path(of: "aid"))
        let implemented = KernelImplementation.implementedKernels.compactMap { $0.identifier.first }
        let number = try object.integer("kernel", in: 1...0xFF)
        let kernel = EMVKernel(identifier: [UInt8(number)])
        guard KernelImplementation.named(kernel) != nil else {
            throw object.fail(
                "kernel",
                "\(kernel) is not implemented in this build; implemented kernel IDs: "
                    + implemented.map { "\($0)" }.joined(separator: ", ")
            )
        }
        var application = TerminalApplication(identifier: aid, kernel: kernel)
        application.partialSelection = try object.bool("partialSelection", default: true)
        if let label = try object.optionalString("label") {
            guard label.utf8.count <= 16, label.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) else {
                throw object.fail("label", "expected at most 16 printable ASCII characters (as tag 50)")
            }
            application.label = label
        }
        if let ttq = try object.optionalString("ttq") {
            application.terminalTransactionQualifiers = try hex(
                ttq,
                bytes: 4...4,
                "a TTQ (9F66)",
                at: object.path(of: "ttq")
            )
        }
        application.statusCheckSupported = try object.bool("statusCheck", default: false)
        application.zeroAmountAllowed = try object.bool("zeroAmountAllowed", default: true)
        if let codes = object.value("terminalActionCodes") {
            application.actionCodes = try Self.actionCodes(codes, at: object.path(of: "terminalActionCodes"))
        }
        if let limits = object.value("limits") {
            application.limits = try Self.limits(limits, at: object.path(of: "limits"))
        }
        try object.finish()
        return application
    }

    /// `terminalActionCodes`: `{ "denial", "online", "default" }`, each 5 bytes of hex; a code left out keeps its
    /// value in ``TerminalActionCodes/conservative``.
    private static func actionCodes(_ json: JSONValue, at path: String) throws -> TerminalActionCodes {
        var object = try StrictObject(json, at: path)
        var codes = TerminalActionCodes.conservative
        func code(_ key: String) throws -> [UInt8]? {
            guard let text = try object.optionalString(key) else { return nil }
            return try hex(text, bytes: 5...5, "a Terminal Action Code", at: object.path(of: key))
        }
        codes.denial = try code("denial") ?? codes.denial
        codes.online = try code("online") ?? codes.online
        codes.defaultAction = try code("default") ?? codes.defaultAction
        try object.finish()
        return codes
    }

    /// `limits`: ISO 4217 alphabetic code → `{contactlessTransaction, cvmRequired, floor}`, each a decimal string
    /// read by the one amount parser (``ISO4217Currency/minorUnits(parsing:)``).
    private static func limits(_ json: JSONValue, at path: String) throws -> [Int: ReaderLimits] {
        let object = try StrictObject(json, at: path)
        var limits: [Int: ReaderLimits] = [:]
        for code in object.keys where code != "comment" && code != "$comment" {
            let currencyPath = object.path(of: code)
            guard code.utf8.count == 3, code == code.uppercased(), let currency = ISO4217Currency(alphabeticCode: code)
            else {
                throw ProximaError(
                    .invalidManifest,
                    "\"\(code)\" is not an active ISO 4217 alphabetic currency code in capitals (such as EUR, USD)",
                    jsonPath: currencyPath
                )
            }
            var copy = object
            guard let value = copy.value(code) else { continue }
            var entry = try StrictObject(value, at: currencyPath)
            func amount(_ key: String) throws -> Int64? {
                guard let text = try entry.optionalString(key, nonEmpty: false) else { return nil }
                do {
                    return try currency.minorUnits(parsing: text)
                } catch {
                    throw ProximaError(
                        .invalidManifest,
                        error.reason + " (write it as a JSON string such as \"" + currency.format(minorUnitAmount: 5000)
                            + "\")",
                        jsonPath: entry.path(of: key),
                        underlying: error
                    )
                }
            }
            let reader = ReaderLimits(
                contactlessTransaction: try amount("contactlessTransaction"),
                cvmRequired: try amount("cvmRequired"),
                floor: try amount("floor")
            )
            try entry.finish()
            limits[currency.numericCode] = reader
        }
        return limits
    }

    private static func terminalSettings(_ json: JSONValue, at path: String) throws -> TerminalSettings {
        var object = try StrictObject(json, at: path)
        var settings = TerminalSettings()
        if let type = try object.optionalString("type") {
            let value = try hex(type, bytes: 1...1, "a Terminal Type (9F35)", at: object.path(of: "type"))
            // Book 4 Annex A1: first digit 1-3 (operational control), second 1-6 (environment).
            guard (1...3).contains(value[0] >> 4), (1...6).contains(value[0] & 0x0F) else {
                throw object.fail("type", "\"\(type)\" is not a Terminal Type of EMV Book 4 Annex A1 (11…36, e.g. 22)")
            }
            settings.terminalType = value[0]
        }
        if let capabilities = try object.optionalString("capabilities") {
            settings.terminalCapabilities = try hex(
                capabilities,
                bytes: 3...3,
                "Terminal Capabilities (9F33)",
                at: object.path(of: "capabilities")
            )
        }
        if let additional = try object.optionalString("additionalCapabilities") {
            settings.additionalTerminalCapabilities = try hex(
                additional,
                bytes: 5...5,
                "Additional Terminal Capabilities (9F40)",
                at: object.path(of: "additionalCapabilities")
            )
        }
        if let ttq = try object.optionalString("ttq") {
            settings.terminalTransactionQualifiers = try hex(
                ttq,
                bytes: 4...4,
                "a TTQ (9F66)",
                at: object.path(of: "ttq")
            )
        }
        if let merchant = try object.optionalString("merchantIdentifier") {
            guard merchant.utf8.count <= 15, merchant.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) else {
                throw object.fail("merchantIdentifier", "expected at most 15 printable ASCII characters (9F16)")
            }
            settings.merchantIdentifier = merchant
        }
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
