import Foundation
import ProximaTestSupport
import Testing

/// `proxima vas` against the virtual iPhones of `Config/cards`, on a manifest in a temporary folder whose `keys`
/// link to `Config/keys` (the sandbox token comes from the TEST processor key there).
@Suite struct VASCommandTests {
    static func manifest(card: String, smartTap: Bool = false) throws -> String {
        let directory = NSTemporaryDirectory() + "proxima-vas-cli-\(UUID().uuidString.lowercased())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = PackageFiles.configDirectory
        try FileManager.default.createSymbolicLink(atPath: directory + "/keys", withDestinationPath: config + "/keys")
        let text = """
            { "schemaVersion": 1, "dataDirectory": "\(directory)/var",
              "plugins": [ { "id": "sim", "type": "simulator", "config": { "airTime": false, "readers": [
                { "id": "r1", "cards": ["\(config)/cards/\(card)"], "arrival": { "pattern": "immediate" } } ] } } ],
              "lanes": [ { "id": "lane-1", "readers": ["r1"] } ],
              "capabilities": {
                "payment": { "processorPublicKey": "keys/psp-test-public.pem", "tokenIssuer": "https://psp.example.test",
                             "readerIdentifier": "proxima-vas-cli" },
                "loyalty": { "appleVAS": { "merchants": [
                  { "passTypeIdentifier": "pass.com.example.loyalty", "privateKeys": ["keys/vas-test-private.pem"] },
                  { "passTypeIdentifier": "pass.com.example.coffee", "privateKeys": ["keys/vas-test-private.pem"] } ] }\(
                smartTap
                    ? #", "smartTap": { "collectorID": 20180608, "keyVersion": 1, "privateKey": "keys/smarttap-test-private.pem" }"#
                    : "") } } }
            """
        let path = directory + "/proxima.json"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func printsOneLinePerMerchantAndExits0OnAPass() throws {
        let run = try CLITests.run(["vas", "--config", Self.manifest(card: "vas-iphone-two-passes.json")])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            run.stdout == "vas pass.com.example.loyalty success PROXIMA-LOYALTY-0003\n"
                + "vas pass.com.example.coffee success COFFEE-7\n"
        )
    }

    @Test func exits1WhenNoPassWasRead() throws {
        let run = try CLITests.run([
            "vas", "--config", Self.manifest(card: "vas-iphone-locked.json"), "--merchant", "pass.com.example.loyalty",
        ])
        #expect(run.status == 1)
        #expect(run.stdout == "vas pass.com.example.loyalty vasDataNotActivated\n")
    }

    @Test func anUnconfiguredMerchantIsNamed() throws {
        let run = try CLITests.run([
            "vas", "--config", Self.manifest(card: "vas-iphone-loyalty.json"), "--merchant", "pass.com.example.none",
        ])
        #expect(run.status == 1)
        #expect(run.stderr.contains("invalidVASMerchants"))
        #expect(run.stderr.contains("pass.com.example.none"))
    }
}

extension VASCommandTests {
    @Test func printsTheSmartTapEntryOfAnAndroidPhoneUnderTheCollectorID() throws {
        let run = try CLITests.run([
            "vas", "--config", Self.manifest(card: "smarttap-android-loyalty.json", smartTap: true),
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            run.stdout == "vas pass.com.example.loyalty vasDataNotFound\n"
                + "vas pass.com.example.coffee vasDataNotFound\n"
                + "vas 20180608 success PROXIMA-GOOGLE-0001\n"
        )
    }

    @Test func payWithVASReadsThePassAndTheCardInOneTap() throws {
        let run = try CLITests.run([
            "pay", "--config", Self.manifest(card: "vas-iphone-loyalty-visa.json"), "--amount", "5.00", "--currency",
            "USD", "--vas", "pass.com.example.loyalty",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "vas pass.com.example.loyalty success PROXIMA-LOYALTY-0002")
        #expect(lines.contains("outcome: success"))
    }
}
