package import ProximaCore
package import ProximaCrypto
internal import ProximaSystem

/// A certification authority public key a terminal holds for offline data authentication (EMV Book 2 §5.2,
/// §6.2 and §11.2.2): the scheme's RID, the CA Public Key Index the card names in tag `8F`, the key and its expiry.
package struct CertificationAuthorityKey: Hashable, Sendable, CustomStringConvertible {
    /// Registered Application Provider Identifier, the first 5 AID bytes (`A000000003` Visa …).
    package var rid: [UInt8]
    /// Certification Authority Public Key Index (`8F`).
    package var index: UInt8
    package var key: RSA.PublicKey
    /// The last day the key may be used (the terminal's local date; EMV Book 2 §11.2.2 "key expiry date").
    package var expiry: CivilTime

    package init(rid: [UInt8], index: UInt8, key: RSA.PublicKey, expiry: CivilTime) {
        self.rid = rid
        self.index = index
        self.key = key
        self.expiry = expiry
    }

    package var description: String { "CA key \(rid.hexString)/\([index].hexString) (\(key.byteCount * 8) bits)" }
}

/// The CA public keys a terminal trusts, by RID and index, loaded from a JSON file:
///
/// ```json
/// { "keys": [ { "rid": "A000000003", "index": "E1", "modulus": "…hex…", "exponent": "03",
///               "expiry": "2035-12-31", "checksum": "…SHA-1 hex…" } ] }
/// ```
///
/// `checksum` is the Certification Authority Public Key Check Sum of EMV Book 2 §11.2.2 and Annex B3:
/// SHA-1(RID ‖ index ‖ modulus ‖ exponent). A key whose checksum does not match is refused when the file is loaded,
/// never silently used. `Config/keys/ca-public-keys-test.json` holds Proxima's TEST keys for its virtual cards,
/// `Config/keys/ca-public-keys-scheme-test.json` the schemes' published TEST keys for lab test cards.
package struct CertificationAuthorityKeys: Hashable, Sendable {
    package private(set) var keys: [CertificationAuthorityKey]

    /// No keys: every offline data authentication fails with "CA public key unknown".
    package static let none = CertificationAuthorityKeys(keys: [])

    /// The default file the payment settings load until the manifest names one (`caPublicKeys`), relative to the
    /// manifest's folder.
    package static let defaultTestFile = "keys/ca-public-keys-test.json"

    /// The largest key file read.
    package static let maximumFileBytes = 1 << 20

    package init(keys: [CertificationAuthorityKey]) {
        self.keys = keys
    }

    /// The key for `rid` and `index`, if the terminal holds one.
    package func key(rid: [UInt8], index: UInt8) -> CertificationAuthorityKey? {
        keys.first { $0.rid == rid && $0.index == index }
    }

    /// The keys of ``defaultTestFile`` next to the manifest, or ``none`` when that file does not exist. Until the
    /// manifest names its CA key file, this is where the payment settings take them from.
    ///
    /// - Throws: as ``init(contentsOf:jsonPath:)`` when the file exists but cannot be used.
    package static func defaultKeys(baseDirectory: String) throws -> CertificationAuthorityKeys {
        let path =
            baseDirectory.hasSuffix("/") ? baseDirectory + defaultTestFile : baseDirectory + "/" + defaultTestFile
        do {
            _ = try SystemFile.read(path, limit: maximumFileBytes)
        } catch  where error.errno == .noSuchFile {
            return .none
        } catch {}
        return try CertificationAuthorityKeys(contentsOf: path)
    }

    /// Loads the file at `path`.
    ///
    /// - Parameter jsonPath: the manifest path that named the file, for the error (`capabilities.payment.caPublicKeys`).
    /// - Throws: `ProximaError.invalidManifest` naming the file, the key's JSON path and what is wrong: unreadable
    ///   file, malformed JSON, a member missing or unknown, hex of the wrong length, an even or short modulus, an
    ///   exponent other than 3 or 65537, an invalid date, a checksum that does not match, or a RID/index twice.
    package init(contentsOf path: String, jsonPath: String? = nil) throws {
        self = try SettingsFile.load(path, limit: Self.maximumFileBytes, jsonPath: jsonPath) { try Self(json: $0) }
    }

    /// The keys of every file in `files`, in order: how a terminal holds the schemes' test keys next to its own or its
    /// acquirer's file (`capabilities.payment.caPublicKeys` as an array).
    ///
    /// - Parameter files: each file's path and the manifest path that named it (`capabilities.payment.caPublicKeys[1]`).
    /// - Throws: as ``init(contentsOf:jsonPath:)`` for each file, and `ProximaError.invalidManifest` naming both files
    ///   when two of them list the same RID and index: which key a card's index meant would depend on the order.
    package init(merging files: [(path: String, jsonPath: String?)]) throws {
        var merged: [CertificationAuthorityKey] = []
        var origins: [String] = []
        for file in files {
            for key in try CertificationAuthorityKeys(contentsOf: file.path, jsonPath: file.jsonPath).keys {
                if let earlier = merged.firstIndex(where: { $0.rid == key.rid && $0.index == key.index }) {
                    throw ProximaError(
                        .invalidManifest,
                        "\(file.path): RID \(key.rid.hexString) index \([key.index].hexString) is also in "
                            + "\(origins[earlier]); list each CA key in one file only",
                        jsonPath: file.jsonPath
                    )
                }
                merged.append(key)
                origins.append(file.path)
            }
        }
        self.init(keys: merged)
    }

    /// Reads the parsed document (see the type's description).
    package init(json: JSONValue) throws {
        var object = try StrictObject(json, at: "")
        let entries = try object.array("keys") { element, path in try Self.key(element, at: path) }
        try object.finish()
        for (offset, entry) in entries.enumerated()
        where entries[..<offset].contains(where: { $0.rid == entry.rid && $0.index == entry.index }) {
            throw ProximaError(
                .invalidManifest,
                "RID \(entry.rid.hexString) index \([entry.index].hexString) is listed twice",
                jsonPath: "keys[\(offset)]"
            )
        }
        keys = entries
    }

    private static func key(_ json: JSONValue, at path: String) throws -> CertificationAuthorityKey {
        var object = try StrictObject(json, at: path)
        func hex(_ key: String, count: ClosedRange<Int>) throws -> [UInt8] {
            let text = try object.string(key)
            guard let bytes = [UInt8](hex: text), count.contains(bytes.count) else {
                throw object.fail(key, "expected \(count.lowerBound)-\(count.upperBound) bytes of hex")
            }
            return bytes
        }
        let rid = try hex("rid", count: 5...5)
        let index = try hex("index", count: 1...1)[0]
        let modulus = try hex("modulus", count: 64...248)
        let exponent = try hex("exponent", count: 1...3)
        guard exponent == [0x03] || exponent == [0x01, 0x00, 0x01] else {
            throw object.fail("exponent", "EMV Book 2 Annex B allows 03 or 010001")
        }
        let expiryText = try object.string("expiry")
        guard let expiry = Self.date(expiryText) else {
            throw object.fail("expiry", "\"\(expiryText)\" is not a date YYYY-MM-DD")
        }
        let checksum = try hex("checksum", count: 20...20)
        let computed = try SHA1.hash(rid + [index] + modulus + exponent)
        guard computed == checksum else {
            throw object.fail("checksum", "does not match SHA-1(RID, index, modulus, exponent): the key is damaged")
        }
        let key: RSA.PublicKey
        do {
            key = try RSA.PublicKey(modulus: modulus, exponent: exponent)
        } catch let error as ProximaError {
            throw object.fail("modulus", error.reason)
        }
        try object.finish()
        return CertificationAuthorityKey(rid: rid, index: index, key: key, expiry: expiry)
    }

    /// `YYYY-MM-DD` as a civil date at midnight.
    static func date(_ text: String) -> CivilTime? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        return CivilTime(year: year, month: month, day: day)
    }
}
