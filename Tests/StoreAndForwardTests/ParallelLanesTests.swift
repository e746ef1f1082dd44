import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import ProximaProcessorSandbox
import ProximaTestSupport
import StoreAndForwardCapability
import Testing

/// 16 lanes storing at once into the one store: counts and per-currency totals exact, batches disjoint and
/// chronological, and a stored total limit never crossed together.
@Suite struct ParallelLanesTests {
    @Test func sixteenLanesStoreExactCountsAndTotals() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(
            directory: directory.path,
            lanes: 16,
            storeAndForward:
                #"{ "maxStoredAmount": { "USD": "100000.00", "EUR": "100000.00" }, "maxStoredCount": 10000 }"#
        )
        let perLane = 12
        try await Harness.withKernel(manifest) { kernel in
            let results = try await withThrowingTaskGroup(of: [(String, String, Int64)].self) { group in
                for lane in 1...16 {
                    group.addTask {
                        let (_, session) = try await Harness.offlineSession(kernel, lane: "lane-\(lane)")
                        var done: [(String, String, Int64)] = []
                        for index in 1...perLane {
                            let currency = index.isMultiple(of: 3) ? "EUR" : "USD"
                            let cents = Int64(lane * 100 + index)
                            let amount = "\(cents / 100).\(String(format: "%02d", cents % 100))"
                            let result = try await session.readPaymentCard(Harness.purchase(amount, currency))
                            done.append((result.id, currency, cents))
                        }
                        return done
                    }
                }
                var all: [(String, String, Int64)] = []
                for try await lane in group { all += lane }
                return all
            }
            #expect(results.count == 16 * perLane)
            let reader = PaymentCardReader(kernel: kernel, lane: "lane-1")
            let service = try reader.storeAndForwardService()
            let totals = try await service.store.totals()
            #expect(totals.count == 16 * perLane)
            for currency in ["USD", "EUR"] {
                let expected = results.filter { $0.1 == currency }.reduce(0) { $0 + $1.2 }
                #expect(totals.amounts[currency] == expected, "\(currency)")
            }
            // Batches of 50: disjoint, chronological, together every read once.
            let store = try reader.fetchPaymentCardReaderStore()
            let sandbox = try Harness.sandbox(manifest)
            var seen: [String] = []
            var lastTime: Int64 = 0
            while try await store.fetchStoredPaymentCardReadResultCount() > 0 {
                let remaining = try await store.fetchStoredPaymentCardReadResultCount()
                let batch = try await store.fetchStoredPaymentCardReadResultBatch(size: min(50, remaining))
                let container = try BatchContainer.parse(Array(batch.data))
                for entry in container.entries {
                    #expect(entry.record.readAtMilliseconds >= lastTime)
                    lastTime = entry.record.readAtMilliseconds
                }
                seen += batch.payments.map(\.id)
                _ = try sandbox.openBatch(Array(batch.data))
                try await store.resolveBatch(batchDeletionToken: try sandbox.issueDeletionToken(for: Array(batch.data)))
            }
            #expect(seen.count == results.count)
            #expect(Set(seen) == Set(results.map(\.0)))
        }
    }

    @Test func lanesTogetherNeverCrossTheStoredTotal() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // 16 lanes × 3 reads of 10.00 = 480.00 tried; the store takes exactly 25 of them (250.00).
        let manifest = try Harness.manifest(
            directory: directory.path,
            lanes: 16,
            storeAndForward: #"{ "maxStoredAmount": { "USD": "250.00" } }"#
        )
        try await Harness.withKernel(manifest) { kernel in
            let accepted = try await withThrowingTaskGroup(of: Int.self) { group in
                for lane in 1...16 {
                    group.addTask {
                        let (_, session) = try await Harness.offlineSession(kernel, lane: "lane-\(lane)")
                        var stored = 0
                        for _ in 1...3 {
                            do {
                                try await session.readPaymentCard(Harness.purchase("10.00"))
                                stored += 1
                            } catch let error as PaymentCardReaderSession.ReadError
                                where error.code == .storeAndForwardLimitExceeded
                            {
                                #expect(error.reason.contains("maxStoredAmount.USD"))
                            }
                        }
                        return stored
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(accepted == 25)
            let service = try PaymentCardReader(kernel: kernel, lane: "lane-1").storeAndForwardService()
            #expect(try await service.store.totals().amounts["USD"] == 25_000)
        }
    }
}
