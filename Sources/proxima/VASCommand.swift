import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import ProximaProcessorSandbox

/// `proxima vas`: one loyalty read (Apple VAS) on the configured readers, through the Apple-shaped API.
enum VASCommand {
    static let command = Command(
        name: "vas",
        summary: "Read the loyalty passes of one phone (Apple VAS, Google Smart Tap) on the configured readers.",
        details: """
            Asks the phone for the pass of each merchant and prints one line per merchant:
            "vas <merchant id> <status> <pass data>", the data as UTF-8 when printable, else hex. With
            capabilities.loyalty.smartTap, an Android phone's Google Wallet pass is one more line whose merchant
            id is the collector ID. Exits 0 when at least one pass was read, 1 otherwise.
            """,
        options: [
            .value("lane", "L", help: "The lane to read on.", defaultDescription: "the first lane"),
            .value(
                "reader",
                "NAME",
                help: "Read on this reader only, by its exact name or id (lane wiring checks, support)."
            ),
            .value(
                "merchant",
                "ID",
                help: "A pass type identifier, or the Smart Tap collector ID, to ask for (repeatable).",
                defaultDescription: "every merchant of capabilities.loyalty.appleVAS and the smartTap collector",
                repeatable: true
            ),
            .value(
                "token",
                "JWT",
                help: "The processor's reader token.",
                defaultDescription:
                    "$PSP_TOKEN, else a sandbox token issued with the manifest's test key — see 'proxima psp token'"
            ),
            .value("timeout", "S", help: "How long to wait for a reader and a phone, in seconds.", default: "60"),
        ],
        notes: "The pass data is the customer's: print it only where the customer's data may go.",
        action: { try await run($0) }
    )

    static func run(_ args: Arguments) async throws -> ExitCode {
        let timeout = try args.integer("timeout", in: 1...3600)
        let manifest = try CLI.loadManifest(args.configPath)
        var merchants = args.values("merchant")
        if merchants.isEmpty { merchants = configuredMerchants(manifest) }
        guard !merchants.isEmpty else {
            throw UsageError(
                "no --merchant given and the manifest has no capabilities.loyalty.appleVAS.merchants or smartTap"
            )
        }
        let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
        let token: PaymentCardReader.Token
        if let raw = args.value("token") ?? ProcessInfo.processInfo.environment["PSP_TOKEN"] {
            token = PaymentCardReader.Token(rawValue: raw)
        } else {
            token = try PaymentProcessorSandbox(manifest: manifest).issueToken(merchantID: PSPCommand.defaultMerchant)
        }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await kernel.run() }
            defer { group.cancelAll() }
            var lane = try args.value("lane").map { name in
                guard manifest.lanes.contains(where: { $0.id.rawValue == name }) else {
                    throw UsageError("lane \"\(name)\" is not in the manifest")
                }
                return LaneID(name)
            }
            var pinned: ReaderID? = nil
            if let name = args.value("reader") {
                let (id, readerLane) = try await PayCommand.resolveReader(named: name, in: kernel)
                pinned = id
                lane = lane ?? readerLane
            }
            let reader = PaymentCardReader(
                kernel: kernel,
                lane: lane,
                options: PaymentCardReader.Options(
                    readTimeout: .seconds(timeout),
                    prepareTimeout: .seconds(timeout),
                    pinnedReader: pinned
                )
            )
            if try await !reader.isAccountLinked(using: token) {
                try await reader.linkAccount(using: token)
            }
            let session = try await reader.prepare(using: token)
            let result = try await session.readVAS(
                VASRequest(
                    vasMerchants: merchants.map { VASRequest.Merchant(id: $0, localizedName: $0) },
                    localizedVASType: "loyalty"
                )
            )
            for line in lines(result) { print(line) }
            return result.entries.contains { $0.status == .success } ? .success : .failure
        }
    }

    /// `vas <merchant id> <status> <data>` per entry; the data as UTF-8 when printable, else hex.
    static func lines(_ result: VASReadResult) -> [String] {
        result.entries.map { entry in
            var line = "vas \(entry.id) \(entry.status.rawValue)"
            if let data = entry.customerVASData { line += " " + display(Array(data)) }
            return line
        }
    }

    static func display(_ bytes: [UInt8]) -> String {
        if !bytes.isEmpty, bytes.allSatisfy({ (0x20..<0x7F).contains($0) }) {
            return String(decoding: bytes, as: UTF8.self)
        }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// The pass type identifiers of `capabilities.loyalty.appleVAS.merchants`, then the Smart Tap collector ID of
    /// `capabilities.loyalty.smartTap` in decimal.
    static func configuredMerchants(_ manifest: Manifest) -> [String] {
        var ids: [String] = []
        if case .array(let merchants)? = manifest.capabilities["loyalty"]?["appleVAS"]?["merchants"] {
            ids = merchants.compactMap { merchant in
                if case .string(let id)? = merchant["passTypeIdentifier"] { return id }
                return nil
            }
        }
        switch manifest.capabilities["loyalty"]?["smartTap"]?["collectorID"] {
        case .integer(let collector)?: ids.append(String(collector))
        case .number(let collector)? where collector == collector.rounded(): ids.append(String(Int64(collector)))
        default: break
        }
        return ids
    }
}
