import Foundation
import Testing

/// `proxima id` on a simulated reader holding the TEST mDL holder of `Config/cards/mdl-holder*.json`.
@Suite(.serialized) struct IDCommandTests {
    static func manifest(card: String) throws -> String {
        let directory = NSTemporaryDirectory() + "proxima-id-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = CLITests.packageRoot.path + "/Config"
        // The sandbox token is signed with the TEST processor key next to the manifest's public one.
        try FileManager.default.createSymbolicLink(atPath: directory + "/keys", withDestinationPath: config + "/keys")
        let text = """
            { "schemaVersion": 1, "dataDirectory": "\(directory)/var",
              "plugins": [ { "id": "sim", "type": "simulator", "config": { "airTime": false, "readers": [
                { "id": "desk-1", "cards": ["\(config)/cards/\(card)"], "arrival": { "pattern": "immediate" } } ] } } ],
              "lanes": [ { "id": "id-desk", "readers": ["desk-1"] } ],
              "capabilities": {
                "payment": { "processorPublicKey": "keys/psp-test-public.pem",
                             "tokenIssuer": "https://psp.example.test", "readerIdentifier": "proxima-id-cli" },
                "mobileDocument": { "trustAnchors": ["keys/mdl-iaca-test.pem"] } } }
            """
        let path = directory + "/proxima.json"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func printsTheVerifiedDocumentAndExits0() throws {
        let run = try CLITests.run(["id", "--config", Self.manifest(card: "mdl-holder.json")])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            run.stdout == """
                docType: org.iso.18013.5.1.mDL
                issuer: CN=Proxima TEST IACA,C=UT
                family_name: Mustermann
                given_name: Erika
                age_over_21: true
                portrait: <4 bytes jpeg>
                verified: issuer, device

                """
        )
        #expect(!run.stderr.contains("Mustermann"))
    }

    @Test func displayGoesThroughTheLaneDisplay() throws {
        let run = try CLITests.run([
            "id", "--config", Self.manifest(card: "mdl-holder.json"), "--elements", "given_name", "--display",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("given_name: Erika\nverified: issuer, device\n"))
    }

    @Test(arguments: [
        ("mdl-holder-expired-mso.json", "msoExpired"), ("mdl-holder-unknown-iaca.json", "issuerUntrusted"),
        ("mdl-holder-bad-device-mac.json", "deviceMacInvalid"),
    ])
    func exits1NamingTheCheck(card: String, check: String) throws {
        let run = try CLITests.run(["id", "--config", Self.manifest(card: card), "--timeout", "10"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("not verified: \(check)"), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
        #expect(!run.stderr.contains("Mustermann") && !run.stderr.contains("Erika"))
    }
}
