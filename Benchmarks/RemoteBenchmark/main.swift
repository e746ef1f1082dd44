// Per-APDU overhead of a remote agent: a lane PC's reader reached through `RemoteAgent` → TLS 1.3 over loopback →
// the store's `RemoteTransport` (the External transport's session code over a TLS link).
//
// Baseline (same process, same run): the same virtual card in-process behind `InProcessCardChannel`, answering
// GET CHALLENGE (00 84 00 00 08) with 01..08 9000. Measured: the same N exchanges over the store's channel to that card
// on the agent. Per APDU the remote path adds: JSON encoding and parsing on both sides, two TLS records each way
// (encrypt + decrypt), two loopback TCP sends, and four thread wake-ups (the store's link thread, the agent's link
// thread, the agent's task, the store caller's task). Goal: at most 150 µs per APDU over the in-process card.
//
// Both ends run in this process (the agent would run on a lane PC): the figure is the software's, not the network's.
// Run from the package root: swift run -c release RemoteBenchmark [exchanges]

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

func remote(count: Int) async throws -> Duration {
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
    return try await withThrowingTaskGroup(of: Duration?.self) { group in
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
        let duration = try await run(channel, count: count)
        await channel.close()
        group.cancelAll()
        return duration
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

let floor = try tcpFloor(count: exchanges)
let inProcess = try await run(InProcessCardChannel(card: ChallengeCard(), recordsExchanges: false), count: exchanges)
let viaAgent = try await remote(count: exchanges)
let base = microseconds(inProcess, per: exchanges)
let tcp = microseconds(floor, per: exchanges)
let agent = microseconds(viaAgent, per: exchanges)
print("exchanges: \(exchanges), GET CHALLENGE, one card, agent and store in this process over 127.0.0.1")
print(String(format: "in-process card (baseline):    %8.2f µs/APDU", base))
print(String(format: "TCP echo round trip (floor):   %8.2f µs", tcp))
print(String(format: "remote agent, TLS 1.3 loopback:%8.2f µs/APDU  (%.0f× baseline)", agent, agent / base))
print(String(format: "remote overhead per APDU:      %8.2f µs (goal ≤ 150 µs)", agent - base))
print(String(format: "  as TCP echo round trips:     %8.1f (two per APDU, plus TLS, JSON, wake-ups)", agent / tcp))
