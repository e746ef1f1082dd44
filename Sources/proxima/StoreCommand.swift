import Foundation
import PaymentCapability
import Proxima
import ProximaCore
import ProximaKernel
import ProximaSystem
import StoreAndForwardCapability

/// `proxima store`: the store-and-forward store of the manifest's data directory (`Docs/store-and-forward.md`).
enum StoreCommand {
    static let command = Command(
        name: "store",
        summary: "The store of offline reads: status, batch, resolve, reset, decline.",
        details: """
            The reads 'proxima pay --offline' stored in the manifest's data directory, and their batches: fetch
            the active batch, send it to the processor, then resolve it with the processor's deletion token (or
            reset it when the transmission failed).
            """,
        subcommands: [
            Command(
                name: "status",
                summary: "Stored reads, totals per currency, the active batch and the last processor contact.",
                action: { try await status($0) }
            ),
            Command(
                name: "batch",
                summary: "Make (or show) the active batch; write its container to FILE.",
                details: """
                    Makes the active batch of the oldest N stored reads (0 = all), or shows the active one, and
                    writes its container (Docs/store-and-forward-batch.md) to FILE, mode 0600.
                    """,
                options: [
                    .value("size", "N", help: "How many reads (0 = all).", default: "0"),
                    .value(
                        "out",
                        "FILE",
                        help: "Where to write the batch container.",
                        defaultDescription: "not written"
                    ),
                ],
                action: { try await batch($0) }
            ),
            Command(
                name: "resolve",
                summary: "Delete the active batch with the processor's deletion token.",
                options: [.value("token", "JWT", help: "The processor's deletion token.", required: true)],
                action: { try await resolve($0) }
            ),
            Command(
                name: "reset",
                summary: "Detach the active batch's reads; they stay stored for the next batch.",
                action: { try await reset($0) }
            ),
            Command(
                name: "decline",
                summary: "Remove the last stored read (within 60 s of it, before it is batched).",
                action: { try await decline($0) }
            ),
        ]
    )

    /// The store API on an unstarted kernel of the manifest: the store needs no readers.
    static func store(_ args: Arguments) throws -> (PaymentCardReaderStore, StoreAndForwardService) {
        let manifest = try CLI.loadManifest(args.configPath)
        let reader = PaymentCardReader(kernel: Kernel(manifest: manifest, registry: BuiltinPlugins.registry))
        return (try reader.fetchPaymentCardReaderStore(), try reader.storeAndForwardService())
    }

    static func status(_ args: Arguments) async throws -> ExitCode {
        let (_, service) = try store(args)
        let totals = try await service.store.totals()
        print("store: \(service.store.path)")
        print("reads: \(totals.count) stored, \(totals.unbatched) not in a batch")
        for (currency, minor) in totals.amounts.sorted(by: { $0.key < $1.key }) {
            let format = ISO4217Currency(alphabeticCode: currency)?.format(minorUnitAmount:) ?? { "\($0)" }
            let limit = service.settings.currencies[currency].map { " of \(format($0.maxStored))" } ?? ""
            print("  \(currency) \(format(minor))\(limit)")
        }
        print("active batch: \(totals.activeBatchID ?? "none")")
        print("processor last reached: \(totals.lastProcessorContact.map(AccountLinkStore.format) ?? "never")")
        return .success
    }

    static func batch(_ args: Arguments) async throws -> ExitCode {
        let (store, service) = try store(args)
        let size = try args.integer("size", in: 0...1_000_000)
        let batch: StoreAndForwardBatch
        if let active = try await service.store.activeBatch() {
            print("the active batch \(active.id) exists; showing it (resolve or reset it to make another)")
            guard let shown = try await store.allBatches().first(where: { $0.id == active.id }) else {
                throw UsageError("the active batch \(active.id) vanished; run the command again")
            }
            batch = shown
        } else {
            batch = try await store.fetchStoredPaymentCardReadResultBatch(size: size)
        }
        print("batch \(batch.id): \(batch.count) reads, \(batch.data.count) bytes")
        if let out = args.value("out") {
            do {
                try SystemFile.writeAtomically(Array(batch.data), to: out, permissions: 0o600)
            } catch {
                throw FileProblem(path: out, error, remedy: "give a file you can write with --out FILE")
            }
            print("wrote \(out): send it to the processor ('proxima psp batch-open \(out)' in the sandbox)")
        }
        return .success
    }

    static func resolve(_ args: Arguments) async throws -> ExitCode {
        let (store, _) = try store(args)
        let token = StoreAndForwardBatchDeletionToken(rawValue: args.value("token") ?? "")
        let remaining = try await store.resolveBatch(batchDeletionToken: token)
        print("batch resolved; \(remaining) reads remain stored")
        return .success
    }

    static func reset(_ args: Arguments) async throws -> ExitCode {
        let (store, _) = try store(args)
        try await store.resetBatchState()
        print("batch reset; its reads stay stored for the next batch")
        return .success
    }

    /// `proxima pay --offline`: an offline session after the online prepare, one read stored.
    static func payOffline(_ reader: PaymentCardReader, _ request: PaymentCardTransactionRequest) async throws
        -> ExitCode
    {
        let session = try await reader.prepareStoreAndForward()
        let result = try await session.readPaymentCard(request)
        let service = try reader.storeAndForwardService()
        let totals = try await service.store.totals()
        if let card = result.generalCardData { print("card: \(card)") }
        print("lane: \(result.lane)  reader: \(result.device)  transaction: \(result.id)")
        print("stored offline: \(totals.count) reads in \(service.store.path); forward them with 'proxima store batch'")
        return .success
    }

    static func decline(_ args: Arguments) async throws -> ExitCode {
        let (_, service) = try store(args)
        print("declined read \(try await service.declineLast(session: nil))")
        return .success
    }
}
