import EMVCommon
import Foundation
import IdentityCapability
import PaymentCapability
import Proxima
import ProximaCore
import ProximaKernel
import ProximaProcessorSandbox
import Synchronization

/// `proxima demo`: a simulated multi-lane store on the embedded default manifest.
enum DemoCommand {
    static let command = Command(
        name: "demo",
        summary: "Run a simulated multi-lane store on the embedded default manifest.",
        details: """
            Runs a simulated store on the manifest's simulator readers: customers arrive on every lane, each tap is
            routed to a free reader the lane may use, and the card is read. A live per-lane view shows progress
            (plain lines when the output is not a terminal); a summary table ends it: taps per lane, queue wait
            p50/p99, tap time, and failures by reason.
            """,
        options: [
            .value(
                "lanes",
                "N",
                help: "Replace the manifest's lanes with N lanes (readers are dealt round-robin; with fewer readers "
                    + "than lanes, lanes share readers)."
            ),
            .value(
                "readers",
                "M",
                help: "Replace the simulator readers with M readers holding the manifest's card profiles."
            ),
            .value("taps", "K", help: "Total taps across all lanes.", default: "120"),
            .value("arrival-ms", "MS", help: "Mean time between customers arriving on one lane.", default: "250"),
            .flag("no-air-time", help: "Exchanges cost no simulated air time."),
        ],
        action: { try await run($0) }
    )

    static func run(_ args: Arguments) async throws -> ExitCode {
        let taps = try args.integer("taps", in: 1...1_000_000)
        let arrival = try args.integer("arrival-ms", in: 0...600_000)
        var manifest = try CLI.loadManifest(args.configPath)
        let lanes = args.value("lanes") == nil ? nil : try args.integer("lanes", in: 1...1024)
        let readers = args.value("readers") == nil ? nil : try args.integer("readers", in: 1...4096)
        if lanes != nil || readers != nil || args.flag("no-air-time") {
            manifest = try DemoStore.reshape(
                manifest,
                lanes: lanes,
                readers: readers,
                airTime: !args.flag("no-air-time")
            )
        }
        guard !manifest.lanes.isEmpty else { throw UsageError("the manifest has no lanes to run the demo on") }

        let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
        let mode = try DemoStore.Mode(manifest: manifest)
        print(mode.banner)
        let store = DemoStore(kernel: kernel, taps: taps, meanArrival: .milliseconds(arrival), mode: mode)
        let report = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await kernel.run() }
            defer { group.cancelAll() }
            try await store.linkAccount()
            try await store.showHowToTap()
            let report = await store.run()
            if case .payment(let sandbox, let token) = mode, manifest.capabilities["storeAndForward"] != nil {
                try await DemoStoreAndForward.run(kernel: kernel, sandbox: sandbox, token: token)
            }
            return report
        }
        print(report.summary)
        for failure in kernel.pluginFailures { printError("proxima: \(failure)") }
        return report.succeeded > 0 && kernel.pluginFailures.isEmpty ? .success : .failure
    }
}

/// Per-lane results, shared between the customer tasks and the live view.
struct LaneStats: Sendable {
    var planned = 0
    var started = 0
    var succeeded = 0
    var failures: [String: Int] = [:]
    var queueWaits: [Duration] = []
    var tapTimes: [Duration] = []
    var finished: Int { succeeded + failures.values.reduce(0, +) }
}

struct DemoReport: Sendable {
    var lanes: [(LaneID, LaneStats)]
    var elapsed: Duration
    /// Lanes whose queue policy is `failFast`: a customer who arrives while the lane's reader is busy is turned
    /// away (`readerBusy`), which the summary says, so that those lines do not read as faults.
    var failFastLanes: Set<LaneID> = []

    var succeeded: Int { lanes.reduce(0) { $0 + $1.1.succeeded } }

