// A full payment read through the kernel, pcscd, vpcd and a hosted virtual card, against the same APDUs sent to
// the same card by a minimal client written directly on libpcsclite; then throughput with six readers against one.
//
// Needs pcscd with the six vpcd readers of scripts/pcscd-harness.sh (which sets PROXIMA_VPCD_READERS and
// PROXIMA_VPCD_PORTS):
//
//     swift build -c release --product PCSCBenchmark
//     scripts/pcscd-harness.sh .build/release/PCSCBenchmark [reads] [seconds]
//
// 1. Overhead. One kernel read of Config/cards/pay-visa-qvsdc.json is recorded at the card (every APDU it
//    received, GET DATA for the UID included). Then, interleaved in one run, `reads` times each in alternating
//    order:
//      A  the kernel: tap (lease, connect, EMV payment capability, close, release) over the PC/SC transport;
//      B  the minimal client: SCardConnect, SCardBeginTransaction, SCardTransmit of each recorded APDU,
//         SCardEndTransaction, SCardDisconnect, on one context established once;
//      C  B plus a context per connection and SCardStatus (what the transport did before it kept one context per
//         reader and took the ATR from its reader monitor; kept as a reference point);
//      D  the PC/SC transport alone, without kernel and capability: openChannel, the payment APDUs (on the reader's
//         executor, as the kernel runs a tap's body), close.
//    Printed: wall-time ratio A/B (and A/C), microseconds A adds per APDU, and where they go (C−B, D−C, A−D).
// 2. Throughput. Reads per second on one reader (one lane, taps back to back), then on six readers in parallel
//    (six lanes, one tap loop each), `seconds` each; with the CPU time pcscd, the card hosts (threads named
//    vpcd:<port>) and the rest of this process (kernel, transport, capability) used meanwhile.

import CPCSCLite
import Foundation
import PCSCTransport
import PaymentCapability
import Proxima
import ProximaCardEmulator
import ProximaCore
import ProximaKernel
import Synchronization

let arguments = CommandLine.arguments.dropFirst()
let reads = arguments.first.flatMap { Int($0) } ?? 200
let seconds = arguments.dropFirst().first.flatMap { Double($0) } ?? 3

struct Failure: Error, CustomStringConvertible {
    var description: String
}

// MARK: Counting executor switches

/// Jobs enqueued on Swift's global (cooperative) executor, counted by the runtime's `swift_task_enqueueGlobal_hook`:
/// every resumption of a task on the pool (after a hop off it, or a continuation resumed from another thread).
let poolEnqueues = Atomic<Int>(0)

typealias EnqueueGlobal = @convention(c) (UnsafeMutableRawPointer?) -> Void
typealias EnqueueGlobalHook = @convention(c) (UnsafeMutableRawPointer?, EnqueueGlobal?) -> Void

/// Installs the counting hook; `false` when the runtime has no such hook.
func countPoolEnqueues() -> Bool {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "swift_task_enqueueGlobal_hook") else {
        return false
    }
    let hook: EnqueueGlobalHook = { job, original in
        poolEnqueues.add(1, ordering: .relaxed)
        original?(job)
    }
    symbol.assumingMemoryBound(to: EnqueueGlobalHook?.self).pointee = hook
    return true
}
let countingPoolEnqueues = countPoolEnqueues()

// MARK: Readers and cards

let environment = ProcessInfo.processInfo.environment
let readerNames = environment["PROXIMA_VPCD_READERS"]?.split(separator: ",").map(String.init) ?? []
let ports = environment["PROXIMA_VPCD_PORTS"]?.split(separator: ",").compactMap { UInt16($0) } ?? []
guard readerNames.count >= 6, ports.count == readerNames.count else {
    print("PCSCBenchmark: run it under scripts/pcscd-harness.sh (needs pcscd with six vpcd readers)")
    exit(2)
}

let hosts = try (0..<6).map { index in
    VPCDCardHost(
        card: try CardProfiles.load(contentsOf: "Config/cards/pay-visa-qvsdc.json"),
        endpoint: VPCDCardHost.Endpoint(port: ports[index]),
        options: VPCDCardHost.Options(recordsCommands: index == 0)
    )
}
for host in hosts { try host.insert() }

let manifestText = """
    {
      "schemaVersion": 1,
      "plugins": [ { "id": "pcsc", "type": "pcsc", "config": { "readerNames": [\(readerNames.prefix(6).map { "\"\($0)\"" }.joined(separator: ", "))] } } ],
      "lanes": [\((0..<6).map { #"{ "id": "lane-\#($0)", "readerNames": ["\#(readerNames[$0])"] }"# }.joined(separator: ", "))]
    }
    """
