// Per-APDU overhead of a remote agent: a lane PC's reader reached through `RemoteAgent` → TLS 1.3 over loopback →
// the store's `RemoteTransport` (the External transport's session code over a TLS link).
//
// Baseline (same process, same run): the same virtual card in-process behind `InProcessCardChannel`, answering
// GET CHALLENGE (00 84 00 00 08) with 01..08 9000. Measured: the same N exchanges over the store's channel to that card
// on the agent, twice: as the kernel runs a tap (its body prefers the channel's task executor, the store link's
// thread), and from a task on the cooperative pool (one more wake-up per APDU: the answer resumes the caller there).
// Per APDU the remote path adds: a frame's JSON written and parsed on each side, one TLS record sealed and opened
// each way, two loopback TCP sends, and (as a tap runs) two thread wake-ups, one per side, each caused by the data
// itself: the agent answers on its link thread, the store's caller is resumed on its link thread.
//
// Floors (same run): a bare TCP echo and a bare TLS 1.3 echo (same certificates and TLS code) of an 80-byte message
// to a thread, blocking on this thread: two thread wake-ups per round trip, as the remote path at its best. The
// ratio to the TLS floor is the software's own cost; the difference to the floor is what it adds over the wire's.
// CPU time per APDU (getrusage, the whole process: both sides) and thread hops per APDU (jobs enqueued onto a link
// thread from another thread) are printed too, since wall-clock figures on a loaded machine vary.
//
// Both ends run in this process (the agent would run on a lane PC): the figure is the software's, not the network's.
// Run from the package root: swift build -c release --product RemoteBenchmark && .build/release/RemoteBenchmark [N]
// (`.build/release/RemoteBenchmark N tap-only`: only the remote exchanges as a tap runs, for strace and perf).

import ExternalTransport
import Foundation
import ProximaCardEmulator
import ProximaCore
import ProximaSystem
import RemoteTransport
import Synchronization

let exchanges = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 10_000
let challenge = try CommandAPDU(cla: 0, ins: 0x84, p1: 0, p2: 0, expectedLength: 8)
let expected: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8, 0x90, 0x00]
let keys = FileManager.default.currentDirectoryPath + "/Config/keys"

/// The card of ExternalBenchmark: GET CHALLENGE gives 01…08 9000.
struct ChallengeCard: VirtualCard {
    var name: String { "challenge card" }
    var atr: [UInt8] { [0x3B, 0x80, 0x80, 0x01, 0x01, 0x01] }
    var ats: [UInt8] { [] }
    var uid: [UInt8] { [0x04, 0xC0, 0xFF, 0xEE] }
    var technology: CardTechnology { .iso14443A }
    mutating func respond(to command: [UInt8]) -> [UInt8] {
        if command == [0x00, 0x84, 0x00, 0x00, 0x08] { return [1, 2, 3, 4, 5, 6, 7, 8, 0x90, 0x00] }
        return Array(command.prefix(4)) + [0x90, 0x00]
    }
}

/// The lane PC's transport: one reader whose card is always there, in-process.
final class ChallengeTransport: Transport {
    let id = "bench"
    let declaredReaders: [ReaderInfo]? = nil
    let events: AsyncStream<ReaderEvent>
    private let continuation: AsyncStream<ReaderEvent>.Continuation

    init() { (events, continuation) = AsyncStream.makeStream(of: ReaderEvent.self) }

    func run() async throws {
        continuation.yield(.appeared(ReaderInfo(id: "bench-1", name: "Bench reader", transport: id)))
        defer { continuation.finish() }
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }

    func connect(to reader: ReaderID, options: ConnectOptions) async throws -> any CardChannel {
        InProcessCardChannel(card: ChallengeCard(), reader: reader, recordsExchanges: false)
    }
}

func microseconds(_ duration: Duration, per count: Int) -> Double {
    let (seconds, attoseconds) = duration.components
    return (Double(seconds) * 1e6 + Double(attoseconds) / 1e12) / Double(count)
}

func run(_ channel: any CardChannel, count: Int) async throws -> Duration {
    for _ in 0..<min(count, 200) { _ = try await channel.transmit(challenge) }  // warm up
    let start = ContinuousClock.now
    for _ in 0..<count {
        let response = try await channel.transmit(challenge)
        guard response.bytes == expected else { throw ProximaError(.malformedData, "unexpected answer") }
    }
    return ContinuousClock.now - start
}

