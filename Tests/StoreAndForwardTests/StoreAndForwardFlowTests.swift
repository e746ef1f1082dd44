import Foundation
import PaymentCapability
import Proxima
import ProximaCore
import ProximaCrypto
import ProximaKernel
import ProximaProcessorSandbox
import ProximaSystem
import ProximaTestSupport
import StoreAndForwardCapability
import Testing

/// The whole flow through the Apple-shaped API on simulated readers and the real SQLite store: offline reads
/// stored, a batch fetched, opened by the processor sandbox, resolved with its deletion token.
@Suite struct StoreAndForwardFlowTests {
    @Test func readsAreStoredBatchedOpenedAndResolved() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path)
        try await Harness.withKernel(manifest) { kernel in
            let (reader, session) = try await Harness.offlineSession(kernel)
            var ids: [String] = []
            for amount in ["10.00", "20.50", "0.99"] {
                let result = try await session.readPaymentCard(Harness.purchase(amount))
                #expect(result.outcome == .success)
                ids.append(result.id)
            }
            let status = try await session.status()
            #expect(status.readCount == 3)
            #expect(status.expiration > Date().addingTimeInterval(23 * 3600))

            let store = try reader.fetchPaymentCardReaderStore()
            #expect(try await store.fetchStoredPaymentCardReadResultCount() == 3)
            let batch = try await store.fetchStoredPaymentCardReadResultBatch()
            #expect(batch.count == 3)
            #expect(batch.payments.map(\.id) == ids)
            #expect(batch.intermediateCertificate.isEmpty)
            // One active batch at a time.
            let again = await thrownError { try await store.fetchStoredPaymentCardReadResultBatch(size: 0) }
            #expect(storeCode(again) == .storeAndForwardBatchAlreadyExists)

            // The processor's side: every signature verifies and every envelope opens, matching its record.
            let sandbox = try Harness.sandbox(manifest)
            let opened = try sandbox.openBatch(Array(batch.data))
            #expect(opened.id == batch.id)
            #expect(opened.reads.map(\.transactionID) == ids)
            #expect(opened.reads.map(\.amount) == ["10.00", "20.50", "0.99"])
            #expect(
                opened.reads.allSatisfy {
                    $0.merchantID == Harness.merchant && $0.expiresAt > Date().addingTimeInterval(100 * 3600)
                }
            )

            let token = try sandbox.issueDeletionToken(for: Array(batch.data))
            #expect(try await store.resolveBatch(batchDeletionToken: token) == 0)
            #expect(try await store.fetchStoredPaymentCardReadResultCount() == 0)
            // The same token again: a replay, refused.
            let replay = await thrownError { try await store.resolveBatch(batchDeletionToken: token) }
            #expect(storeCode(replay) == .storeAndForwardDeletionTokenInvalid)

            let files = directory.path
            #expect(try FileStatus.of(files + "/store-and-forward.db").mode & 0o777 == 0o600)
            #expect(try FileStatus.of(files + "/store-key.pem").mode & 0o777 == 0o600)
            let service = try reader.storeAndForwardService()
            #expect(try await service.store.integrityCheck() == ["ok"])
            #expect(try await service.store.schemaVersion() == 2)
        }
    }

    @Test func noCardDataInClearIsStored() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path)
        try await Harness.withKernel(manifest) { kernel in
            let (_, session) = try await Harness.offlineSession(kernel)
            try await session.readPaymentCard(Harness.purchase("12.34"))
        }
        // The test card's PAN (Config/cards/pay-visa-qvsdc.json), as ASCII digits and as BCD, never in any file.
        let profile = try JSONValue.parse(try PackageFiles.contents(of: "Config/cards/pay-visa-qvsdc.json"))
        guard case .array(let applications)? = profile["applications"],
            case .string(let pan)? = applications.first?["pan"]
        else {
            Issue.record("no PAN in the profile")
            return
        }
        let bcd = [UInt8](hex: pan.count.isMultiple(of: 2) ? pan : pan + "F") ?? []
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            let bytes = Array(FileManager.default.contents(atPath: directory.path + "/" + name) ?? Data())
            #expect(!bytes.containsSubsequence(Array(pan.utf8)), "\(name) holds the PAN in ASCII")
            #expect(!bytes.containsSubsequence(bcd), "\(name) holds the PAN in BCD")
        }
    }

    @Test func declineRemovesTheLastReadOnlyBeforeItIsBatched() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path)
        try await Harness.withKernel(manifest) { kernel in
            let (reader, session) = try await Harness.offlineSession(kernel)
            let notYet = await thrownError { try await session.decline() }
            #expect((notYet as? PaymentCardReaderSession.ReadError)?.code == .storeAndForwardResultNotFound)
            try await session.readPaymentCard(Harness.purchase("1.00"))
            try await session.readPaymentCard(Harness.purchase("2.00"))
            try await session.decline()
            #expect(try await session.status().readCount == 1)
            let store = try reader.fetchPaymentCardReaderStore()
            #expect(try await store.fetchStoredPaymentCardReadResultCount() == 1)
            _ = try await store.fetchStoredPaymentCardReadResultBatch()
            let batched = await thrownError { try await session.decline() }
            #expect((batched as? PaymentCardReaderSession.ReadError)?.code == .storeAndForwardDeclineFailed)
            // Reset keeps the read and detaches it: a new batch holds it again.
            try await store.resetBatchState()
            #expect(try await store.fetchStoredPaymentCardReadResultCount() == 1)
            #expect(try await store.fetchStoredPaymentCardReadResultBatch().count == 1)
        }
    }

    @Test func batchSizesAreCheckedAndBatchesAreChronological() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path)
        try await Harness.withKernel(manifest) { kernel in
            let (reader, session) = try await Harness.offlineSession(kernel)
            let store = try reader.fetchPaymentCardReaderStore()
            let empty = await thrownError { try await store.fetchStoredPaymentCardReadResultBatch() }
            #expect(storeCode(empty) == .storeAndForwardResultsNotFound)
            var ids: [String] = []
            for index in 1...5 { ids.append(try await session.readPaymentCard(Harness.purchase("\(index).00")).id) }
            #expect(
                storeCode(await thrownError { try await store.fetchStoredPaymentCardReadResultBatch(size: -1) })
                    == .storeAndForwardBatchSizeInvalid
            )
            #expect(
                storeCode(await thrownError { try await store.fetchStoredPaymentCardReadResultBatch(size: 6) })
                    == .storeAndForwardBatchSizeInvalid
            )
            let sandbox = try Harness.sandbox(manifest)
            let first = try await store.fetchStoredPaymentCardReadResultBatch(size: 2)
            #expect(first.payments.map(\.id) == Array(ids[0..<2]))
            #expect(
                try await store.resolveBatch(batchDeletionToken: sandbox.issueDeletionToken(for: Array(first.data)))
                    == 3
            )
            let second = try await store.fetchStoredPaymentCardReadResultBatch(size: 0)
            #expect(second.payments.map(\.id) == Array(ids[2...]))
            #expect(
                try await store.resolveBatch(batchDeletionToken: sandbox.issueDeletionToken(for: Array(second.data)))
                    == 0
            )
        }
    }

    @Test func anOfflineSessionNeedsAPriorOnlineOne() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path)
        try await Harness.withKernel(manifest) { kernel in
            let reader = PaymentCardReader(kernel: kernel, lane: "lane-1")
            let error = await thrownError { try await reader.prepareStoreAndForward() }
            #expect((error as? PaymentCardReaderError)?.code == .storeAndForwardNotAllowed)
            // A token the processor issued 25 h ago (valid for 48 h): the processor was not reached within 24 h.
            let old = try Harness.token(
                manifest,
                issuedAt: Date().addingTimeInterval(-25 * 3600),
                lifetime: .seconds(48 * 3600)
            )
            try await reader.linkAccount(using: old)
            let session = try await StoreAndForwardPaymentCardReaderSession(reader: reader, token: old)
            let stale = await thrownError { try await session.prepare() }
            #expect((stale as? PaymentCardReaderError)?.code == .storeAndForwardNotAllowed)
            #expect((stale as? PaymentCardReaderError)?.reason.contains("onlineWithinHours") == true)
            // 23 h ago: inside the window.
            let recent = try Harness.token(
                manifest,
                issuedAt: Date().addingTimeInterval(-23 * 3600),
                lifetime: .seconds(48 * 3600)
            )
            let accepted = try await StoreAndForwardPaymentCardReaderSession(reader: reader, token: recent)
            try await accepted.prepare()
            #expect(try await accepted.readPaymentCard(Harness.purchase("5.00")).outcome == .success)
        }
    }
}

extension Array where Element == UInt8 {
    func containsSubsequence(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { self[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
