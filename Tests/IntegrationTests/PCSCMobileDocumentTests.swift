import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import ProximaProcessorSandbox
import ProximaTestSupport
import Testing

/// ID verification through the whole stack, with a holder that shares no code with Proxima: the Python holder of
/// `Holders/mdl_holder.py` (cbor2 + cryptography) issues its own mdoc with the TEST document signer and presents it
/// over vpcd; Proxima reads it through `MobileDocumentReaderSession` → `MobileDocumentService` → kernel → PC/SC
/// transport → libpcsclite → pcscd → vpcd, and verifies it against the TEST IACA. Each tamper switch is refused
/// with the check it breaks.
@Suite(
    "mDL from a Python holder through real pcscd with vpcd",
    .enabled(if: LivePCSCD.isAvailable && Python.isAvailable),
    .serialized,
    .timeLimit(.minutes(2))
)
struct PCSCMobileDocumentTests {
    static let holderScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Holders/mdl_holder.py").path
    static let reader = LivePCSCD.c1
    static let keys = PackageFiles.configDirectory + "/keys"

    static func manifest() throws -> Manifest {
        let text = """
            {
              "schemaVersion": 1,
              "plugins": [ { "id": "pcsc", "type": "pcsc", "config": { "readerNames": ["\(reader.name)"] } } ],
              "lanes": [ { "id": "id-desk", "readerNames": ["\(reader.name)"], "queue": { "maxWaitMs": 30000 } } ],
              "capabilities": {
                "payment": { "processorPublicKey": "keys/psp-test-public.pem", "tokenIssuer": "https://psp.example.test",
                             "readerIdentifier": "proxima-id-test-001" },
                "mobileDocument": { "trustAnchors": ["keys/mdl-iaca-test.pem"],
                  "readerAuthentication": { "privateKey": "keys/mdl-reader-test-private.pem",
                                            "certificateChain": ["keys/mdl-reader-test.pem"] } }
              }
            }
            """
        return try Manifest.parse(
            Array(text.utf8),
            baseDirectory: PackageFiles.configDirectory,
            registry: BuiltinPlugins.registry
        )
    }

    /// Runs the Python holder with `tamper` on the vpcd reader, reads with `request`, and returns the result and the
    /// DeviceRequests the holder printed.
    static func read<Request: MobileDocumentRequest>(
        _ request: Request,
        tamper: String
    ) async throws -> (Result<Request.Response, MobileDocumentReaderError>, [String]) {
        let python = try #require(Python.executable)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [holderScript, String(reader.port), keys, tamper]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let manifest = try manifest()
        let token = try PaymentProcessorSandbox(manifest: manifest, privateKeyFile: keys + "/psp-test-private.pem")
            .issueToken(merchantID: "id-test").rawValue
        let result = try await withKernel(manifest, readers: 1) { kernel in
            let docReader = MobileDocumentReader(kernel: kernel, lane: "id-desk")
            let session = try await MobileDocumentReaderSession(
                reader: docReader,
                readerToken: MobileDocumentReader.Token(token),
                readTimeout: .seconds(20)
            )
            try await session.prepare()
            do {
                return Result<Request.Response, MobileDocumentReaderError>.success(
                    try await session.requestDocument(request)
                )
            } catch let error as MobileDocumentReaderError {
                return .failure(error)
            }
        }
        // SIGKILL: a test runner's ignored SIGTERM is inherited by its children.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let problems = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(!problems.contains("Traceback"), "the Python holder failed: \(problems)")
        // pcscd polls vpcd readers every 400 ms: let it see the card gone before the next case inserts one.
        try? await Task.sleep(for: .milliseconds(600))
        let requests = printed.split(separator: "\n").filter { $0.hasPrefix("request ") }
            .map { String($0.dropFirst("request ".count)) }
        return (result, requests)
    }

    @Test("a Python-issued mDL verifies, with the intents to retain and readerAuth sent", .livePCSCD(.exclusive))
    func aPythonHolderVerifies() async throws {
        let (result, requests) = try await Self.read(
            MobileDriversLicenseDataRequest(
                retainedElements: [.familyName, .givenName],
                nonRetainedElements: [.ageAtLeast(21), .dateOfBirth, .portrait]
            ),
            tamper: "none"
        )
        let elements = try result.get().documentElements
        #expect(elements.nameComponents?.familyName == "Mustermann")
        #expect(elements.nameComponents?.givenName == "Erika")
        #expect(elements.ageAtLeastElements == [21: true])
        #expect(elements.dateOfBirth == DateComponents(year: 1990, month: 1, day: 1))
        #expect(
            elements.portraitData
                == Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0xFF, 0xD9])
        )
        #expect(elements.documentNumber == nil)  // the holder has it; it was not asked
        // What the holder received: exactly the elements asked, each with its intent to retain, with readerAuth.
        #expect(
            requests == [
                #"{"docType": "org.iso.18013.5.1.mDL", "elements": {"org.iso.18013.5.1": {"age_over_21": false, "#
                    + #""birth_date": false, "family_name": true, "given_name": true, "portrait": false}}, "#
                    + #""readerAuth": true}"#
            ]
        )
    }

    @Test(
        "each tamper switch of the Python holder is refused with its check",
        .livePCSCD(.exclusive),
        arguments: [
            ("tamperedElement", "invalidResponse", "digestMismatch"),
            ("expiredMSO", "invalidResponse", "msoExpired"),
            ("unknownIACA", "invalidResponse", "issuerUntrusted"),
            ("wrongDocType", "invalidResponse", "docTypeMismatch"),
            ("badDeviceMAC", "invalidResponse", "deviceMacInvalid"),
            ("badDeviceSignature", "invalidResponse", "deviceSignatureInvalid"),
            ("muteAfterEngagement", "serviceUnavailable", ""),
        ]
    )
    func eachTamperIsRefused(tamper: String, code: String, check: String) async throws {
        let (result, _) = try await Self.read(
            MobileDriversLicenseDataRequest(nonRetainedElements: [.familyName, .ageAtLeast(21)]),
            tamper: tamper
        )
        guard case .failure(let error) = result else {
            Issue.record("\(tamper): the read verified")
            return
        }
        #expect(error.code.rawValue == code, "\(tamper): \(error)")
        #expect((error.failedCheck ?? "") == check, "\(tamper): \(error)")
        #expect(!error.reason.contains("Mustermann") && !error.reason.contains("Erika"))
    }
}
