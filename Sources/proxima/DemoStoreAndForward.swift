import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import ProximaProcessorSandbox

/// The store-and-forward part of `proxima demo` (manifests with `capabilities.storeAndForward`): half the lanes go
/// offline and store two reads each, then the store forwards one batch to the sandbox processor, which verifies and
/// opens it and returns the deletion token that resolves it.
enum DemoStoreAndForward {
    static func run(kernel: Kernel, sandbox: PaymentProcessorSandbox, token: PaymentCardReader.Token) async throws {
        let lanes = kernel.manifest.lanes.map(\.id)
        let offline = Array(lanes.prefix(max(1, lanes.count / 2)))
        print("\nstore and forward: lanes \(offline.map(\.rawValue).joined(separator: ", ")) go offline")
        let stored = try await withThrowingTaskGroup(of: Int.self) { group in
            for lane in offline {
                group.addTask {
                    let reader = PaymentCardReader(kernel: kernel, lane: lane)
                    _ = try await reader.prepare(using: token)
                    let session = try await reader.prepareStoreAndForward()
                    for amount in ["4.20", "12.00", "7.50"] {
                        let request = PaymentCardTransactionRequest(
                            amount: Decimal(string: amount, locale: nil) ?? 1,
                            currencyCode: "USD",
                            type: .purchase
                        )
                        do {
                            try await session.readPaymentCard(request)
                        } catch {
                            // A declined card or a card refused by a limit is not stored; the lane goes on.
                            print("store and forward: \(lane): not stored: \(error)")
                        }
                    }
                    return try await session.status().readCount
                }
            }
            return try await group.reduce(0, +)
        }
        let store = try PaymentCardReader(kernel: kernel, lane: offline[0]).fetchPaymentCardReaderStore()
        print("store and forward: \(stored) reads stored offline; back online, forwarding")
        // A batch left active by an earlier run was never resolved: send it again (nothing is lost or doubled).
        guard let batch = try await store.allBatches().first else { return }
        let opened = try sandbox.openBatch(Array(batch.data))
        let remaining = try await store.resolveBatch(
            batchDeletionToken: try sandbox.issueDeletionToken(for: Array(batch.data))
        )
        print(
            "store and forward: batch \(batch.id) of \(opened.reads.count) reads verified and opened by the "
                + "processor, resolved with its deletion token; \(remaining) reads remain stored"
        )
    }
}