/// This process's CPU time so far (user + system, every thread).
func cpuTime() -> Duration {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    let user = Duration.seconds(usage.ru_utime.tv_sec) + .microseconds(usage.ru_utime.tv_usec)
    return user + .seconds(usage.ru_stime.tv_sec) + .microseconds(usage.ru_stime.tv_usec)
}

/// Wall-clock and CPU time of `body`.
func measured(_ body: () async throws -> Duration) async rethrows -> (wall: Duration, cpu: Duration) {
    let cpu = cpuTime()
    let wall = try await body()
    return (wall, cpuTime() - cpu)
}

struct RemoteFigures {
    var tap: (wall: Duration, cpu: Duration)
    var pool: (wall: Duration, cpu: Duration)
    /// Jobs enqueued per APDU onto the store link's thread from elsewhere, and by itself (as a tap).
    var storeHops: Double
    var storeLocal: Double
    /// The same on the agent's link thread.
    var agentHops: Double
    var agentLocal: Double
}

func remote(count: Int, fromThePoolToo: Bool = true) async throws -> RemoteFigures {
    let store = RemoteTransport(
        id: "store",
        configuration: RemoteConfiguration(
            certificateAuthorityFile: keys + "/remote-store-ca-test.pem",
            certificateFile: keys + "/remote-server-test.pem",
            privateKeyFile: keys + "/remote-server-test-private.pem",
            agents: [.init(name: "lane-pc-1", identity: .dnsName("lane-pc-1.agents.proxima.test"))]
        ),
        log: { _ in }
    )
    return try await withThrowingTaskGroup(of: RemoteFigures?.self) { group in
        group.addTask {
            try await store.run()
            return nil
        }
        guard let port = await store.waitUntilListening() else { fatalError("the store does not listen") }
        let agent = RemoteAgent(
            configuration: RemoteAgentConfiguration(
                store: RemoteEndpoint(host: "127.0.0.1", port: port),
                certificateFile: keys + "/remote-agent-test.pem",
                privateKeyFile: keys + "/remote-agent-test-private.pem",
                certificateAuthorityFile: keys + "/remote-store-ca-test.pem"
            ),
            transports: [ChallengeTransport()],
            log: { _ in }
        )
        group.addTask {
            try await agent.run()
            return nil
        }
        let reader = store.readerID(agent: "lane-pc-1", agentReader: "bench-1")
        for await event in store.events {
            if case .cardPresent(reader) = event { break }
        }
        let channel = try await store.connect(to: reader, options: ConnectOptions())
        guard let external = channel as? ExternalCardChannel else { fatalError("not an ExternalCardChannel") }
        // As the kernel runs a tap: the body prefers the channel's executor.
        let storeBefore = external.linkStatistics
        let agentBefore = agent.linkStatistics
        let tap = try await measured {
            try await withTaskExecutorPreference(channel.preferredTaskExecutor) { try await run(channel, count: count) }
        }
        let storeAfter = external.linkStatistics
        let agentAfter = agent.linkStatistics
        let pool = fromThePoolToo ? try await measured { try await run(channel, count: count) } : tap
        await channel.close()
        group.cancelAll()
        let transmits = Double(count + min(count, 200))
        func perAPDU(_ after: Int?, _ before: Int?) -> Double { Double((after ?? 0) - (before ?? 0)) / transmits }
        return RemoteFigures(
            tap: tap,
            pool: pool,
            storeHops: perAPDU(storeAfter.jobsFromElsewhere, storeBefore.jobsFromElsewhere),
            storeLocal: perAPDU(storeAfter.jobsFromThread, storeBefore.jobsFromThread),
            agentHops: perAPDU(agentAfter?.jobsFromElsewhere, agentBefore?.jobsFromElsewhere),
            agentLocal: perAPDU(agentAfter?.jobsFromThread, agentBefore?.jobsFromThread)
        )
    }
}