let manifest = try Manifest.parse(Array(manifestText.utf8), baseDirectory: "Config", registry: BuiltinPlugins.registry)
let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
let transaction = EMVTransaction(
    amountAuthorised: 2999,
    currencyCode: 840,
    date: TransactionDate(year: 2026, month: 3, day: 14, hour: 9, minute: 26, second: 53)
)
let payment = EMVPaymentCapability()

/// The executor statistics of reader 0 as the kernel's PC/SC transport uses it, and as the direct transport does.
let kernelReaderStatistics = Mutex<PCSCExecutorStatistics?>(nil)
let directReaderStatistics = Mutex<PCSCExecutorStatistics?>(nil)

func snapshot(_ statistics: borrowing Mutex<PCSCExecutorStatistics?>) -> PCSCExecutorStatistics.Snapshot {
    statistics.withLock { $0?.snapshot() } ?? PCSCExecutorStatistics.Snapshot.zero
}

/// One payment read on `lane` through the kernel.
func kernelRead(lane: Int) async throws {
    let outcome = try await kernel.tap(lane: LaneID("lane-\(lane)"), options: TapOptions(timeout: .seconds(10))) {
        channel,
        context in
        if lane == 0, let channel = channel as? PCSCCardChannel {
            kernelReaderStatistics.withLock { $0 = channel.executorStatistics }
        }
        return try await payment.run(transaction, on: channel, context: context)
    }
    guard outcome.status == .onlineRequest else { throw Failure(description: "outcome \(outcome.status)") }
}

// MARK: The minimal libpcsclite client

/// Connect, transaction, the APDUs, end, disconnect. `perConnectionContext` adds what the PC/SC transport does
/// besides: a context of its own per connection and SCardStatus for the ATR.
@Sendable func rawRead(context: SCARDCONTEXT, reader: String, apdus: [[UInt8]], perConnectionContext: Bool) throws {
    var context = context
    if perConnectionContext {
        try check(SCardEstablishContext(DWORD(SCARD_SCOPE_SYSTEM), nil, nil, &context), "SCardEstablishContext")
    }
    defer { if perConnectionContext { _ = SCardReleaseContext(context) } }
    var card = SCARDHANDLE(0)
    var activeProtocol = DWORD(0)
    try check(
        SCardConnect(
            context,
            reader,
            DWORD(SCARD_SHARE_SHARED),
            DWORD(SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1),
            &card,
            &activeProtocol
        ),
        "SCardConnect"
    )
    defer { _ = SCardDisconnect(card, DWORD(SCARD_LEAVE_CARD)) }
    try check(SCardBeginTransaction(card), "SCardBeginTransaction")
    defer { _ = SCardEndTransaction(card, DWORD(SCARD_LEAVE_CARD)) }
    if perConnectionContext {
        var name = [CChar](repeating: 0, count: 512)
        var nameLength = DWORD(name.count)
        var state = DWORD(0)
        var statusProtocol = DWORD(0)
        var atr = [UInt8](repeating: 0, count: Int(MAX_ATR_SIZE))
        var atrLength = DWORD(atr.count)
        try check(SCardStatus(card, &name, &nameLength, &state, &statusProtocol, &atr, &atrLength), "SCardStatus")
    }
    let pci = activeProtocol == DWORD(SCARD_PROTOCOL_T0) ? cpcsc_pci_t0() : cpcsc_pci_t1()
    var answer = [UInt8](repeating: 0, count: 4096)
    for apdu in apdus {
        var length = DWORD(answer.count)
        try check(SCardTransmit(card, pci, apdu, DWORD(apdu.count), nil, &answer, &length), "SCardTransmit")
        guard length >= 2, answer[Int(length) - 2] == 0x90 || answer[Int(length) - 2] == 0x61 else {
            throw Failure(description: "APDU \(apdu.prefix(4)) failed")
        }
    }
}

@Sendable func check(_ status: LONG, _ step: String) throws {
    guard status == SCARD_S_SUCCESS else {
        throw Failure(description: "\(step): \(String(cString: pcsc_stringify_error(status)))")
    }
}

// MARK: In-process reference

