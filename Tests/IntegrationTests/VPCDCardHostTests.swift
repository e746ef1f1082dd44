import Foundation
import ProximaCore
import ProximaTestSupport
import Synchronization
import Testing

@testable import ProximaCardEmulator

/// `VPCDCardHost` against a fake vpcd: a TCP listener in the test that speaks vpcd's side of the protocol, so every
/// frame can be checked, including ones a real vpcd never sends. Needs no pcscd.
@Suite("VPCDCardHost against a fake vpcd", .timeLimit(.minutes(1)))
struct VPCDCardHostTests {
    static let card = ScriptedCard(
        name: "scripted test card",
        uid: [0x04, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66],
        ats: [0x06, 0x75, 0x77, 0x81, 0x02, 0x80],
        exchanges: [.init(command: [0x00, 0xA4, 0x04, 0x00, 0x02, 0x3F, 0x00], response: [0x6F, 0x00, 0x90, 0x00])]
    )
    static let select: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x02, 0x3F, 0x00]

    @Test func answersControlMessagesReaderCommandsAndAPDUs() async throws {
        let vpcd = try FakeVPCD()
        let events = EventRecorder()
        let host = VPCDCardHost(card: Self.card, endpoint: vpcd.endpoint, onEvent: events.record)
        try host.insert()
        #expect(host.isInserted)
        let link = try await vpcd.accept()

        // Power on, reset and power off are not answered: the next frame is the ATR.
        try link.send([0x01])
        try link.send([0x02])
        try link.send([0x00])
        try link.send([0x04])
        #expect(try await link.receive() == Self.card.atr)
        // An unknown control byte is ignored too.
        try link.send([0x07])
        try link.send(Self.select)
        #expect(try await link.receive() == [0x6F, 0x00, 0x90, 0x00])
        // PC/SC Part 3 GET DATA: answered as a reader would, not by the card.
        try link.send([0xFF, 0xCA, 0x00, 0x00, 0x00])
        #expect(try await link.receive() == Self.card.uid + [0x90, 0x00])
        try link.send([0xFF, 0xCA, 0x00, 0x00, 0x04])
        #expect(try await link.receive() == [0x6C, 0x07])
        try link.send([0xFF, 0xCA, 0x01, 0x00, 0x00])
        #expect(try await link.receive() == [0x80, 0x90, 0x00])
        try link.send([0xFF, 0x00, 0x48, 0x00, 0x00])
        #expect(try await link.receive() == [0x6A, 0x81])
        // An APDU the card does not know gets its status word; a 2-byte "APDU" too, without trapping.
        try link.send([0x00, 0xB0, 0x00, 0x00, 0x00])
        #expect(try await link.receive().suffix(2).count == 2)
        try link.send([0x00, 0xB0])
        #expect(try await link.receive().count >= 2)
        #expect(host.commandsAnswered == 7)

        await host.remove()
        #expect(!host.isInserted)
        #expect(try await link.receiveEndOfStream())
        #expect(
            events.all == [
                .inserted(presence: 1, endpoint: vpcd.endpoint),
                .removed(presence: 1, endpoint: vpcd.endpoint, reason: .removed, commands: 7),
            ]
        )
    }

    @Test func frameSplitAcrossWritesAndSeveralFramesInOneWrite() async throws {
        let vpcd = try FakeVPCD()
        let host = VPCDCardHost(card: Self.card, endpoint: vpcd.endpoint)
        try host.insert()
        let link = try await vpcd.accept()
        let frame = [0x00, UInt8(Self.select.count)] + Self.select
        for byte in frame {
            try link.write([byte])
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(try await link.receive() == [0x6F, 0x00, 0x90, 0x00])
        try link.write([0x00, 0x01, 0x04] + frame + [0x00, 0x01, 0x04])
        #expect(try await link.receive() == Self.card.atr)
        #expect(try await link.receive() == [0x6F, 0x00, 0x90, 0x00])
        #expect(try await link.receive() == Self.card.atr)
        await host.remove()
    }

    @Test func vpcdClosingTheConnectionEndsThePresence() async throws {
        let vpcd = try FakeVPCD()
        let events = EventRecorder()
        let host = VPCDCardHost(card: Self.card, endpoint: vpcd.endpoint, onEvent: events.record)
        try host.insert()
        let link = try await vpcd.accept()
        try link.send([0x04])
        _ = try await link.receive()
        link.close()
        let reason = await host.waitUntilRemoved()
        #expect(reason == .closedByReader("end of stream"))
        #expect(!host.isInserted)
        // The host can insert again at once.
        try host.insert()
        let again = try await vpcd.accept()
        try again.send(Self.select)
        #expect(try await again.receive() == [0x6F, 0x00, 0x90, 0x00])
        await host.remove()
        #expect(events.all.count == 4)
    }

    @Test func malformedFramesEndThePresenceWithAProtocolError() async throws {
        let vpcd = try FakeVPCD()
        let host = VPCDCardHost(card: Self.card, endpoint: vpcd.endpoint)
        // A zero-length frame is not part of the protocol.
        try host.insert()
        let link = try await vpcd.accept()
        try link.write([0x00, 0x00])
        #expect(await host.waitUntilRemoved() == .protocolError("vpcd sent an empty frame (length 0)"))
        #expect(try await link.receiveEndOfStream())
        // A frame cut short by the end of the connection.
        try host.insert()
        let cut = try await vpcd.accept()
        try cut.write([0x00, 0x10, 0x00, 0xA4])
        cut.close()
        #expect(await host.waitUntilRemoved() == .closedByReader("the connection ended inside a frame"))
        // The largest frame the length field allows is read whole and answered.
        try host.insert()
        let large = try await vpcd.accept()
        try large.send([0x80, 0x10, 0x00, 0x00, 0x00, 0xFF, 0xFF] + [UInt8](repeating: 0xAB, count: 0xFFF8))
        #expect(try await large.receive().count == 2)
        await host.remove()
    }

    @Test func faultsPullTheCardMidExchangeOrMuteIt() async throws {
        let vpcd = try FakeVPCD()
        let host = VPCDCardHost(
            card: Self.card,
            endpoint: vpcd.endpoint,
            options: VPCDCardHost.Options(
                recordsCommands: true,
                faults: VPCDCardHost.Faults(removeAfterCommands: 1)
            )
        )
        try host.insert()
        let link = try await vpcd.accept()
        try link.send(Self.select)
        #expect(try await link.receive() == [0x6F, 0x00, 0x90, 0x00])
        try link.send(Self.select)
        #expect(try await link.receiveEndOfStream())
        #expect(await host.waitUntilRemoved() == .pulledMidExchange(command: 2))
        #expect(host.recordedCommands == [Self.select, Self.select])

        host.faults = VPCDCardHost.Faults(muteAfterCommands: 0)
        try host.insert()
        let mute = try await vpcd.accept()
        try mute.send(Self.select)
        #expect(try await mute.receive(within: .milliseconds(300)) == nil, "a mute card answers nothing")
        #expect(host.isInserted)
        await host.remove()
        #expect(try await mute.receiveEndOfStream())
    }

    @Test func scheduleInsertsAndRemovesTheCard() async throws {
        let vpcd = try FakeVPCD()
        let events = EventRecorder()
        let host = VPCDCardHost(card: Self.card, endpoint: vpcd.endpoint, onEvent: events.record)
        let schedule = VPCDCardHost.Schedule(taps: 3, present: .milliseconds(60), absent: .milliseconds(30))
        let accepting = Task {
            var links: [FakeVPCDLink] = []
            for _ in 0..<3 { links.append(try await vpcd.accept()) }
            return links
        }
        try await host.run(schedule)
        let links = try await accepting.value
        for link in links { #expect(try await link.receiveEndOfStream()) }
        #expect(host.presenceCount == 3)
        #expect(!host.isInserted)
        #expect(events.all.filter { if case .inserted = $0 { true } else { false } }.count == 3)
        #expect(events.all.filter { if case .removed(_, _, .removed, _) = $0 { true } else { false } }.count == 3)
    }

    @Test func scheduleWaitsForVPCDAndStopsWhenCancelled() async throws {
        let vpcd = try FakeVPCD()
        let endpoint = vpcd.endpoint
        vpcd.stopListening()
        let refusals = Mutex(0)
        let host = VPCDCardHost(card: Self.card, endpoint: endpoint)
        let clock = ManualClock()
        let running = Task {
            try await host.run(VPCDCardHost.Schedule(retryDelay: .milliseconds(20)), clock: clock) { error in
                #expect(error.code == .readerUnavailable)
                refusals.withLock { $0 += 1 }
            }
        }
        // Each refused attempt sleeps on the manual clock before the next one; the delay doubles.
        var delays: [Duration] = []
        for _ in 0..<5 {
            await clock.waitForSleepers(1)
            let wake = try #require(clock.pendingDeadlines.first)
            delays.append(clock.now.duration(to: wake))
            clock.advance(to: wake)
        }
        await clock.waitForSleepers(1)
        #expect(
            delays == [.milliseconds(20), .milliseconds(40), .milliseconds(80), .milliseconds(160), .milliseconds(320)]
        )
        #expect(refusals.withLock { $0 } == 1, "one report per outage, not one per attempt")
        #expect(host.presenceCount == 0)
        let listening = try FakeVPCD(port: endpoint.port)
        clock.advance(by: .seconds(2))  // the next attempt finds vpcd listening
        let link = try await listening.accept()
        try await waitUntil("the card in the field", within: .seconds(5)) { host.isInserted }
        running.cancel()
        try await running.value
        #expect(!host.isInserted)
        #expect(try await link.receiveEndOfStream())
    }

    @Test func insertFailsClearlyWithoutVPCDAndTwiceInARow() async throws {
        let vpcd = try FakeVPCD()
        let endpoint = vpcd.endpoint
        vpcd.stopListening()
        let host = VPCDCardHost(card: Self.card, endpoint: endpoint)
        #expect {
            try host.insert()
        } throws: { error in
            let error = error as? ProximaError
            return error?.code == .readerUnavailable && error?.reason.contains("\(endpoint.port)") == true
        }
        let listening = try FakeVPCD(port: endpoint.port)
        try host.insert()
        #expect(throws: ProximaError(.invalidArgument)) { try host.insert() }
        _ = try await listening.accept()
        await host.remove()
    }

    @Test(
        arguments: [
            ("127.0.0.1:35963", "127.0.0.1", 35963), ("35964", "127.0.0.1", 35964), ("localhost:1", "localhost", 1),
        ] as [(String, String, Int)]
    )
    func endpointParsing(_ text: String, _ host: String, _ port: Int) {
        #expect(VPCDCardHost.Endpoint(parsing: text) == VPCDCardHost.Endpoint(host: host, port: UInt16(port)))
    }

    @Test(arguments: ["", ":1", "host:", "host:0", "host:65536", "a:b:c", "127.0.0.1:x"])
    func endpointParsingRejects(_ text: String) {
        #expect(VPCDCardHost.Endpoint(parsing: text) == nil)
    }

    @Test func historicalBytesOfAnATS() {
        #expect(VPCDCardHost.historicalBytes(ofATS: [0x05, 0x78, 0x80, 0x70, 0x02]) == [])
        #expect(VPCDCardHost.historicalBytes(ofATS: [0x06, 0x75, 0x77, 0x81, 0x02, 0x80]) == [0x80])
        #expect(VPCDCardHost.historicalBytes(ofATS: [0x04, 0x00, 0xAA, 0xBB]) == [0xAA, 0xBB])
        #expect(VPCDCardHost.historicalBytes(ofATS: [0x02, 0x70]) == [])
        #expect(VPCDCardHost.historicalBytes(ofATS: [0x09, 0x00, 0x01]) == [0x01])
        #expect(VPCDCardHost.historicalBytes(ofATS: []) == [])
    }

    @Test func frameReaderIsTotal() {
        var reader = VPCDFrameReader()
        reader.append([0x00])
        #expect(reader.next() == nil)
        reader.append([0x02, 0xAA])
        #expect(reader.next() == nil)
        #expect(reader.hasPartialFrame)
        reader.append([0xBB, 0x00, 0x01, 0x04])
        #expect(reader.next() == .payload([0xAA, 0xBB]))
        #expect(reader.next() == .payload([0x04]))
        #expect(reader.next() == nil)
        #expect(!reader.hasPartialFrame)
        reader.append([0x00, 0x00])
        #expect(reader.next() == .invalid("vpcd sent an empty frame (length 0)"))
        // Pseudo-random garbage never traps and never yields more than the bytes allow.
        var generator = SplitMix64(seed: 7)
        for _ in 0..<200 {
            var garbage = VPCDFrameReader()
            let count = Int(generator.next() % 600)
            garbage.append((0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
            var frames = 0
            while garbage.next() != nil { frames += 1 }
            #expect(frames <= count / 2)
        }
    }
}

// MARK: A fake vpcd

/// Records a host's events.
final class EventRecorder: Sendable {
    private let events = Mutex<[VPCDCardHost.Event]>([])
    func record(_ event: VPCDCardHost.Event) { events.withLock { $0.append(event) } }
    var all: [VPCDCardHost.Event] { events.withLock { $0 } }
}

/// Runs blocking socket work on a thread of its own, off the cooperative pool (and off Dispatch's global queue,
/// whose few threads tests waiting for the live pcscd lock may hold).
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

struct SocketFailure: Error, CustomStringConvertible {
    var description: String
}

/// vpcd's side: listens on 127.0.0.1 and accepts the host's connections.
final class FakeVPCD: Sendable {
    private let listener: Mutex<Int32?>
    let endpoint: VPCDCardHost.Endpoint

    /// - Parameter port: 0 for any free port.
    init(port: UInt16 = 0) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw SocketFailure(description: "socket: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && listen(descriptor, 4) == 0
                    && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw SocketFailure(description: "bind/listen on 127.0.0.1:\(port): errno \(errno)")
        }
        listener = Mutex(descriptor)
        endpoint = VPCDCardHost.Endpoint(port: UInt16(bigEndian: address.sin_port))
    }

    deinit { stopListening() }

    func stopListening() {
        listener.withLock { descriptor in
            if let open = descriptor { close(open) }
            descriptor = nil
        }
    }

    /// The next connection, within `limit`.
    func accept(within limit: Duration = .seconds(5)) async throws -> FakeVPCDLink {
        guard let descriptor = listener.withLock({ $0 }) else { throw SocketFailure(description: "not listening") }
        let milliseconds = Int32(limit.components.seconds * 1000)
        return try await offPool {
            var poll = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&poll, 1, milliseconds) == 1 else {
                throw SocketFailure(description: "no connection within \(limit)")
            }
            let connection = Glibc.accept(descriptor, nil, nil)
            guard connection >= 0 else { throw SocketFailure(description: "accept: errno \(errno)") }
            return FakeVPCDLink(descriptor: connection)
        }
    }
}

