import Foundation
@_spi(Testing) import Proxima
import ProximaKernel
import ProximaProcessorSandbox
import Synchronization
import Testing

@testable import PaymentCapability

/// The usage sketch and the issue's snippet compiled and run as written, on `PaymentCardReader()` with no
/// arguments: the process-wide default kernel, pointed here at a manifest with a simulated reader and a temporary
/// data directory before any default reader exists. The configuration is set in code rather than through
/// `PROXIMA_CONFIG`: the environment is the whole test process's, and other suites start child processes.
///
/// Serialized: both tests share the one default kernel and its simulated reader.
@Suite(.serialized) struct UsageSketchTests {
    /// Writes the manifest and makes it the default kernel's, once per process; returns its folder.
    static let environment: String = {
        let directory = NSTemporaryDirectory() + "proxima-usage-sketch-\(UUID().uuidString.lowercased())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let cards = Package.configDirectory + "/cards"
        let manifest = """
            {
              "schemaVersion": 1,
              "dataDirectory": "\(directory)/var",
              "plugins": [ { "id": "sim", "type": "simulator", "config": { "airTime": false, "readers": [
                { "id": "counter-1", "cards": ["\(cards)/pay-visa-qvsdc.json", "\(cards)/pay-mastercard-mchip.json"],
                  "arrival": { "pattern": "immediate" } },
                { "id": "id-desk-1", "cards": ["\(cards)/mdl-holder.json"], "arrival": { "pattern": "immediate" } }
              ] } } ],
              "lanes": [ { "id": "checkout", "readers": ["counter-1"] }, { "id": "id-desk", "readers": ["id-desk-1"] } ],
              "capabilities": { "payment": {
                "processorPublicKey": "\(Package.publicKeyFile)", "tokenIssuer": "https://psp.example.test",
                "readerIdentifier": "proxima-sketch-001" },
                "mobileDocument": { "trustAnchors": ["\(Package.configDirectory)/keys/mdl-iaca-test.pem"],
                  "readerAuthentication": { "privateKey": "\(Package.configDirectory)/keys/mdl-reader-test-private.pem",
                    "certificateChain": ["\(Package.configDirectory)/keys/mdl-reader-test.pem"] } },
                "storeAndForward": { "maxStoredAmount": { "USD": "500.00" } } }
            }
            """
        let path = directory + "/proxima.json"
        _ = FileManager.default.createFile(atPath: path, contents: Data(manifest.utf8))
        let configured = PaymentCardReader.setDefaultConfiguration(manifestPath: path, lane: "checkout")
        MobileDocumentReader.setDefaultLane("id-desk")
        precondition(configured, "a default PaymentCardReader was created before the usage sketch tests")
        return directory
    }()

    /// The processor sandbox of the default configuration, with the TEST key.
    static func sandbox() throws -> PaymentProcessorSandbox {
        let manifest = try Manifest.load(contentsOf: environment + "/proxima.json", registry: BuiltinPlugins.registry)
        return try PaymentProcessorSandbox(manifest: manifest, privateKeyFile: Package.privateKeyFile)
    }

