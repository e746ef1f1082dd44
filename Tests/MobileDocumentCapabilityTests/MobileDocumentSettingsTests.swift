import Foundation
import ProximaCore
import ProximaTestSupport
import Testing

@testable import MobileDocumentCapability

/// `capabilities.mobileDocument`: strict keys, files loaded once at load time, and every problem named by its JSON
/// path and file.
struct MobileDocumentSettingsTests {
    static let base = PackageFiles.configDirectory

    func settings(_ json: String) throws -> MobileDocumentSettings {
        try MobileDocumentSettings(
            json: try JSONValue.parse(Array(json.utf8)),
            path: "capabilities.mobileDocument",
            baseDirectory: Self.base
        )
    }

    func failure(_ json: String) -> ProximaError? {
        do {
            _ = try settings(json)
            return nil
        } catch {
            return error as? ProximaError
        }
    }

    @Test func theIssuesBlockLoadsWithItsKeys() throws {
        let loaded = try settings(
            """
            { "trustAnchors": ["keys/mdl-iaca-test.pem"], "clockSkewSeconds": 120,
              "readerAuthentication": { "privateKey": "keys/mdl-reader-test-private.pem",
                                        "certificateChain": ["keys/mdl-reader-test.pem"] } }
            """
        )
        #expect(loaded.trust.anchors.map(\.subject) == ["CN=Proxima TEST IACA,C=UT"])
        #expect(loaded.clockSkewSeconds == 120)
        #expect(loaded.trust.clockSkewSeconds == 120)
        #expect(loaded.readerAuthentication?.certificateChain.count == 1)
        #expect(loaded.trustAnchorFiles == [Self.base + "/keys/mdl-iaca-test.pem"])
        #expect(loaded.readerToken == nil)
        #expect(try settings(#"{ "trustAnchors": ["keys/mdl-iaca-test.pem"] }"#).clockSkewSeconds == 300)
    }

    @Test func aFolderOfAnchorsIsRead() throws {
        let folder = NSTemporaryDirectory() + "proxima-iaca-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for name in ["mdl-iaca-test.pem", "mdl-rogue-iaca-test.pem"] {
            try FileManager.default.copyItem(atPath: Self.base + "/keys/" + name, toPath: folder + "/" + name)
        }
        try Data("not a certificate".utf8).write(to: URL(fileURLWithPath: folder + "/README.txt"))
        let loaded = try settings(#"{ "trustAnchors": ["\#(folder)"] }"#)
        #expect(loaded.trust.anchors.count == 2)
        #expect(
            loaded.trustAnchorFiles.map { ($0 as NSString).lastPathComponent } == [
                "mdl-iaca-test.pem", "mdl-rogue-iaca-test.pem",
            ]
        )
    }

    @Test(arguments: [
        (#"{ }"#, "capabilities.mobileDocument", "trustAnchors"),
        (#"{ "trustAnchors": [] }"#, "capabilities.mobileDocument.trustAnchors", "at least one"),
        (#"{ "trustAnchors": ["keys/nope.pem"] }"#, "capabilities.mobileDocument.trustAnchors[0]", "keys/nope.pem"),
        (
            #"{ "trustAnchors": ["keys/psp-test-public.pem"] }"#, "capabilities.mobileDocument.trustAnchors[0]",
            "psp-test-public.pem",
        ),
        (
            #"{ "trustAnchors": ["keys/mdl-iaca-test.pem"], "colour": 1 }"#, "capabilities.mobileDocument.colour",
            "colour",
        ),
        (
            #"{ "trustAnchors": ["keys/mdl-iaca-test.pem"], "clockSkewSeconds": -1 }"#,
            "capabilities.mobileDocument.clockSkewSeconds", "86400",
        ),
        (
            #"{ "trustAnchors": ["keys/mdl-iaca-test.pem"], "vical": "keys/vical.cbor" }"#,
            "capabilities.mobileDocument.vicalTrustAnchors", "VICAL",
        ),
        (
            #"{ "trustAnchors": ["keys/mdl-iaca-test.pem"], "readerAuthentication": { "privateKey": "keys/none.pem", "certificateChain": ["keys/mdl-reader-test.pem"] } }"#,
            "capabilities.mobileDocument.readerAuthentication.privateKey", "keys/none.pem",
        ),
        (
            #"{ "trustAnchors": ["keys/mdl-iaca-test.pem"], "readerAuthentication": { "privateKey": "keys/mdl-ds-test-private.pem", "certificateChain": ["keys/mdl-reader-test.pem"] } }"#,
            "capabilities.mobileDocument.readerAuthentication.certificateChain[0]", "mdl-ds-test-private.pem",
        ),
        (
            #"{ "trustAnchors": ["keys/mdl-iaca-test.pem"], "readerToken": { "publicKey": "keys/mdl-iaca-test.pem", "issuer": "x", "readerIdentifier": "y" } }"#,
            "capabilities.mobileDocument.readerToken.publicKey", "mdl-iaca-test.pem",
        ),
    ])
    func aBadBlockNamesItsJSONPathAndFile(json: String, path: String, mentions: String) {
        let error = failure(json)
        #expect(error?.code == .invalidManifest, "\(json)")
        #expect(error?.jsonPath == path, "\(String(describing: error))")
        #expect(error?.reason.contains(mentions) == true, "\(String(describing: error))")
    }
}
