internal import Foundation
package import ProximaCore
package import ProximaCrypto
package import ProximaKernel
internal import ProximaSystem

/// The loyalty settings of a manifest: `capabilities.loyalty`, checked strictly (unknown keys are errors naming
/// their JSON path), with every key file read once, here.
///
/// ```json
/// "loyalty": {
///   "appleVAS": { "merchants": [ { "passTypeIdentifier": "pass.com.example.loyalty",
///                                  "privateKeys": ["keys/vas-test-private.pem"] } ],
///                 "maxCryptogramAgeSeconds": 300 },
///   "smartTap": { "collectorID": 20180608, "keyVersion": 1, "privateKey": "keys/smarttap-test-private.pem" }
/// }
/// ```
///
/// - `appleVAS.merchants` (1–16): each a `passTypeIdentifier` (1–255 printable ASCII characters) and
///   `privateKeys` (1–8 paths, resolved against the manifest's folder, of P-256 private keys in PEM, PKCS#8 or
///   SEC 1). Several keys let a merchant rotate: the cryptogram's key id picks one. Two merchants may not share a
///   pass type identifier.
/// - `appleVAS.maxCryptogramAgeSeconds` (default 300, 1…86400): how old a cryptogram's timestamp may be (and how
///   far ahead of this host's clock). VAS has no reader nonce: a recorded cryptogram replays until it is this old.
/// - `smartTap` (optional): Google Smart Tap's `collectorID` (1…2^32−1), `keyVersion` (1…2^32−1) and the
///   collector's P-256 `privateKey` (loaded here, once), which signs every session. A pass read through Smart Tap
///   is an entry whose merchant id is the collector ID in decimal.
/// - At least one of `appleVAS` and `smartTap` must be present.
package struct LoyaltySettings: Sendable {
    /// The manifest key of these settings under `capabilities`.
    package static let capabilityID: CapabilityID = "loyalty"

    /// One merchant's pass type and its decryption keys.
    package struct Merchant: Sendable {
        package var passTypeIdentifier: String
        /// SHA-256 of the pass type identifier: `9F25`, and the tail of the KDF's shared info.
        package var passTypeHash: [UInt8]
        package var keys: [VASKey]

        package init(passTypeIdentifier: String, passTypeHash: [UInt8], keys: [VASKey]) {
            self.passTypeIdentifier = passTypeIdentifier
            self.passTypeHash = passTypeHash
            self.keys = keys
        }
    }

    /// One merchant key: its VAS key id (the first four bytes of SHA-256 of the public key's x coordinate) and
    /// the private key. `CustomStringConvertible` shows the id only.
    package struct VASKey: Sendable, CustomStringConvertible {
        package var keyID: [UInt8]
        package var privateKey: P256.PrivateKey
        /// Where it was loaded from, for messages.
        package var path: String

        package init(privateKey: P256.PrivateKey, path: String) throws {
            self.privateKey = privateKey
            self.path = path
            self.keyID = try Self.keyID(of: privateKey.publicKey)
        }

        package static func keyID(of publicKey: P256.PublicKey) throws -> [UInt8] {
            Array(try SHA256.hash(Array(publicKey.x963Representation[1...32])).prefix(4))
        }

        package var description: String { "VAS key \(keyID.hexString) (\(path))" }
    }

    /// Google Smart Tap's collector: its id, the version of its long-term key and the key, which signs every
    /// session. `CustomStringConvertible` shows the id and version only.
    package struct SmartTap: Sendable, CustomStringConvertible {
        package var collectorID: UInt32 {
            didSet { collectorName = String(collectorID) }
        }
        package var keyVersion: UInt32
        /// The key that signs each session (its OpenSSL objects are kept by ProximaCrypto's P-256 key cache after
        /// its first signature).
        package let signingKey: P256.PrivateKey

        package init(collectorID: UInt32, keyVersion: UInt32, privateKey: P256.PrivateKey) throws {
            self.collectorID = collectorID
            self.collectorName = String(collectorID)
            self.keyVersion = keyVersion
            self.signingKey = privateKey
        }

        /// The collector ID in decimal: the merchant id of its entries (made once, not on every look-up of a tap).
        package private(set) var collectorName: String

        package var description: String { "Smart Tap collector \(collectorID) key version \(keyVersion)" }
    }

    package var merchants: [Merchant]
    package var maxCryptogramAge: Duration
    package var smartTap: SmartTap?

    package init(merchants: [Merchant], maxCryptogramAge: Duration, smartTap: SmartTap? = nil) {
        self.merchants = merchants
        self.maxCryptogramAge = maxCryptogramAge
        self.smartTap = smartTap
    }

    /// The merchant configured for `passTypeIdentifier`.
    package func merchant(_ passTypeIdentifier: String) -> Merchant? {
        merchants.first { $0.passTypeIdentifier == passTypeIdentifier }
    }

    /// Reads `capabilities.loyalty` at `path`, loading every key file below `baseDirectory`.
    /// - Throws: `ProximaError.invalidManifest` naming the JSON path (and the file, for a key that is missing or
    ///   not a P-256 private key).
    package init(json: JSONValue, path: String, baseDirectory: String) throws {
        var object = try StrictObject(json, at: path)
        var merchants: [Merchant] = []
        var age: Int64 = 300
        if let vasValue = object.value("appleVAS") {
            var vas = try StrictObject(vasValue, at: object.path(of: "appleVAS"))
            var seen: Set<String> = []
            merchants = try vas.array("merchants") { value, merchantPath -> Merchant in
                var merchant = try StrictObject(value, at: merchantPath)
                let identifier = try merchant.string("passTypeIdentifier")
                guard identifier.utf8.count <= 255, identifier.utf8.allSatisfy({ (0x21..<0x7F).contains($0) }) else {
                    throw merchant.fail(
                        "passTypeIdentifier",
                        "expected 1–255 printable ASCII characters without spaces"
                    )
                }
                guard seen.insert(identifier).inserted else {
                    throw merchant.fail("passTypeIdentifier", "\"\(identifier)\" is configured twice")
                }
                let decoder = merchant
                let keys = try merchant.array("privateKeys") { keyValue, keyPath -> VASKey in
                    let file = try decoder.decodeString(keyValue, at: keyPath)
                    let resolved = Self.resolve(file, against: baseDirectory)
                    return try VASKey(privateKey: Self.loadPrivateKey(resolved, at: keyPath), path: resolved)
                }
                guard (1...8).contains(keys.count) else {
                    throw merchant.fail("privateKeys", "expected 1–8 key files, found \(keys.count)")
                }
                try merchant.finish()
                return Merchant(
                    passTypeIdentifier: identifier,
                    passTypeHash: try SHA256.hash(Array(identifier.utf8)),
                    keys: keys
                )
            }
            guard (1...16).contains(merchants.count) else {
                throw vas.fail("merchants", "expected 1–16 merchants, found \(merchants.count)")
            }
            age = try vas.optionalInteger("maxCryptogramAgeSeconds", in: 1...86_400) ?? 300
            try vas.finish()
        }

        var smartTap: SmartTap?
        if let smartTapValue = object.value("smartTap") {
            var block = try StrictObject(smartTapValue, at: object.path(of: "smartTap"))
            let collector = try block.integer("collectorID", in: 1...Int64(UInt32.max))
            let version = try block.integer("keyVersion", in: 1...Int64(UInt32.max))
            let file = try block.string("privateKey")
            let key = try Self.loadPrivateKey(
                Self.resolve(file, against: baseDirectory),
                at: block.path(of: "privateKey")
            )
            try block.finish()
            smartTap = try SmartTap(collectorID: UInt32(collector), keyVersion: UInt32(version), privateKey: key)
            if let collision = merchants.first(where: { $0.passTypeIdentifier == String(collector) }) {
                throw block.fail(
                    "collectorID",
                    "\(collector) is also an appleVAS passTypeIdentifier (\(collision.passTypeIdentifier)); entries "
                        + "name the collector by its ID, so the two must differ"
                )
            }
        }
        guard !merchants.isEmpty || smartTap != nil else {
            throw ProximaError(
                .invalidManifest,
                "expected appleVAS, smartTap or both (a loyalty block that reads no pass)",
                jsonPath: path
            )
        }
        try object.finish()
        self.init(merchants: merchants, maxCryptogramAge: .seconds(age), smartTap: smartTap)
    }

    /// The settings of `manifest`.
    /// - Throws: ``LoyaltyError/Code/invalidRequest`` when the manifest has no `capabilities.loyalty` block or it
    ///   is invalid (the manifest loader normally refuses the latter already).
    package init(manifest: Manifest) throws(LoyaltyError) {
        let file = manifest.sourcePath ?? "the manifest"
        guard let json = manifest.capabilities[Self.capabilityID] else {
            throw LoyaltyError(
                .invalidRequest,
                step: "settings",
                "\(file) has no capabilities.loyalty block: add appleVAS.merchants with their private keys"
            )
        }
        do {
            try self.init(json: json, path: "capabilities.loyalty", baseDirectory: manifest.baseDirectory)
        } catch {
            throw LoyaltyError(.invalidRequest, step: "settings", "\(file): \(error)")
        }
    }

    /// The capability type the built-in registry holds, whose validator is this initialiser.
    package static let capabilityType = CapabilityType(
        id: capabilityID,
        summary: "loyalty passes: Apple VAS merchants and keys, Google Smart Tap collector"
    ) { settings, path, baseDirectory in
        _ = try LoyaltySettings(json: settings, path: path, baseDirectory: baseDirectory)
    }

    private static func resolve(_ file: String, against baseDirectory: String) -> String {
        PathResolution.resolve(file, against: baseDirectory)
    }

    private static func loadPrivateKey(_ path: String, at jsonPath: String) throws -> P256.PrivateKey {
        let data: [UInt8]
        do {
            data = try SystemFile.read(path, limit: 64 * 1024)
        } catch {
            throw ProximaError(.invalidManifest, "\(jsonPath): cannot read \(path): \(error.reason)")
        }
        do {
            return try P256.PrivateKey(pemRepresentation: String(decoding: data, as: UTF8.self))
        } catch let error as CryptoError {
            throw ProximaError(
                .invalidManifest,
                "\(jsonPath): \(path) is not a P-256 private key in PEM (PKCS#8 or SEC 1): \(error.reason)"
            )
        }
    }
}