    var summary: String {
        var rows: [[String]] = []
        var allWaits: [Duration] = []
        var allTaps: [Duration] = []
        var allFailures: [String: Int] = [:]
        for (lane, s) in lanes {
            rows.append([
                lane.rawValue, "\(s.succeeded)", "\(s.finished - s.succeeded)",
                ms(percentile(s.queueWaits, 0.5)), ms(percentile(s.queueWaits, 0.99)), ms(percentile(s.tapTimes, 0.5)),
                s.failures.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " "),
            ])
            allWaits += s.queueWaits
            allTaps += s.tapTimes
            allFailures.merge(s.failures, uniquingKeysWith: +)
        }
        let total = lanes.reduce(0) { $0 + $1.1.finished }
        rows.append([
            "all", "\(succeeded)", "\(total - succeeded)", ms(percentile(allWaits, 0.5)),
            ms(percentile(allWaits, 0.99)),
            ms(percentile(allTaps, 0.5)),
            allFailures.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " "),
        ])
        let seconds = elapsed.milliseconds / 1000
        let turnedAway = lanes.filter { failFastLanes.contains($0.0) && $0.1.failures["readerBusy"] != nil }
        let policyNotes = turnedAway.map { lane, stats in
            "\n\(lane): readerBusy×\(stats.failures["readerBusy"] ?? 0) by design: the lane's queue policy is failFast, so a "
                + "customer who arrives while its reader is busy is turned away at once instead of waiting"
        }
        return "\n"
            + table(["LANE", "OK", "FAILED", "WAIT p50", "WAIT p99", "TAP p50", "FAILURES BY REASON"], rows)
            + (policyNotes.isEmpty ? "" : "\n" + policyNotes.joined())
            + String(format: "\n\n%d taps in %.1f s (%.1f taps/s)", total, seconds, Double(total) / max(seconds, 0.001))
    }

    func percentile(_ values: [Duration], _ p: Double) -> Duration? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
    }

    func ms(_ d: Duration?) -> String { d.map { String(format: "%.1f ms", $0.milliseconds) } ?? "-" }
}

/// The simulated store: customers arrive on lanes and tap; the kernel routes each tap to a reader.
struct DemoStore: Sendable {
    let kernel: Kernel
    let taps: Int
    let meanArrival: Duration
    let mode: Mode
    /// Lanes whose customers show an mDL instead of paying: lanes named `id-…` when the manifest has
    /// `capabilities.mobileDocument`.
    var idLanes: Set<LaneID> {
        guard kernel.manifest.capabilities["mobileDocument"] != nil else { return [] }
        return Set(kernel.manifest.lanes.map(\.id).filter { $0.rawValue.hasPrefix("id-") })
    }

    /// What each customer's tap does.
    enum Mode: Sendable {
        /// A payment through the Apple-shaped API, with a sandbox processor token; the processor side then
        /// opens every envelope, as a real one would.
        case payment(PaymentProcessorSandbox, PaymentCardReader.Token)
        /// Card identity only (SELECT PPSE), for manifests without payment settings.
        case identity

        init(manifest: Manifest) throws {
            guard manifest.capabilities["payment"] != nil else {
                self = .identity
                return
            }
            let sandbox = try PaymentProcessorSandbox(manifest: manifest)
            self = .payment(sandbox, try sandbox.issueToken(merchantID: PSPCommand.defaultMerchant))
        }

        var banner: String {
            switch self {
            case .payment:
                "demo: payments on every lane (sandbox processor token, merchant \(PSPCommand.defaultMerchant)); "
                    + "mDL age checks on id-* lanes"
            case .identity: "demo: card identity reads on every lane (the manifest has no payment settings)"
            }
        }
    }

    /// Links the sandbox merchant on this kernel (first use), as a POS app does once before taking payments.
    func linkAccount() async throws {
        guard case .payment(_, let token) = mode, let lane = kernel.manifest.lanes.first?.id else { return }
        let reader = PaymentCardReader(kernel: kernel, lane: lane)
        if try await !reader.isAccountLinked(using: token) {
            try await reader.linkAccount(using: token)
        }
    }

    /// Merchant education once per lane: how to tap, on each lane's display, printed as the display got it.
    func showHowToTap() async throws {
        guard case .payment = mode else { return }
        let display = kernel.events.subscribe()
        for lane in kernel.manifest.lanes.map(\.id) {
            let reader = PaymentCardReader(kernel: kernel, lane: lane)
            try await ProximityReaderDiscovery(reader: reader).present()
        }
        for line in await HowToCommand.laneOutputs(display, count: kernel.manifest.lanes.count) { print(line) }
    }

