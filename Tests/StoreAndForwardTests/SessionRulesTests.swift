import Foundation
import PaymentCapability
import Proxima
import ProximaCore
import ProximaKernel
import ProximaTestSupport
import StoreAndForwardCapability
import Testing

/// Apple's session rules, exact across processes: a session is invalid after a restart (the kernel's boot id is
/// recorded with it and with each processor contact; the source is injected to restart the host), `readCount` is
/// the session's successful reads (not the store's), and the card's Application Effective Date (`5F25`) is
/// recorded and a not-yet-effective card refused.
@Suite struct SessionRulesTests {
    static let order = PaymentOrder(kind: .purchase, amount: 5, currencyCode: "USD")

    /// The payment service of `lane`, linked for the harness merchant.
    static func payment(_ kernel: Kernel, lane: String = "lane-1") async throws -> (PaymentService, PaymentCardReader) {
        let reader = PaymentCardReader(kernel: kernel, lane: LaneID(lane))
        let token = try Harness.token(kernel.manifest)
        if try await !reader.isAccountLinked(using: token) { try await reader.linkAccount(using: token) }
        return (try reader.storeAndForwardService().payment, reader)
    }

    static func read(_ service: StoreAndForwardService, _ session: OfflineSession) async throws -> StoredPaymentRead {
        let slot = PaymentReadSlot()
        return try await service.read(
            order,
            session: session,
            slot: slot,
            owner: ObjectIdentifier(slot),
            options: PaymentReadOptions(),
            onEvent: { _ in }
        )
    }