/// Microseconds per read: the capability over an in-process channel minus the card answering the same APDUs.
func measureInProcess(apdus: [[UInt8]]) async throws -> (capability: Double, card: Double) {
    let card = try CardProfiles.load(contentsOf: "Config/cards/pay-visa-qvsdc.json")
    let context = TapContext(lane: "bench", reader: "bench/in-process", tapID: 1)
    let count = 2000
    let clock = ContinuousClock()
    let begin = clock.now
    for _ in 0..<count {
        _ = try await payment.run(
            transaction,
            on: InProcessCardChannel(card: card, reader: "bench/in-process", recordsExchanges: false),
            context: context
        )
    }
    let withCard = seconds(clock.now - begin) / Double(count) * 1e6
    let cardBegin = clock.now
    var sink = 0
    for _ in 0..<count {
        var copy = card
        for apdu in apdus.dropFirst() { sink &+= copy.respond(to: apdu).count }
    }
    let cardOnly = seconds(clock.now - cardBegin) / Double(count) * 1e6
    if sink == 0 { print("") }
    return (withCard - cardOnly, cardOnly)
}

// MARK: CPU accounting

/// User + system CPU seconds of a process (`/proc/<pid>/stat`) or of one thread (`/proc/self/task/<tid>/stat`).
func cpuSeconds(statPath: String) -> Double {
    guard let text = try? String(contentsOfFile: statPath, encoding: .utf8), let close = text.lastIndex(of: ")")
    else { return 0 }
    let fields = text[text.index(close, offsetBy: 2)...].split(separator: " ")
    // After "pid (comm)": state is field 3, utime 14, stime 15 (1-based), so 11 and 12 here.
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

struct CPU {
    var pcscd: Double
    var hosts: Double
    var process: Double

    static func now(pcscd pid: String) -> CPU {
        var hosts = 0.0
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            if comm.hasPrefix("vpcd:") { hosts += cpuSeconds(statPath: "/proc/self/task/\(task)/stat") }
        }
        return CPU(
            pcscd: cpuSeconds(statPath: "/proc/\(pid)/stat"),
            hosts: hosts,
            process: cpuSeconds(statPath: "/proc/self/stat")
        )
    }

    static func - (lhs: CPU, rhs: CPU) -> CPU {
        CPU(pcscd: lhs.pcscd - rhs.pcscd, hosts: lhs.hosts - rhs.hosts, process: lhs.process - rhs.process)
    }
}

let pcscdPID =
    (try? String(contentsOfFile: "/run/pcscd/pcscd.pid", encoding: .utf8))?
    .split(whereSeparator: { !$0.isNumber }).first.map(String.init) ?? "0"

func seconds(_ duration: Duration) -> Double {
    let (s, atto) = duration.components
    return Double(s) + Double(atto) / 1e18
}

func format(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }

// MARK: Run

