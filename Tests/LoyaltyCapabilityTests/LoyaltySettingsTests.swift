import Foundation
import ProximaCore
import ProximaTestSupport
import Testing

@testable import LoyaltyCapability

/// `capabilities.loyalty`: the issue's block, strictness and key errors naming their JSON path.
@Suite struct LoyaltySettingsTests {
    static let base = PackageFiles.configDirectory

    static func settings(_ text: String) throws -> LoyaltySettings {
        try LoyaltySettings(json: JSONValue.parse(Array(text.utf8)), path: "capabilities.loyalty", baseDirectory: base)
    }

    static func failure(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> ProximaError? {
        do {
            _ = try settings(text)
            Issue.record("the block was accepted", sourceLocation: sourceLocation)
        } catch let error as ProximaError {
            return error
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    @Test func theIssuesBlockLoadsWithItsKeys() throws {
        let settings = try Self.settings(
            """
            { "appleVAS": { "merchants": [ { "passTypeIdentifier": "pass.com.example.loyalty",
                                             "privateKeys": ["keys/vas-test-private.pem"] } ],
                            "maxCryptogramAgeSeconds": 300 },
              "smartTap": { "collectorID": 20180608, "keyVersion": 1, "privateKey": "keys/smarttap-test-private.pem" } }
            """
        )
        #expect(settings.merchants.map(\.passTypeIdentifier) == ["pass.com.example.loyalty"])
        #expect(settings.maxCryptogramAge == .seconds(300))
        #expect(settings.smartTap?.collectorID == 20_180_608)
        #expect(settings.smartTap?.keyVersion == 1)
        let key = try #require(settings.merchants.first?.keys.first)
        #expect(key.keyID == (try LoyaltySettings.VASKey.keyID(of: TestKeys.merchantKey.publicKey)))
        #expect(!"\(key)".contains("BEGIN"))
    }

    @Test func theAgeDefaultsTo300Seconds() throws {
        let settings = try Self.settings(
            #"{ "appleVAS": { "merchants": [ { "passTypeIdentifier": "p.a", "privateKeys": ["keys/vas-test-private.pem"] } ] } }"#
        )
        #expect(settings.maxCryptogramAge == .seconds(300))
        #expect(settings.smartTap == nil)
    }

    @Test func aSmartTapOnlyBlockLoadsItsCollectorKeyOnce() throws {
        let settings = try Self.settings(
            #"{ "smartTap": { "collectorID": 20180608, "keyVersion": 3, "privateKey": "keys/smarttap-test-private.pem" } }"#
        )
        #expect(settings.merchants.isEmpty)
        #expect(settings.smartTap?.collectorName == "20180608")
        #expect(settings.smartTap?.keyVersion == 3)
        #expect(
            settings.smartTap?.signingKey.publicKey
                == (try TestKeys.privateKey("smarttap-test-private.pem").publicKey)
        )
        #expect(!"\(settings.smartTap.map { "\($0)" } ?? "")".contains("BEGIN"))
    }

    @Test func errorsNameTheirPath() {
        let cases: [(String, String)] = [
            (
                #"{ "appleVAS": { "merchants": [ { "passTypeIdentifier": "p.a", "privateKeys": ["keys/missing.pem"] } ] } }"#,
                "capabilities.loyalty.appleVAS.merchants[0].privateKeys[0]"
            ),
            (
                #"{ "appleVAS": { "merchants": [ { "passTypeIdentifier": "p.a", "privateKeys": ["keys/psp-test-public.pem"] } ] } }"#,
                "capabilities.loyalty.appleVAS.merchants[0].privateKeys[0]"
            ),
            (
                #"{ "appleVAS": { "merchants": [ { "passTypeIdentifier": "p.a", "privateKeys": ["keys/vas-test-private.pem"], "extra": 1 } ] } }"#,
                "capabilities.loyalty.appleVAS.merchants[0].extra"
            ),
            (#"{ "appleVAS": { "merchants": [] } }"#, "capabilities.loyalty.appleVAS.merchants"),
            (
                #"{ "appleVAS": { "merchants": [ { "passTypeIdentifier": "p.a", "privateKeys": ["keys/vas-test-private.pem"] } ], "maxCryptogramAgeSeconds": 0 } }"#,
                "capabilities.loyalty.appleVAS.maxCryptogramAgeSeconds"
            ),
            (#"{ "smartTap": {} }"#, "capabilities.loyalty.smartTap: missing required member \"collectorID\""),
            (#"{}"#, "capabilities.loyalty: expected appleVAS, smartTap or both"),
            (
                #"{ "appleVAS": { "merchants": [ { "passTypeIdentifier": "7", "privateKeys": ["keys/vas-test-private.pem"] } ] }, "smartTap": { "collectorID": 7, "keyVersion": 1, "privateKey": "keys/smarttap-test-private.pem" } }"#,
                "capabilities.loyalty.smartTap.collectorID"
            ),
            (
                #"{ "smartTap": { "collectorID": 1, "keyVersion": 1, "privateKey": "keys/psp-test-public.pem" } }"#,
                "capabilities.loyalty.smartTap.privateKey"
            ),
            (
                #"{ "appleVAS": { "merchants": [ { "passTypeIdentifier": "p.a", "privateKeys": ["keys/vas-test-private.pem"] } ] }, "smartTap": { "collectorID": 1, "keyVersion": 1, "privateKey": "keys/nope.pem" } }"#,
                "capabilities.loyalty.smartTap.privateKey"
            ),
            (
                #"{ "appleVAS": { "merchants": [ { "passTypeIdentifier": "p.a", "privateKeys": ["keys/vas-test-private.pem"] }, { "passTypeIdentifier": "p.a", "privateKeys": ["keys/vas-test-private.pem"] } ] } }"#,
                "capabilities.loyalty.appleVAS.merchants[1].passTypeIdentifier"
            ),
        ]
        for (text, path) in cases {
            let error = Self.failure(text)
            #expect(error?.code == .invalidManifest, "\(text)")
            #expect(error?.pathAndReason.contains(path) == true, "\(error?.pathAndReason ?? "") should name \(path)")
        }
    }
}