    @Test func aSessionPreparedBeforeARestartIsRefusedAfterIt() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path)
        try await Harness.withKernel(manifest) { kernel in
            let (payment, _) = try await Self.payment(kernel)
            let before = try StoreAndForwardService(payment: payment, bootIdentifier: { "boot-before-restart" })
            let after = try StoreAndForwardService(payment: payment, bootIdentifier: { "boot-after-restart" })
            let session = try await before.startSession(token: try Harness.token(manifest).rawValue)
            #expect(session.bootID == "boot-before-restart")
            #expect(try await before.store.session(session.id)?.bootID == "boot-before-restart")
            let stored = try await Self.read(before, session)
            #expect(stored.totals.count == 1)

            // After the restart: refused before the tap…
            let early = await thrownError {
                try await after.checkBeforeTap(Self.order, session: session, lane: "lane-1")
            }
            #expect(serviceCode(early) == .sessionInvalidated)
            #expect((early as? StoreAndForwardError)?.reason.contains("restarted") == true)
            // …and by the commit's own check, in the transaction: nothing stored, the count unchanged.
            var record = stored.record
            record.id = UUID().uuidString.lowercased()
            let late = await thrownError {
                try await after.store(record, envelope: [1, 2, 3], session: session.id, bootID: "boot-after-restart")
            }
            #expect(serviceCode(late) == .sessionInvalidated)
            #expect((late as? StoreAndForwardError)?.reason.contains("boot-before-restart") == true)
            #expect(try await after.store.totals().count == 1)
            #expect(try await before.status(of: session).readCount == 1)
        }
    }

    @Test func aProcessorContactRecordedBeforeARestartDoesNotCountAfterIt() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path)
        try await Harness.withKernel(manifest) { kernel in
            let (payment, _) = try await Self.payment(kernel)
            let before = try StoreAndForwardService(payment: payment, bootIdentifier: { "boot-1" })
            let after = try StoreAndForwardService(payment: payment, bootIdentifier: { "boot-2" })
            // A token issued 30 h ago (still valid) is no recent contact by itself; a deletion token's contact
            // recorded an hour ago in boot 1 is.
            let old = try Harness.token(
                manifest,
                issuedAt: Date().addingTimeInterval(-30 * 3600),
                lifetime: .seconds(48 * 3600)
            )
            let merchant = try payment.linkedMerchant(old.rawValue)
            try await before.store.recordProcessorContact(Date().addingTimeInterval(-3600), bootID: "boot-1")
            let session = try await before.startSession(merchant: merchant)
            #expect(session.bootID == "boot-1")

            let refused = await thrownError { try await after.startSession(merchant: merchant) }
            #expect(serviceCode(refused) == .notAllowed)
            #expect((refused as? StoreAndForwardError)?.limit == "capabilities.storeAndForward.onlineWithinHours")
            #expect((refused as? StoreAndForwardError)?.reason.contains("restarted") == true)
            // A fresh online contact after the restart lets a session start again.
            let fresh = try await after.startSession(token: try Harness.token(manifest).rawValue)
            #expect(fresh.bootID == "boot-2")
        }
    }

    @Test func aSessionRecordedUnderAnotherBootIsRefusedThroughTheAPI() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path)
        try await Harness.withKernel(manifest) { kernel in
            let (reader, session) = try await Harness.offlineSession(kernel)
            try await session.readPaymentCard(Harness.purchase("1.00"))
            // The store as a restarted host would find it: the session recorded in an earlier boot.
            let service = try reader.storeAndForwardService()
            try await service.store.executeForTesting("UPDATE sessions SET boot_id = 'an-earlier-boot'")
            let error = await thrownError { try await session.readPaymentCard(Harness.purchase("2.00")) }
            #expect((error as? PaymentCardReaderError)?.code == .storeAndForwardSessionInvalidated)
            #expect(try await reader.fetchPaymentCardReaderStore().fetchStoredPaymentCardReadResultCount() == 1)
        }
    }

    @Test func readCountIsTheSessionsSuccessfulReadsNotTheStores() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path, lanes: 2)
        try await Harness.withKernel(manifest) { kernel in
            let (reader, first) = try await Harness.offlineSession(kernel, lane: "lane-1")
            let (_, second) = try await Harness.offlineSession(kernel, lane: "lane-2")
            for amount in ["1.00", "2.00", "3.00"] { try await first.readPaymentCard(Harness.purchase(amount)) }
            for amount in ["4.00", "5.00"] { try await second.readPaymentCard(Harness.purchase(amount)) }
            // A refused read is no successful read.
            _ = await thrownError { try await first.readPaymentCard(Harness.purchase("500.00")) }
            #expect(try await first.status().readCount == 3)
            #expect(try await second.status().readCount == 2)
            let store = try reader.fetchPaymentCardReaderStore()
            #expect(try await store.fetchStoredPaymentCardReadResultCount() == 5)

            // A declined read is not counted; reads forwarded and resolved still are.
            try await first.decline()
            #expect(try await first.status().readCount == 2)
            #expect(try await second.status().readCount == 2)
            let batch = try await store.fetchStoredPaymentCardReadResultBatch(size: 0)
            let token = try Harness.sandbox(manifest).issueDeletionToken(for: Array(batch.data))
            #expect(try await store.resolveBatch(batchDeletionToken: token) == 0)
            #expect(try await first.status().readCount == 2)
            #expect(try await second.status().readCount == 2)
            // A new session starts at zero.
            let third = try await reader.prepareStoreAndForward()
            #expect(try await third.status().readCount == 0)
        }
    }

    @Test func aCardWithAnEffectiveDateIsRecordedEffective() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path, cards: ["pay-visa-qvsdc-effective.json"])
        try await Harness.withKernel(manifest) { kernel in
            let (payment, _) = try await Self.payment(kernel)
            let service = try StoreAndForwardService(payment: payment)
            let session = try await service.startSession(token: try Harness.token(manifest).rawValue)
            let stored = try await Self.read(service, session)
            // The payment read carries 5F25 to the store, masked in print.
            let card = try #require(stored.read.card)
            #expect(card.effectiveDate == CardEffectiveDate(year: 2024, month: 1, day: 1))
            #expect(!"\(card)".contains("2024"))
            var dumped = ""
            dump(card, to: &dumped)
            #expect(!dumped.contains("2024"))
            #expect(stored.record.effectiveState == .effective)
            #expect(try await service.store.rows().map(\.record.effectiveState) == [.effective])
        }
    }

    @Test func aCardWithoutAnEffectiveDateIsRecordedUnknown() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path, cards: ["pay-visa-qvsdc.json"])
        try await Harness.withKernel(manifest) { kernel in
            let (reader, session) = try await Harness.offlineSession(kernel)
            try await session.readPaymentCard(Harness.purchase("1.00"))
            let rows = try await reader.storeAndForwardService().store.rows()
            #expect(rows.map(\.record.effectiveState) == [.unknown])
        }
    }

    @Test func aCardNotYetEffectiveIsRefusedOffline() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path, cards: ["pay-visa-qvsdc-not-yet-effective.json"])
        try await Harness.withKernel(manifest) { kernel in
            let (reader, session) = try await Harness.offlineSession(kernel)
            let error = await thrownError { try await session.readPaymentCard(Harness.purchase("1.00")) }
            let readError = try #require(error as? PaymentCardReaderSession.ReadError)
            #expect(readError.code == .storeAndForwardLimitExceeded)
            #expect(readError.reason.contains("not yet effective"))
            #expect(readError.reason.contains("card effective date"))
            // The card's date is card data: not in the reason.
            #expect(!readError.reason.contains("2048") && !readError.reason.contains("481201"))
            #expect(try await reader.fetchPaymentCardReaderStore().fetchStoredPaymentCardReadResultCount() == 0)
            #expect(try await session.status().readCount == 0)
        }
    }
}
