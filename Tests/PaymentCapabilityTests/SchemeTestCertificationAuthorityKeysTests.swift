import EMVCommon
import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// `Config/keys/ca-public-keys-scheme-test.json`, the schemes' published TEST CA public keys (sources per key in the
/// file), loaded through the terminal's own loader: every checksum (EMV Book 2 §11.2.2) is checked on the way in.
@Suite struct SchemeTestCertificationAuthorityKeysTests {
    static let schemeFile = PackageFiles.configDirectory + "/keys/ca-public-keys-scheme-test.json"
    static let virtualCardFile = PackageFiles.configDirectory + "/keys/ca-public-keys-test.json"

    @Test func everyPublishedTestKeyLoadsWithItsChecksum() throws {
        let keys = try CertificationAuthorityKeys(contentsOf: Self.schemeFile)
        var perRID: [String: Int] = [:]
        for key in keys.keys { perRID[key.rid.hexString, default: 0] += 1 }
        #expect(
            perRID == [
                "A000000003": 4,  // Visa 92 94 95 99
                "A000000004": 10,  // Mastercard EF F1 F3 F4 F5 F6 F7 F8 FA FE
                "A000000025": 5,  // American Express 04 65 C8 C9 CA
                "A000000065": 3,  // JCB 0F 11 13
                "A000000333": 4,  // UnionPay 08 09 0A 0B
            ]
        )
        #expect(keys.keys.count == 26)
        #expect(keys.keys.allSatisfy { $0.expiry == CivilTime(year: 2049, month: 12, day: 31) })
    }

    /// (RID, index, modulus bytes, exponent) of keys whose values are published in several sources.
    static let known: [(rid: String, index: UInt8, modulusBytes: Int, exponent: [UInt8])] = [
        ("A000000003", 0x92, 176, [0x03]),
        ("A000000003", 0x94, 248, [0x03]),
        ("A000000003", 0x99, 128, [0x03]),
        ("A000000004", 0xEF, 248, [0x03]),
        ("A000000004", 0xF5, 248, [0x01, 0x00, 0x01]),
        ("A000000004", 0xF6, 224, [0x03]),
        ("A000000004", 0xFE, 128, [0x03]),
        ("A000000025", 0x04, 96, [0x03]),
        ("A000000025", 0xC9, 176, [0x03]),
        ("A000000065", 0x13, 248, [0x03]),
        ("A000000333", 0x0A, 128, [0x03]),
        ("A000000333", 0x0B, 248, [0x03]),
    ]

    @Test func knownKeysHaveTheirPublishedSizes() throws {
        let keys = try CertificationAuthorityKeys(contentsOf: Self.schemeFile)
        for known in Self.known {
            let key = try #require(keys.key(rid: bytes(known.rid), index: known.index), "\(known.rid)/\(known.index)")
            #expect(key.key.modulus.count == known.modulusBytes, "\(key)")
            #expect(key.key.byteCount == known.modulusBytes, "\(key)")
            #expect(key.key.exponent == known.exponent, "\(key)")
        }
        // Visa 92's published checksum, recomputed by the loader from RID ‖ index ‖ modulus ‖ exponent.
        let visa92 = try #require(keys.key(rid: bytes("A000000003"), index: 0x92))
        #expect(
            try SHA1.hash(bytes("A000000003") + [0x92] + visa92.key.modulus + [0x03])
                == bytes("429C954A3859CEF91295F663C963E582ED6EB253")
        )
    }

    @Test func aDamagedSchemeKeyIsRefused() throws {
        let keys = try CertificationAuthorityKeys(contentsOf: Self.schemeFile)
        // Visa 92 with one modulus bit flipped, under its published checksum.
        var modulus = try #require(keys.key(rid: bytes("A000000003"), index: 0x92)).key.modulus
        modulus[modulus.count - 1] ^= 0x01
        let json = try JSONValue.parse(
            Array(
                """
                {"keys": [{"rid": "A000000003", "index": "92", "modulus": "\(modulus.hexString)", "exponent": "03",
                  "expiry": "2049-12-31", "checksum": "429C954A3859CEF91295F663C963E582ED6EB253"}]}
                """.utf8
            )
        )
        do {
            _ = try CertificationAuthorityKeys(json: json)
            Issue.record("accepted a damaged key")
        } catch let error as ProximaError {
            #expect(error.jsonPath == "keys[0].checksum", "\(error.pathAndReason)")
        }
    }

    @Test func mergesWithTheVirtualCardKeysAndRefusesAKeyInTwoFiles() throws {
        let merged = try CertificationAuthorityKeys(merging: [
            (Self.virtualCardFile, "caPublicKeys[0]"), (Self.schemeFile, "caPublicKeys[1]"),
        ])
        #expect(merged.keys.count == 6 + 26)
        #expect(merged.key(rid: bytes("A000000003"), index: 0xE1) != nil)
        #expect(merged.key(rid: bytes("A000000003"), index: 0x92) != nil)
        do {
            _ = try CertificationAuthorityKeys(merging: [
                (Self.schemeFile, "caPublicKeys[0]"), (Self.virtualCardFile, "caPublicKeys[1]"),
                (Self.schemeFile, "caPublicKeys[2]"),
            ])
            Issue.record("accepted a RID and index from two files")
        } catch let error as ProximaError {
            #expect(error.code == .invalidManifest)
            #expect(error.jsonPath == "caPublicKeys[2]", "\(error.pathAndReason)")
            #expect(error.reason.contains("RID A000000003 index 92 is also in"), "\(error.pathAndReason)")
        }
    }
}