    func run() async -> DemoReport {
        let lanes = kernel.manifest.lanes.map(\.id)
        let stats = DemoLedger()
        stats.withLock { s in
            for (i, lane) in lanes.enumerated() {
                s[lane] = LaneStats(planned: taps / lanes.count + (i < taps % lanes.count ? 1 : 0))
            }
        }
        let start = ContinuousClock.now
        let grants = kernel.events.subscribe(bufferSize: 65_536)
        await withTaskGroup(of: Void.self) { group in
            let view = LiveView(lanes: lanes, stats: stats)
            group.addTask { await view.run() }
            // Queue waits come from the kernel's own lease events: the time each request waited for a reader.
            group.addTask {
                for await event in grants {
                    guard case .leaseGranted(_, let waited) = event.kind, let lane = event.lane else { continue }
                    stats.withLock { $0[lane]?.queueWaits.append(waited) }
                }
            }
            await withTaskGroup(of: Void.self) { customers in
                for (index, lane) in lanes.enumerated() {
                    let planned = stats.withLock { $0[lane]?.planned ?? 0 }
                    customers.addTask {
                        await self.customers(on: lane, count: planned, seed: UInt64(index + 1), stats: stats)
                    }
                }
            }
            group.cancelAll()
        }
        let final = stats.withLock { s in lanes.map { ($0, s[$0] ?? LaneStats()) } }
        let failFast = kernel.manifest.lanes.filter { $0.queuePolicy == .failFast }.map(\.id)
        return DemoReport(lanes: final, elapsed: ContinuousClock.now - start, failFastLanes: Set(failFast))
    }