    @Test func issueSnippetRunsAsWritten() async throws {
        _ = Self.environment
        let pspProvidedJWT = try Self.sandbox().issueToken(merchantID: "sketch-merchant").rawValue

        // The issue's snippet, as written for iOS.
        let reader = PaymentCardReader()
        let token = PaymentCardReader.Token(rawValue: pspProvidedJWT)
        if try await !reader.isAccountLinked(using: token) {
            try await reader.linkAccount(using: token)
        }
        let session = try await PaymentCardReaderSession(reader: reader, token: token)
        try await session.prepare()
        let request = PaymentCardTransactionRequest(amount: Decimal(29.99), currencyCode: "USD", type: .purchase)
        let result: PaymentCardReadResult = try await session.readPaymentCard(request)
        // Send result.paymentCardData to your PSP for processing

        #expect(result.outcome == .success)
        #expect(result.lane == "checkout")
        #expect(result.device == "counter-1")
        #expect(try await reader.readerIdentifier == "proxima-sketch-001")
        let contents = try Self.sandbox().open(try #require(result.paymentCardData))
        #expect(contents.amount == "29.99")
        #expect(contents.merchantID == "sketch-merchant")
        #expect(contents.readerIdentifier == "proxima-sketch-001")
        #expect(FileManager.default.fileExists(atPath: Self.environment + "/var/account-link.json"))
    }

    /// The sketch's store-and-forward flow as written, the PSP exchange filled in where its comment stands: the
    /// processor opens `batch.data` and returns its deletion token, which the app records; the sketch's
    /// `delete(using: batch.deletionToken)` then deletes the batch. Without a recorded processor token the same
    /// call refuses and nothing is lost.
    @Test func storeAndForwardSketchRunsAsWritten() async throws {
        _ = Self.environment
        let pspProvidedJWT = try Self.sandbox().issueToken(merchantID: "sketch-merchant").rawValue
        let reader = PaymentCardReader()
        let token = PaymentCardReader.Token(rawValue: pspProvidedJWT)
        if try await !reader.isAccountLinked(using: token) {
            try await reader.linkAccount(using: token)
        }
        let request = PaymentCardTransactionRequest(amount: Decimal(29.99), currencyCode: "USD", type: .purchase)

        // The sketch, as written.
        let sfSession = try await StoreAndForwardPaymentCardReaderSession(
            reader: reader,
            token: token
        )
        try await sfSession.prepare()

        // Transactions are stored locally
        let result = try await sfSession.readPaymentCard(request)

        // Later, when online: retrieve and send batches
        let store = PaymentCardReaderStore()
        let batches: [StoreAndForwardBatch] = try await store.allBatches()

        // Without the processor's token, the sketch's delete refuses and keeps every read.
        for batch in batches {
            await #expect(throws: PaymentCardReaderStore.StoreError.self) {
                try await store.delete(using: batch.deletionToken)
            }
        }
        #expect(try await store.fetchStoredPaymentCardReadResultCount() >= 1)

        for batch in batches {
            // Send batch.data to PSP
            let opened = try Self.sandbox().openBatch(Array(batch.data))
            #expect(opened.reads.contains { $0.transactionID == result.id && $0.amount == "29.99" })
            try await store.record(try Self.sandbox().issueDeletionToken(for: Array(batch.data)))
            // On success, delete the batch
            try await store.delete(using: batch.deletionToken)
        }

        #expect(batches.count == 1)
        #expect(batches.first?.payments.contains { $0.id == result.id } == true)
        #expect(try await store.fetchStoredPaymentCardReadResultCount() == 0)
        #expect(try await store.allBatches().isEmpty)
    }

    /// The sketch's error handling, with a statement in each case: its cases exist and its patterns compile.
    @Test func sketchErrorHandlingCompilesAndCatches() async throws {
        _ = Self.environment
        let reader = PaymentCardReader()
        let token = try Self.sandbox().issueToken(merchantID: "sketch-merchant")
        if try await !reader.isAccountLinked(using: token) {
            try await reader.linkAccount(using: token)
        }
        let session = try await PaymentCardReaderSession(reader: reader, token: token)

        func handled(_ request: PaymentCardTransactionRequest) async -> String {
            do {
                try await session.readPaymentCard(request)
                return "read"
            } catch let error as PaymentCardReaderError {
                switch error {
                case .notAllowed:
                    return "notAllowed"
                case .unsupported:
                    return "unsupported"
                case .networkError:
                    return "networkError"
                case .invalidReaderToken:
                    return "invalidReaderToken"
                case .readerBusy:
                    return "readerBusy"
                case .backgrounded:
                    return "backgrounded"
                default:
                    return "other reader error"
                }
            } catch let error as PaymentCardReaderSession.ReadError {
                switch error {
                case .cancelled:
                    return "cancelled"
                case .invalidAmount:
                    return "invalidAmount"
                case .notReady:
                    return "notReady"
                default:
                    return "other read error"
                }
            } catch {
                return "\(error)"
            }
        }
        let request = PaymentCardTransactionRequest(amount: Decimal(29.99), currencyCode: "USD", type: .purchase)
        #expect(await handled(request) == "notReady")
        try await session.prepare()
        #expect(
            await handled(PaymentCardTransactionRequest(amount: -1, currencyCode: "USD", type: .purchase))
                == "invalidAmount"
        )
        #expect(await handled(request) == "read")