try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { await kernel.run() }
    let clock = ContinuousClock()
    let start = clock.now
    while await kernel.snapshot().readers.filter({ $0.state == .idle }).count < 6 {
        guard clock.now - start < .seconds(10) else { throw Failure(description: "the six readers did not appear") }
        try await Task.sleep(for: .milliseconds(20))
    }

    // Warm up every reader (pcscd notices each card within 0.4 s), then record one read's APDUs.
    for lane in 0..<6 { try await kernelRead(lane: lane) }
    for _ in 0..<20 { try await kernelRead(lane: 0) }
    // PROXIMA_PCSC_PROFILE=kernel: only `reads` kernel reads on reader 0, nothing else (for `perf record`).
    if environment["PROXIMA_PCSC_PROFILE"] == "kernel" {
        let begin = clock.now
        for _ in 0..<reads { try await kernelRead(lane: 0) }
        print("profile: \(reads) kernel reads, \(format(seconds(clock.now - begin) / Double(reads) * 1e6, 0)) µs/read")
        group.cancelAll()
        return
    }
    hosts[0].clearRecordedCommands()
    try await kernelRead(lane: 0)
    let apdus = hosts[0].recordedCommands
    var context = SCARDCONTEXT(0)
    try check(SCardEstablishContext(DWORD(SCARD_SCOPE_SYSTEM), nil, nil, &context), "SCardEstablishContext")
    for _ in 0..<20 { try rawRead(context: context, reader: readerNames[0], apdus: apdus, perConnectionContext: false) }

    // The PC/SC transport alone, without kernel and capability: connect (which sends GET DATA), the payment APDUs,
    // close.
    let direct = PCSCTransport(id: "direct", configuration: PCSCConfiguration(readerNames: [readerNames[0]]))
    let running = Task { try await direct.run() }
    let directReader = direct.readerID(forReaderNamed: readerNames[0])
    let paymentAPDUs = try apdus.dropFirst().map { try CommandAPDU(bytes: $0) }
    func transportRead() async throws {
        let channel = try await direct.openChannel(to: directReader, options: ConnectOptions())
        directReaderStatistics.withLock { $0 = channel.executorStatistics }
        // As the kernel runs a tap's body: on the reader's executor.
        try await withTaskExecutorPreference(channel.preferredTaskExecutor) {
            for command in paymentAPDUs {
                guard try await channel.transmit(command).status == .success else {
                    throw Failure(description: "APDU")
                }
            }
        }
        await channel.close()
    }
    // Until its monitor has listed the reader, the transport knows no such reader.
    while (try? await transportRead()) == nil {
        guard clock.now - start < .seconds(15) else { throw Failure(description: "the direct transport saw no card") }
        try await Task.sleep(for: .milliseconds(20))
    }
    for _ in 0..<20 { try await transportRead() }

    // 1. Overhead, interleaved: A B C D, then D C B A, …
    var times = [Duration](repeating: .zero, count: 4)
    var enqueues = [Int](repeating: 0, count: 4)
    var kernelExecutor = PCSCExecutorStatistics.Snapshot.zero
    var directExecutor = PCSCExecutorStatistics.Snapshot.zero
    var samples = [[Duration]](repeating: [], count: 4)
    for iteration in 0..<reads {
        for step in (iteration.isMultiple(of: 2) ? [0, 1, 2, 3] : [3, 2, 1, 0]) {
            let enqueuesBefore = poolEnqueues.load(ordering: .relaxed)
            let (kernelBefore, directBefore) = (snapshot(kernelReaderStatistics), snapshot(directReaderStatistics))
            let begin = clock.now
            switch step {
            case 0: try await kernelRead(lane: 0)
            case 1: try rawRead(context: context, reader: readerNames[0], apdus: apdus, perConnectionContext: false)
            case 2: try rawRead(context: context, reader: readerNames[0], apdus: apdus, perConnectionContext: true)
            default: try await transportRead()
            }
            let took = clock.now - begin
            enqueues[step] += poolEnqueues.load(ordering: .relaxed) - enqueuesBefore
            if step == 0 { kernelExecutor = kernelExecutor + (snapshot(kernelReaderStatistics) - kernelBefore) }
            if step == 3 { directExecutor = directExecutor + (snapshot(directReaderStatistics) - directBefore) }
            times[step] += took
            samples[step].append(took)
        }
    }
    let (kernelTime, rawTime, rawLikeTransportTime, transportTime) = (times[0], times[1], times[2], times[3])
    // Fairness: what the card received from one A read and one B read, compared command by command.
    hosts[0].clearRecordedCommands()
    try await kernelRead(lane: 0)
    let sentByA = hosts[0].recordedCommands
    hosts[0].clearRecordedCommands()
    try rawRead(context: context, reader: readerNames[0], apdus: apdus, perConnectionContext: false)
    let sentByB = hosts[0].recordedCommands
    hosts[0].clearRecordedCommands()
    let differing = zip(sentByA, sentByB).filter { $0 != $1 }
    let sameShape =
        sentByA.count == sentByB.count
        && zip(sentByA, sentByB).allSatisfy { $0.count == $1.count && $0.prefix(5) == $1.prefix(5) }
    _ = SCardReleaseContext(context)
    let perReadKernel = seconds(kernelTime) / Double(reads) * 1e6
    let perReadRaw = seconds(rawTime) / Double(reads) * 1e6
    let perReadRawLike = seconds(rawLikeTransportTime) / Double(reads) * 1e6
    let perReadTransport = seconds(transportTime) / Double(reads) * 1e6
    let median = { (step: Int) in seconds(samples[step].sorted()[samples[step].count / 2]) * 1e6 }
    print("== Payment read through pcscd + vpcd + card host: kernel vs a minimal libpcsclite client (interleaved)")
    print("APDUs per read: \(apdus.count) (GET DATA UID + \(apdus.count - 1) payment APDUs), \(reads) reads each")
    print("  A = kernel.tap on lane-0 (lease, SCardConnect, SCardBeginTransaction, GET DATA, the EMV capability's")
    print("      APDUs, SCardEndTransaction, SCardDisconnect, release); the ATR comes from the reader monitor")
    print("  B = the same PC/SC calls in a loop on one thread and one context: SCardConnect, SCardBeginTransaction,")
    print("      SCardTransmit of the APDUs one A read sent (recorded at the card), SCardEndTransaction,")
    print("      SCardDisconnect")
    print(
        "  same APDUs: the card received \(sentByA.count) commands from one A read and \(sentByB.count) from one B read;"
            + " \(sameShape ? "same headers and lengths" : "DIFFERENT headers or lengths"),"
            + " \(differing.count) differ in their bytes (A's GPO carries a fresh unpredictable number, 9F37, per read)"
    )
    print(
        "  A kernel tap + EMV capability:          \(format(perReadKernel, 0)) µs/read (median \(format(median(0), 0)))"
    )
    print(
        "  B libpcsclite, one context:             \(format(perReadRaw, 0)) µs/read (median \(format(median(1), 0)))"
    )
    print(
        "  C libpcsclite, context + SCardStatus:   \(format(perReadRawLike, 0)) µs/read (median \(format(median(2), 0)))"
    )
    print(
        "  D PC/SC transport alone (no kernel):    \(format(perReadTransport, 0)) µs/read (median \(format(median(3), 0)))"
    )
    print("  wall-time ratio A/B: \(format(perReadKernel / perReadRaw, 3))   (goal ≤ 1.05)")
    // On a loaded machine a few reads that lost the CPU move the means; the medians show the steady cost.
    print(
        "  of the medians: ratio A/B \(format(median(0) / median(1), 3)),"
            + " added per APDU \(format((median(0) - median(1)) / Double(apdus.count), 1)) µs"
            + " (D−B \(format((median(3) - median(1)) / Double(apdus.count), 1)),"
            + " A−D \(format((median(0) - median(3)) / Double(apdus.count), 1)))"
    )
    print("  wall-time ratio A/C: \(format(perReadKernel / perReadRawLike, 3))")
    print(
        "  added per APDU (A−B)/APDUs: \(format((perReadKernel - perReadRaw) / Double(apdus.count), 1)) µs   (goal ≤ 50)"
    )
    print(
        "  of which, per APDU: PC/SC calls the transport makes besides (C−B) \(format((perReadRawLike - perReadRaw) / Double(apdus.count), 1)) µs,"
    )
    print(
        "    the transport's Swift side (D−C) \(format((perReadTransport - perReadRawLike) / Double(apdus.count), 1)) µs,"
    )
    print(
        "    kernel tap and capability (A−D) \(format((perReadKernel - perReadTransport) / Double(apdus.count), 1)) µs"
    )
    if countingPoolEnqueues {
        let perRead = { (step: Int) in format(Double(enqueues[step]) / Double(reads), 1) }
        print(
            "  jobs enqueued on Swift's global pool per read: A \(perRead(0)), D \(perRead(3))"
                + " (B, C: \(perRead(1)), \(perRead(2)))"
        )
    }
    for (label, counts) in [("A", kernelExecutor), ("D", directExecutor)] {
        let perRead = { (count: Int) in format(Double(count) / Double(reads), 1) }
        print(
            "  \(label) on reader 0's executor per read: \(perRead(counts.hopsOntoQueue)) hops onto it"
                + " (actor jobs \(perRead(counts.actorJobsFromElsewhere)), task jobs \(perRead(counts.taskJobsFromElsewhere)),"
                + " blocking calls \(perRead(counts.blockingCallsFromElsewhere))); enqueued from the queue itself:"
                + " task jobs \(perRead(counts.taskJobsFromQueue)), blocking calls \(perRead(counts.blockingCallsFromQueue)),"
                + " actor jobs \(perRead(counts.actorJobsFromQueue)); diverted to the pool \(perRead(counts.diverted))"
        )
    }
    // Its reader monitor would wake up on every connection to reader 0 of the throughput runs.
    running.cancel()
    _ = await running.result

    // What the EMV capability and the card cost in CPU without any I/O: the card hosted in-process.
    let inProcess = try await measureInProcess(apdus: apdus)
    print(
        "  in-process, no I/O: EMV capability \(format(inProcess.capability, 0)) µs/read,"
            + " virtual card \(format(inProcess.card, 0)) µs/read"
    )

    // 2. Throughput: one reader, then six in parallel, `seconds` each; through the kernel, and with the minimal
    // client (one thread and one context per reader) as the baseline of what pcscd, vpcd and the card hosts allow.
    func measure(
        kernel: Bool,
        readers: Int,
        likeTransport: Bool = false
    ) async throws -> (readsPerSecond: Double, cpu: CPU, wall: Double) {
        let before = CPU.now(pcscd: pcscdPID)
        let begin = clock.now
        let total =
            kernel ? try await kernelLoops(readers) : try await rawLoops(readers, likeTransport: likeTransport)
        let wall = seconds(clock.now - begin)
        return (Double(total) / wall, CPU.now(pcscd: pcscdPID) - before, wall)
    }
    func kernelLoops(_ lanes: Int) async throws -> Int {
        let end = ContinuousClock.now + .seconds(seconds)
        return try await withThrowingTaskGroup(of: Int.self) { loops in
            for lane in 0..<lanes {
                loops.addTask {
                    var count = 0
                    while ContinuousClock.now < end {
                        try await kernelRead(lane: lane)
                        count += 1
                    }
                    return count
                }
            }
            return try await loops.reduce(0, +)
        }
    }
    func rawLoops(_ readers: Int, likeTransport: Bool) async throws -> Int {
        let end = ContinuousClock.now + .seconds(seconds)
        let counts = Mutex<[Result<Int, any Error>]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for index in 0..<readers {
                let name = readerNames[index]
                Thread {
                    let result = Result { () throws -> Int in
                        var context = SCARDCONTEXT(0)
                        try check(SCardEstablishContext(DWORD(SCARD_SCOPE_SYSTEM), nil, nil, &context), "context")
                        defer { _ = SCardReleaseContext(context) }
                        var count = 0
                        while ContinuousClock.now < end {
                            try rawRead(
                                context: context,
                                reader: name,
                                apdus: apdus,
                                perConnectionContext: likeTransport
                            )
                            count += 1
                        }
                        return count
                    }
                    let finished = counts.withLock { counts in
                        counts.append(result)
                        return counts.count == readers
                    }
                    if finished { done.resume() }
                }.start()
            }
        }
        return try counts.withLock { $0 }.reduce(0) { try $0 + $1.get() }
    }
    let rawOne = try await measure(kernel: false, readers: 1)
    let rawSix = try await measure(kernel: false, readers: 6)
    let likeOne = try await measure(kernel: false, readers: 1, likeTransport: true)
    let likeSix = try await measure(kernel: false, readers: 6, likeTransport: true)
    let one = try await measure(kernel: true, readers: 1)
    let six = try await measure(kernel: true, readers: 6)
    print()
    print(
        "== Throughput: payment reads per second, \(format(seconds, 0)) s each, "
            + "\(ProcessInfo.processInfo.activeProcessorCount) cores (CPU % of one core; per read in µs of CPU)"
    )
    for (label, result) in [
        ("A kernel, 1 reader ", one), ("A kernel, 6 readers", six), ("B client, 1 reader ", rawOne),
        ("B client, 6 readers", rawSix), ("C client, 1 reader ", likeOne), ("C client, 6 readers", likeSix),
    ] {
        let cpu = result.cpu
        let rest = cpu.process - cpu.hosts
        let count = result.readsPerSecond * result.wall
        print(
            "  \(label): \(format(result.readsPerSecond, 0)) reads/s   CPU pcscd \(format(cpu.pcscd / result.wall * 100, 0))%"
                + " (\(format(cpu.pcscd / count * 1e6, 0))), card hosts \(format(cpu.hosts / result.wall * 100, 0))%"
                + " (\(format(cpu.hosts / count * 1e6, 0))), reader side \(format(rest / result.wall * 100, 0))%"
                + " (\(format(rest / count * 1e6, 0))); total \(format((cpu.pcscd + cpu.process) / result.wall * 100, 0))%"
        )
    }
    let kernelScaling = six.readsPerSecond / one.readsPerSecond
    let clientScaling = rawSix.readsPerSecond / rawOne.readsPerSecond
    print(
        "  ratio 6/1: A kernel \(format(kernelScaling, 2))×;"
            + " B client \(format(clientScaling, 2))×;"
            + " C client \(format(likeSix.readsPerSecond / likeOne.readsPerSecond, 2))×"
    )
    print(
        "  kernel's 6/1 ÷ client's 6/1: \(format(kernelScaling / clientScaling, 2))   (goal ≥ 0.9);"
            + " 6 readers, kernel reads/s ÷ client reads/s: \(format(six.readsPerSecond / rawSix.readsPerSecond, 2))"
    )
    print("  (reader side: this process without the card hosts, i.e. kernel, transport and capability, or the client;")
    print(
        "   vpcd runs inside pcscd; the kernel's reader monitor runs throughout, so B and C pay for its wake-ups too)"
    )
    group.cancelAll()
}
for host in hosts { await host.remove() }