    /// Customers arrive on `lane` with exponential gaps of mean `meanArrival`; each taps once.
    private func customers(on lane: LaneID, count: Int, seed: UInt64, stats: DemoLedger) async {
        var random = SplitMix64(seed: seed)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<count {
                let gap = -log(1 - random.nextUnit()) * Double(meanArrival.milliseconds)
                try? await Task.sleep(for: .milliseconds(gap))
                if Task.isCancelled { break }
                stats.withLock { $0[lane]?.started += 1 }
                group.addTask { await self.serveCustomer(on: lane, stats: stats) }
            }
        }
    }

    private func serveCustomer(on lane: LaneID, stats: DemoLedger) async {
        let arrived = ContinuousClock.now
        do {
            switch mode {
            case .payment(_, let token) where idLanes.contains(lane):
                try await checkID(on: lane, token: token)
            case .payment(let sandbox, let token):
                try await pay(on: lane, sandbox: sandbox, token: token)
            case .identity:
                _ = try await kernel.tap(lane: lane, options: TapOptions(timeout: .seconds(60))) { channel, context in
                    try await CardIdentityCapability().run(.init(), on: channel, context: context)
                }
            }
            let total = ContinuousClock.now - arrived
            stats.withLock {
                $0[lane]?.succeeded += 1
                $0[lane]?.tapTimes.append(total)
            }
        } catch {
            stats.withLock { $0[lane]?.failures[Self.reason(error), default: 0] += 1 }
        }
    }

    /// One customer paying: the POS code of a lane, as an app would write it with `import Proxima`.
    private func pay(on lane: LaneID, sandbox: PaymentProcessorSandbox, token: PaymentCardReader.Token) async throws {
        let reader = PaymentCardReader(kernel: kernel, lane: lane)
        let session = try await reader.prepare(using: token)
        var random = SystemRandomNumberGenerator()
        let cents = Int.random(in: 100...20_000, using: &random)
        let request = PaymentCardTransactionRequest(
            amount: Decimal(cents) / 100,
            currencyCode: "USD",
            type: .purchase
        )
        // With loyalty configured, the first lane reads the pass and then the card in one tap, the second stops on a
        // pass (a loyalty-only tap when the phone offers one, else a payment), the others pay only. iPhones (Apple
        // VAS) and Android phones (Smart Tap) go through the same request.
        let loyaltyLane =
            kernel.manifest.capabilities["loyalty"] == nil
            ? nil : kernel.manifest.lanes.firstIndex { $0.id == lane }.map { $0 % 3 }
        let vasRequest = VASRequest(merchantIdentifier: "pass.com.example.loyalty", localizedDescription: "Loyalty")
        let result: PaymentCardReadResult
        switch loyaltyLane {
        case 0?:
            result = try await session.readPaymentCard(request, vasRequest: vasRequest)
        case 1?:
            let (payment, passes) = try await session.readPaymentCard(
                request,
                vasRequest: vasRequest,
                stopOnVASResult: true
            )
            guard let payment else {
                guard passes?.entries.contains(where: { $0.status == .success }) == true else {
                    throw DemoFailure("the tap stopped without a pass")
                }
                return
            }
            result = payment
        default:
            result = try await session.readPaymentCard(request)
        }
        // The processor's side: the envelope must open with its key and carry this amount.
        guard let data = result.paymentCardData else { throw DemoFailure("no card data in the result") }
        let contents = try sandbox.open(data)
        guard contents.amount == "\(request.amount)" || Decimal(string: contents.amount) == request.amount else {
            throw DemoFailure("the envelope carries \(contents.amount), not \(request.amount)")
        }
    }

    /// One customer at the ID desk: an age check of their mDL, verified against the manifest's IACAs.
    private func checkID(on lane: LaneID, token: PaymentCardReader.Token) async throws {
        let reader = MobileDocumentReader(kernel: kernel, lane: lane)
        let session = try await reader.prepare(using: MobileDocumentReader.Token(token.rawValue))
        let response = try await session.readDocument(
            MobileDriversLicenseDataRequest(nonRetainedElements: [.ageAtLeast(21)])
        )
        guard response.documentElements.ageAtLeastElements[21] != nil else {
            throw DemoFailure("the mDL did not answer age_over_21")
        }
    }

    /// A short failure reason for the summary: the error's case or code name.
    static func reason(_ error: any Error) -> String {
        switch error {
        case let e as PaymentCardReaderError: e.errorName
        case let e as PaymentCardReaderSession.ReadError: e.errorName
        case let e as ProximaError: e.code.description
        case let e as PaymentError: e.code.description
        case let e as MobileDocumentReaderError: e.failedCheck ?? e.code.description
        case let e as DemoFailure: e.description
        default: "\(type(of: error))"
        }
    }
}