/// Round trips of an 80-byte message to an echo thread over loopback TCP, no TLS, blocking calls on this thread: what
/// two thread switches and four TCP segments cost on this machine now (the remote path has at least that twice over).
func tcpFloor(count: Int) throws -> Duration {
    let listener = try FileDescriptor.listenTCP(host: "127.0.0.1", port: 0)
    let port = listener.localPort
    let echo = Thread {
        var entry = pollfd(fd: listener.rawValue, events: Int16(POLLIN), revents: 0)
        _ = poll(&entry, 1, 5000)
        guard let (peer, _) = (try? listener.acceptConnection()) ?? nil else { return }
        var byte = [UInt8](repeating: 0, count: 80)
        while true {
            var entry = pollfd(fd: peer.rawValue, events: Int16(POLLIN), revents: 0)
            _ = poll(&entry, 1, 5000)
            let n = byte.withUnsafeMutableBytes { (try? peer.receive(into: $0)) ?? 0 }
            guard n > 0 else { break }
            try? peer.sendAll(Array(byte[..<n]))
        }
        try? peer.close()
    }
    echo.start()
    let client = try FileDescriptor.connectTCP(host: "127.0.0.1", port: port)
    client.setNoDelay()
    let message = [UInt8](repeating: 0x41, count: 80)
    var buffer = [UInt8](repeating: 0, count: 80)
    let start = ContinuousClock.now
    for _ in 0..<count {
        try client.sendAll(message)
        var received = 0
        while received < message.count {
            let n = try buffer.withUnsafeMutableBytes { raw in
                try client.receive(into: UnsafeMutableRawBufferPointer(rebasing: raw[received...]))
            }
            guard n > 0 else { fatalError("echo ended") }
            received += n
        }
    }
    let elapsed = ContinuousClock.now - start
    try client.close()
    try listener.close()
    return elapsed
}

func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(
        separator: " "
    )
        ?? "?"
}

/// Every figure of one run, measured off the main actor.
func measureAll() async throws -> (
    tcp: (wall: Duration, cpu: Duration), tls: (wall: Duration, cpu: Duration),
    inProcess: (wall: Duration, cpu: Duration), remote: RemoteFigures
) {
    let tcp = try await measured { try tcpFloor(count: exchanges) }
    let tls = try await measured {
        try TLSEchoFloor.measure(
            count: exchanges,
            certificateAuthority: keys + "/remote-store-ca-test.pem",
            serverCertificate: keys + "/remote-server-test.pem",
            serverKey: keys + "/remote-server-test-private.pem",
            clientCertificate: keys + "/remote-agent-test.pem",
            clientKey: keys + "/remote-agent-test-private.pem"
        )
    }
    let inProcess = try await measured {
        try await run(InProcessCardChannel(card: ChallengeCard(), recordsExchanges: false), count: exchanges)
    }
    return (tcp, tls, inProcess, try await remote(count: exchanges))
}

if CommandLine.arguments.dropFirst(2).first == "tap-only" {
    // For `strace -c -f` and `perf record`: only the remote exchanges as a tap runs (and their setup).
    let figures = try await remote(count: exchanges, fromThePoolToo: false)
    print(String(format: "remote agent, as a tap runs: %.2f µs/APDU", microseconds(figures.tap.wall, per: exchanges)))
    exit(0)
}

let loadBefore = loadAverage()
let (tcpFloorTime, tlsFloorTime, inProcess, figures) = try await measureAll()

func us(_ duration: Duration) -> Double { microseconds(duration, per: exchanges) }
let base = us(inProcess.wall)
let tcp = us(tcpFloorTime.wall)
let tls = us(tlsFloorTime.wall)
let tap = us(figures.tap.wall)
let pool = us(figures.pool.wall)
print("exchanges: \(exchanges), GET CHALLENGE, one card, agent and store in this process over 127.0.0.1")
print("load average: \(loadBefore) before, \(loadAverage()) after")
print("                                  wall µs/APDU   CPU µs/APDU")
print(String(format: "in-process card (baseline):      %9.2f     %9.2f", base, us(inProcess.cpu)))
print(String(format: "TCP echo round trip (floor):     %9.2f     %9.2f", tcp, us(tcpFloorTime.cpu)))
print(String(format: "TLS 1.3 echo round trip (floor): %9.2f     %9.2f", tls, us(tlsFloorTime.cpu)))
print(String(format: "remote agent, as a tap runs:     %9.2f     %9.2f", tap, us(figures.tap.cpu)))
print(String(format: "remote agent, from the pool:     %9.2f     %9.2f", pool, us(figures.pool.cpu)))
print(String(format: "remote overhead per APDU (tap):  %9.2f µs (goal ≤ 150 µs)", tap - base))
print(String(format: "  over the TLS echo floor:       %9.2f µs (%.2f× the floor)", tap - tls, tap / tls))
print(String(format: "  over the TCP echo floor:       %9.2f µs (%.2f× the floor)", tap - tcp, tap / tcp))
print(String(format: "remote overhead (from the pool): %9.2f µs (%.2f× the TLS floor)", pool - base, pool / tls))
print(
    String(
        format: "hops onto a link thread per APDU (tap): store %.2f (%.2f stayed on it), agent %.2f (%.2f stayed)",
        figures.storeHops,
        figures.storeLocal,
        figures.agentHops,
        figures.agentLocal
    )
)