/// One accepted connection, seen from vpcd's side.
final class FakeVPCDLink: Sendable {
    private let descriptor: Mutex<Int32?>

    init(descriptor: Int32) { self.descriptor = Mutex(descriptor) }

    deinit { close() }

    func close() {
        descriptor.withLock { descriptor in
            if let open = descriptor { Glibc.close(open) }
            descriptor = nil
        }
    }

    private var open: Int32 {
        get throws {
            guard let open = descriptor.withLock({ $0 }) else { throw SocketFailure(description: "closed") }
            return open
        }
    }

    /// Sends one frame: length, then payload.
    func send(_ payload: [UInt8]) throws {
        try write([UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload)
    }

    /// Writes raw bytes.
    func write(_ bytes: [UInt8]) throws {
        let descriptor = try open
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { raw in
                Glibc.send(descriptor, raw.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { throw SocketFailure(description: "send: errno \(errno)") }
            sent += count
        }
    }

    /// The next frame's payload; `nil` when nothing arrived within `limit`.
    func receive(within limit: Duration) async throws -> [UInt8]? {
        let descriptor = try open
        return try await offPool {
            guard let header = try Self.read(descriptor, count: 2, within: limit) else { return nil }
            let length = Int(header[0]) << 8 | Int(header[1])
            return try Self.read(descriptor, count: length, within: limit)
        }
    }

    /// The next frame's payload, which must arrive within 5 s.
    func receive() async throws -> [UInt8] {
        guard let payload = try await receive(within: .seconds(5)) else {
            throw SocketFailure(description: "no frame within 5 s")
        }
        return payload
    }

    enum Closing: Equatable {
        case endOfStream
        case reset
    }

    /// How the host closed the connection (within 5 s) with nothing more sent; `nil` when it did not, or sent more.
    func receiveClosing() async throws -> Closing? {
        let descriptor = try open
        return try await offPool {
            var poll = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&poll, 1, 5000) == 1 else { return nil }
            var byte: UInt8 = 0
            let received = recv(descriptor, &byte, 1, 0)
            if received == 0 { return .endOfStream }
            return received < 0 && errno == ECONNRESET ? .reset : nil
        }
    }

    /// Whether the host closed the connection in order (within 5 s), with nothing more sent.
    func receiveEndOfStream() async throws -> Bool {
        try await receiveClosing() == .endOfStream
    }

    private static func read(_ descriptor: Int32, count: Int, within limit: Duration) throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        let milliseconds = Int32(limit.components.seconds * 1000 + limit.components.attoseconds / 1_000_000_000_000_000)
        while filled < count {
            var poll = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&poll, 1, milliseconds) == 1 else { return nil }
            let received = buffer.withUnsafeMutableBytes { raw in
                recv(descriptor, raw.baseAddress! + filled, count - filled, 0)
            }
            guard received > 0 else { throw SocketFailure(description: "the host closed the connection") }
            filled += received
        }
        return buffer
    }
}