        // `catch PaymentCardReaderError.notAllowed` and friends, as enum case patterns.
        do {
            _ = try await PaymentCardReaderSession(reader: reader, token: .init(rawValue: "x.y.z"))
            Issue.record("a malformed token was accepted")
        } catch PaymentCardReaderError.notAllowed {
            Issue.record("expected invalidReaderToken, got notAllowed")
        } catch PaymentCardReaderError.invalidReaderToken {
            // expected
        }
    }

    /// The sketch's merchant education, as written: `ProximityReaderDiscovery()` on the default reader, then
    /// `present()`, which shows how to tap on the default lane's display (a lane output event of its kernel).
    @Test func merchantEducationSnippetRunsAsWritten() async throws {
        _ = Self.environment
        let kernel = try #require(PaymentCardReader().kernel)
        let display = kernel.events.subscribe()

        // iOS 18+: Show Apple-provided merchant education
        let discovery = ProximityReaderDiscovery()
        try await discovery.present()

        var shown: KernelEvent?
        for await event in display {
            if case .laneOutput = event.kind {
                shown = event
                break
            }
        }
        let event = try #require(shown)
        #expect(event.lane == "checkout")
        guard case .laneOutput(let text) = event.kind else { return }
        let content = try await discovery.content(for: .payment(.howToTap))
        #expect(content.id == "payment.howToTap")
        #expect(text == content.displayLines.joined(separator: "\n"))
        #expect(!content.steps.isEmpty && !content.picture.isEmpty)
    }

    /// What the ID desk's attendant display showed, in order.
    static let attendantDisplay = Mutex<[AttendantDisplayContent]>([])

    /// The host's attendant screen, attached through the public API.
    struct RecordingDisplay: AttendantDisplay {
        func show(_ content: AttendantDisplayContent) {
            UsageSketchTests.attendantDisplay.withLock { $0.append(content) }
        }
    }

    /// The sketch's mDL part as written, on `MobileDocumentReader()` (the default kernel's `id-desk` lane, a
    /// simulated reader with the TEST mDL holder). The display request's elements reach the lane's attendant
    /// display and not the app; the data request's come back verified.
    @Test func mobileDocumentSketchRunsAsWritten() async throws {
        _ = Self.environment
        func fetchReaderToken() async throws -> MobileDocumentReader.Token {
            MobileDocumentReader.Token(try Self.sandbox().issueToken(merchantID: "sketch-merchant").rawValue)
        }
        let kernel = try #require(MobileDocumentReader().kernel)
        try kernel.attachAttendantDisplay(RecordingDisplay(), toLane: "id-desk")
        defer { kernel.detachAttendantDisplay(fromLane: "id-desk") }
        #expect(kernel.hasAttendantDisplay(lane: "id-desk"))
        #expect(throws: MobileDocumentReaderError.self) {
            try kernel.attachAttendantDisplay(RecordingDisplay(), toLane: "no-such-lane")
        }

        // The sketch, as written for iOS.
        let docReader = MobileDocumentReader()
        let readerToken = try await fetchReaderToken()  // From your server

        let session = try await MobileDocumentReaderSession(
            reader: docReader,
            readerToken: readerToken
        )
        try await session.prepare()

        // Request a driver's license display
        let displayRequest = MobileDriversLicenseDisplayRequest(
            retainedElements: [.givenName, .familyName, .portrait, .dateOfBirth, .ageOver21]
        )
        try await session.readDocument(displayRequest)

        // Or request validated data
        let dataRequest = MobileDriversLicenseDataRequest(
            retainedElements: [.givenName, .familyName, .dateOfBirth]
        )
        let documentResult = try await session.readDocument(dataRequest)

        #expect(try await docReader.configuration.readerInstanceIdentifier == "proxima-sketch-001")
        let shown = Self.attendantDisplay.withLock { $0 }
        #expect(shown.count == 1)
        let lines = Dictionary(uniqueKeysWithValues: (shown.first?.items ?? []).map { ($0.label, $0.text ?? "") })
        #expect(lines["docType"] == "org.iso.18013.5.1.mDL")
        #expect(lines["issuer"] == "CN=Proxima TEST IACA,C=UT")
        #expect(lines["given_name"] == "Erika")
        #expect(lines["age_over_21"] == "true")
        #expect(lines["birth_date"] == "1990-01-01")
        #expect(lines["portrait"] == "<4 bytes jpeg>")
        #expect(shown.first?.items.first { $0.label == "portrait" }?.image == [0xFF, 0xD8, 0xFF, 0xD9])
        let elements = documentResult.documentElements
        #expect(elements.nameComponents?.givenName == "Erika")
        #expect(elements.nameComponents?.familyName == "Mustermann")
        #expect(elements.dateOfBirth == DateComponents(year: 1990, month: 1, day: 1))
        #expect(elements.portraitData == nil)  // not asked
        #expect(elements.ageAtLeastElements.isEmpty)

        // The sketch's error handling, and the other request shapes on the same session.
        func handled(_ body: () async throws -> Void) async -> String {
            do {
                try await body()
                return "read"
            } catch let error as MobileDocumentReaderError {
                // Handle session preparation and document request errors
                return "\(error.code)"
            } catch {
                return "\(error)"
            }
        }
        #expect(await handled { try await session.readDocument(MobileDriversLicenseDataRequest()) } == "invalidRequest")
        let raw = try await session.requestDocument(
            MobileDriversLicenseRawDataRequest(retainedElements: [.ageAtLeast(21)], nonRetainedElements: [.portrait])
        )
        #expect(raw.responseData.first == 0xA3)  // {version, documents, status}
        #expect(raw.sessionTranscript.first == 0x83)  // [DeviceEngagementBytes, EReaderKeyBytes, Handover]
        var anyOf = MobileDocumentAnyOfDataRequest()
        anyOf.addRequest(MobileDriversLicenseDataRequest(nonRetainedElements: [.ageAtLeast(21), .portrait]))
        let any = try await session.requestDocument(anyOf)
        let licence = try #require(any.documentResponse as? MobileDriversLicenseDataRequest.Response)
        #expect(licence.documentElements.ageAtLeastElements == [21: true])
        #expect(licence.documentElements.portraitData == Data([0xFF, 0xD8, 0xFF, 0xD9]))
        #expect(
            await handled {
                _ = try await MobileDocumentReaderSession(reader: docReader, readerToken: .init("x.y.z"))
            } == "invalidToken"
        )

        // The app's side of a display request is the outcome and nothing else; the elements went to the display.
        let outcome = try await session.readDocument(displayRequest)
        #expect(outcome.validationOutcome == .valid)
        #expect(Mirror(reflecting: outcome).children.map(\.label) == ["validationOutcome"])
        #expect(Self.attendantDisplay.withLock { $0.count } == 2)
        #expect(Self.attendantDisplay.withLock { $0.last?.description.contains("Erika") } == false)
        kernel.detachAttendantDisplay(fromLane: "id-desk")
        #expect(await handled { try await session.readDocument(displayRequest) } == "serviceUnavailable")
        #expect(Self.attendantDisplay.withLock { $0.count } == 2)
    }
}