struct DemoFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension DemoStore {
    /// The manifest with its simulator readers replaced by `readers` readers and its lanes by `lanes` lanes.
    ///
    /// The new configuration goes through the same loader as a file, so it is validated the same way.
    static func reshape(_ manifest: Manifest, lanes: Int?, readers: Int?, airTime: Bool) throws -> Manifest {
        guard let simulator = manifest.plugins.first(where: { $0.type == "simulator" && $0.enabled }) else {
            throw UsageError("--lanes/--readers need a simulator plugin in the manifest")
        }
        let config = simulator.configuration
        var cards: [JSONValue] = []
        var intervalMs: Int64 = 300
        if case .array(let declared)? = config["readers"] {
            for reader in declared {
                // The ID desk's mDL holders stay out of the payment lanes a reshaped store deals cards to.
                if case .array(let c)? = reader["cards"] {
                    cards += c.filter { card in
                        if case .string(let path) = card, path.contains("mdl-holder") { return false }
                        return !cards.contains(card)
                    }
                }
                if case .integer(let i)? = reader["arrival"]?["intervalMs"] { intervalMs = i }
            }
        }
        guard !cards.isEmpty else { throw UsageError("the simulator plugin has no card profiles to deal out") }
        let readerCount =
            readers ?? (config["readers"].flatMap { if case .array(let a) = $0 { a.count } else { nil } } ?? 1)
        let laneCount = lanes ?? manifest.lanes.count
        let readerIDs = (0..<readerCount).map { String(format: "sim-%03d", $0 + 1) }
        let readerObjects: [JSONValue] = readerIDs.enumerated().map { i, id in
            .object([
                ("id", .string(id)),
                ("name", .string("Proxima Simulated Reader \(i + 1)")),
                (
                    "cards",
                    .array(
                        [cards[i % cards.count]]
                            + cards.enumerated().filter { $0.offset != i % cards.count }.map(\.element)
                    )
                ),
                (
                    "arrival",
                    .object([
                        ("pattern", .string("poisson")), ("intervalMs", .integer(intervalMs)),
                        ("seed", .integer(Int64(i + 1))),
                    ])
                ),
            ])
        }
        var simConfig: [(key: String, value: JSONValue)] = []
        if case .object(let members) = config {
            simConfig = members.filter { $0.key != "readers" && $0.key != "airTime" }
        }
        simConfig.append(("airTime", .bool(airTime)))
        simConfig.append(("readers", .array(readerObjects)))
        // Lane i claims readers i, i+L, i+2L, …; with fewer readers than lanes, lane i shares reader i mod M.
        let laneObjects: [JSONValue] = (0..<laneCount).map { lane in
            let mine =
                readerCount >= laneCount
                ? Array(stride(from: lane, to: readerCount, by: laneCount)) : [lane % readerCount]
            return .object([
                ("id", .string(String(format: "lane-%02d", lane + 1))),
                ("readers", .array(mine.map { .string(readerIDs[$0]) })),
                ("queue", .object([("policy", .string("wait")), ("maxWaitMs", .integer(60_000))])),
            ])
        }
        let document: JSONValue = .object([
            ("schemaVersion", .integer(1)),
            ("dataDirectory", .string(manifest.dataDirectory)),
            (
                "plugins",
                .array([
                    .object([
                        ("id", .string(simulator.id)), ("type", .string("simulator")), ("config", .object(simConfig)),
                    ])
                ])
            ),
            ("lanes", .array(laneObjects)),
            // Capability settings (payment keys, …) carry over; their relative paths resolve as before.
            ("capabilities", .object(manifest.capabilities.map { ($0.key.rawValue, $0.value) }.sorted { $0.0 < $1.0 })),
        ])
        return try Manifest.parse(
            Array(document.jsonText.utf8),
            baseDirectory: manifest.baseDirectory,
            registry: BuiltinPlugins.registry,
            sourcePath: (manifest.sourcePath ?? "manifest") + " (reshaped by demo)"
        )
    }
}

/// Per-lane results behind a lock, shared by the customer tasks and the live view.
final class DemoLedger: Sendable {
    private let lanes = Mutex<[LaneID: LaneStats]>([:])
    func withLock<T>(_ body: (inout [LaneID: LaneStats]) -> T) -> T { lanes.withLock { body(&$0) } }
}

/// The per-lane progress view: redrawn in place on a terminal, plain lines every second otherwise.
struct LiveView: Sendable {
    let lanes: [LaneID]
    let stats: DemoLedger

    func run() async {
        let terminal = standardOutputIsTerminal
        var drawn = 0
        var lastPlain: [LaneID: Int] = [:]
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(terminal ? 200 : 1000))
            let snapshot = stats.withLock { s in lanes.map { ($0, s[$0] ?? LaneStats()) } }
            if terminal {
                var out = drawn > 0 ? "\u{1B}[\(drawn)A" : ""
                for (lane, s) in snapshot {
                    out += "\u{1B}[2K" + line(lane, s) + "\n"
                }
                drawn = snapshot.count
                print(out, terminator: "")
            } else {
                for (lane, s) in snapshot where lastPlain[lane] != s.finished {
                    lastPlain[lane] = s.finished
                    print(line(lane, s))
                }
            }
            flushStandardOutput()
        }
    }

    func line(_ lane: LaneID, _ s: LaneStats) -> String {
        let width = 24
        let done = s.planned == 0 ? width : s.finished * width / s.planned
        let bar = String(repeating: "#", count: done) + String(repeating: ".", count: width - done)
        let failed = s.finished - s.succeeded
        let waiting = s.started - s.finished
        return "\(lane.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)) [\(bar)] "
            + "\(s.finished)/\(s.planned) done, \(waiting) in progress, \(failed) failed"
    }
}
