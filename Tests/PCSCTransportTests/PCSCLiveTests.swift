import Foundation
import ProximaCardEmulator
import ProximaCore
import ProximaTestSupport
import Synchronization
import Testing

@testable import PCSCTransport

/// The scripted card the live tests put on the harness's vpcd readers (`LivePCSCD`, in ProximaTestSupport).
enum LivePCSC {
    /// The restart test stops pcscd, so it runs only when asked (`PROXIMA_PCSCD_RESTART_TEST=1`) under the harness.
    static let canRestart = LivePCSCD.canRestart && LivePCSCD.restartTestsRequested

    static let uid: [UInt8] = [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6]
    /// A PC/SC Part 3 pseudo-ATR of an ISO/IEC 14443-4 Type A card without historical bytes.
    static let atr: [UInt8] = [0x3B, 0x80, 0x80, 0x01, 0x01]
    static let selectVisa: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xA0, 0x00, 0x00, 0x00, 0x03, 0x10, 0x10, 0x00]
    static let selectAnswer: [UInt8] = [0x6F, 0x09, 0x84, 0x07, 0xA0, 0x00, 0x00, 0x00, 0x03, 0x10, 0x10, 0x90, 0x00]

    /// The scripted card: GET DATA UID, SELECT Visa, and `6700` for any extended APDU but chained short ones.
    static func answer(_ command: [UInt8]) -> [UInt8] {
        if command == [0xFF, 0xCA, 0x00, 0x00, 0x00] { return uid + [0x90, 0x00] }
        if command == selectVisa { return selectAnswer }
        let isExtended = command.count > 5 && command[4] == 0x00
        if isExtended { return [0x67, 0x00] }
        if command.count > 4 && command[1] == 0xDA {
            // PUT DATA: a chunk with the chaining bit gets 9000, the last chunk echoes the byte count it carried.
            return command[0] & 0x10 != 0 ? [0x90, 0x00] : [UInt8(command.count - 5), 0x90, 0x00]
        }
        return [0x6D, 0x00]
    }
}

/// Records a transport's events and lets a test wait for the next one that matches.
actor EventLog {
    private var events: [ReaderEvent] = []
    private var finished = false
    private var waiters: [Int: (from: Int, predicate: @Sendable (ReaderEvent) -> Bool, continuation: Continuation)] =
        [:]
    private var nextWaiter = 0
    private typealias Continuation = CheckedContinuation<Int, any Error>

    var count: Int { events.count }
    var all: [ReaderEvent] { events }
    var isFinished: Bool { finished }

    func append(_ event: ReaderEvent) {
        events.append(event)
        for (key, waiter) in waiters where waiter.predicate(event) && events.count - 1 >= waiter.from {
            waiters[key] = nil
            waiter.continuation.resume(returning: events.count - 1)
        }
    }

    func finish() {
        finished = true
        for waiter in waiters.values { waiter.continuation.resume(throwing: WaitTimeout("events finished")) }
        waiters = [:]
    }

    /// The index of the first event at or after `from` that matches, waiting for it up to `timeout`.
    func index(
        from: Int = 0,
        within timeout: Duration = .seconds(10),
        where predicate: @escaping @Sendable (ReaderEvent) -> Bool
    ) async throws -> Int {
        if let index = events.indices.first(where: { $0 >= from && predicate(events[$0]) }) { return index }
        if finished { throw WaitTimeout("events finished before a match") }
        nextWaiter += 1
        let key = nextWaiter
        return try await withThrowingTaskGroup(of: Int?.self) { group in
            group.addTask {
                try await self.wait(key: key, from: from, predicate: predicate)
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            self.drop(key: key)
            guard let first else { throw WaitTimeout("no matching event within \(timeout): \(events)") }
            return first
        }
    }

    /// Waits for `event` at or after `from`; returns the index after it (for the next wait).
    @discardableResult
    func expect(_ event: ReaderEvent, after from: Int = 0, within timeout: Duration = .seconds(10)) async throws -> Int
    {
        try await index(from: from, within: timeout) { $0 == event } + 1
    }

    private func wait(key: Int, from: Int, predicate: @escaping @Sendable (ReaderEvent) -> Bool) async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            // An event appended after index(from:) looked, before this child task got here, counts too.
            if let index = events.indices.first(where: { $0 >= from && predicate(events[$0]) }) {
                continuation.resume(returning: index)
                return
            }
            waiters[key] = (from, predicate, continuation)
        }
    }

    private func drop(key: Int) {
        waiters.removeValue(forKey: key)?.continuation.resume(throwing: CancellationError())
    }
}

/// Runs `transport` and records its events while `body` runs; then cancels it and checks that it stopped cleanly.
func withRunning(
    _ transport: PCSCTransport,
    _ body: (EventLog) async throws -> Void
) async throws {
    let log = EventLog()
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await transport.run() }
        group.addTask {
            for await event in transport.events { await log.append(event) }
            await log.finish()
        }
        try await body(log)
        group.cancelAll()
        try await group.waitForAll()
    }
    #expect(await log.isFinished, "run() finishes the event stream when cancelled")
}

/// What `operation` threw, as a Proxima error code; `nil` when it returned or threw something else.
func errorCode<Value>(_ operation: () async throws -> Value) async -> ProximaError.Code? {
    do {
        _ = try await operation()
        return nil
    } catch let error as ProximaError {
        return error.code
    } catch {
        return nil
    }
}

/// The Proxima error code of a failed result.
func errorCode<Value>(of result: Result<Value, any Error>) -> ProximaError.Code? {
    guard case .failure(let error) = result else { return nil }
    return (error as? ProximaError)?.code
}

@Suite(
    "PC/SC transport against a real pcscd with vpcd readers",
    .enabled(if: LivePCSCD.isAvailable),
    .serialized,
    .livePCSCD(.shared)
)
struct PCSCLiveTests {
    let first = LivePCSCD.readers[0]
    let second = LivePCSCD.readers[1]

    func makeTransport(id: String = "pcsc", exclusive: Bool = false) -> PCSCTransport {
        PCSCTransport(
            id: id,
            configuration: PCSCConfiguration(readerNames: [first.name, second.name], exclusive: exclusive)
        )
    }

    @Test("reader appears, card present, connect, SELECT, card removed, transmit fails with cardRemoved")
    func cardLifecycle() async throws {
        let transport = makeTransport()
        let reader = transport.readerID(forReaderNamed: first.name)
        #expect(reader == ReaderID("pcsc/\(first.name)"))
        try await withRunning(transport) { log in
            var next = try await log.expect(
                .appeared(ReaderInfo(id: reader, name: first.name, transport: "pcsc", supportsExtendedLength: true))
            )
            let card = try VirtualICC(port: first.port, atr: LivePCSC.atr, answer: LivePCSC.answer)
            next = try await log.expect(.cardPresent(reader), after: next)

            let channel = try await transport.openChannel(to: reader, options: ConnectOptions())
            #expect(channel.reader == reader)
            #expect(channel.readerName == first.name)
            #expect(channel.atr == LivePCSC.atr)
            #expect(channel.uid == LivePCSC.uid)
            #expect(channel.technology == .iso14443A)
            #expect(channel.supportsExtendedLength)
            #expect(channel.maximumCommandLength == 65_544)

            let response = try await channel.transmit(CommandAPDU(bytes: LivePCSC.selectVisa))
            #expect(response.bytes == LivePCSC.selectAnswer)
            #expect(card.received == [[0xFF, 0xCA, 0x00, 0x00, 0x00], LivePCSC.selectVisa])

            // Connecting and exchanging APDUs is no card event (pcscd's per-reader event counter only counts
            // insertions and removals).
            let sofar = await log.all
            #expect(sofar.filter { $0 == .cardPresent(reader) }.count == 1)
            #expect(!sofar.contains(.cardRemoved(reader)))

            await card.remove()
            next = try await log.expect(.cardRemoved(reader), after: next)
            let code = await errorCode { try await channel.transmit(CommandAPDU(bytes: LivePCSC.selectVisa)) }
            #expect(code == .cardRemoved)
            await channel.close()
            let closed = await errorCode { try await channel.transmit(CommandAPDU(bytes: LivePCSC.selectVisa)) }
            #expect(closed == .transmitFailed)

            // The next card on the same reader: a new presence and a new connection.
            let again = try VirtualICC(port: first.port, atr: LivePCSC.atr, answer: LivePCSC.answer)
            next = try await log.expect(.cardPresent(reader), after: next)
            let nextChannel = try await transport.connect(to: reader, options: ConnectOptions())
            let answer = try await nextChannel.transmit(CommandAPDU(bytes: LivePCSC.selectVisa))
            #expect(answer.bytes == LivePCSC.selectAnswer)
            await nextChannel.close()
            await again.remove()
            try await log.expect(.cardRemoved(reader), after: next)
        }
    }

    @Test("transmits of a task that prefers the channel's executor run on the reader's queue without hopping onto it")
    func transmitsOnTheReadersExecutor() async throws {
        let transport = makeTransport()
        let reader = transport.readerID(forReaderNamed: first.name)
        try await withRunning(transport) { log in
            var next = try await log.expect(
                .appeared(ReaderInfo(id: reader, name: first.name, transport: "pcsc", supportsExtendedLength: true))
            )
            let card = try VirtualICC(port: first.port, atr: LivePCSC.atr, answer: LivePCSC.answer)
            next = try await log.expect(.cardPresent(reader), after: next)
            let channel = try await transport.openChannel(to: reader, options: ConnectOptions())
            let executor = try #require(channel.preferredTaskExecutor)
            let select = try CommandAPDU(bytes: LivePCSC.selectVisa)

            // From the cooperative pool, each transmit is a hop onto the reader's queue.
            let start = channel.executorStatistics.snapshot()
            for _ in 0..<5 { #expect(try await channel.transmit(select).bytes == LivePCSC.selectAnswer) }
            let fromPool = channel.executorStatistics.snapshot() - start
            #expect(fromPool.blockingCallsFromElsewhere == 5)
            #expect(fromPool.blockingCallsFromQueue == 0)

            // Preferring the reader's executor, the task itself runs there: no transmit hops onto the queue.
            let answers = try await withTaskExecutorPreference(executor) {
                var answers: [[UInt8]] = []
                for _ in 0..<5 { answers.append(try await channel.transmit(select).bytes) }
                return answers
            }
            let onReader = channel.executorStatistics.snapshot() - start - fromPool
            #expect(answers == Array(repeating: LivePCSC.selectAnswer, count: 5))
            #expect(onReader.blockingCallsFromQueue == 5)
            #expect(onReader.blockingCallsFromElsewhere == 0)
            #expect(onReader.diverted == 0)
            #expect(card.received.count == 11)

            await channel.close()
            await card.remove()
            try await log.expect(.cardRemoved(reader), after: next)
        }
    }

    @Test("a task on the reader's executor gives up on a mute card's transmit and goes on off the blocked queue")
    func muteCardOnTheReadersExecutor() async throws {
        let transport = makeTransport()
        let reader = transport.readerID(forReaderNamed: first.name)
        try await withRunning(transport) { log in
            // GET DATA (the UID) is answered; the SELECT after it never is.
            let card = try VirtualICC(
                port: first.port,
                atr: LivePCSC.atr,
                faults: VPCDCardHost.Faults(muteAfterCommands: 1),
                answer: LivePCSC.answer
            )
            let next = try await log.expect(.cardPresent(reader))
            let channel = try await transport.openChannel(to: reader, options: ConnectOptions())
            let executor = try #require(channel.preferredTaskExecutor)
            let start = channel.executorStatistics.snapshot()
            let transmitting = Task {
                await errorCode {
                    try await withTaskExecutorPreference(executor) {
                        try await channel.transmit(CommandAPDU(bytes: LivePCSC.selectVisa))
                    }
                }
            }
            // The SELECT has reached the card: SCardTransmit is blocked on the reader's queue.
            for _ in 0..<500 where card.received.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(card.received == [[0xFF, 0xCA, 0x00, 0x00, 0x00], LivePCSC.selectVisa])
            transmitting.cancel()
            // A task stuck behind the blocked call would only end when the card leaves: the watchdog takes it away
            // so that the test fails instead of hanging.
            let watchdogFired = Atomic<Bool>(false)
            let watchdog = Task {
                try await Task.sleep(for: .seconds(5))
                watchdogFired.store(true, ordering: .relaxed)
                await card.remove()
            }
            let code = await transmitting.value
            watchdog.cancel()
            let counts = channel.executorStatistics.snapshot() - start
            let waitedForTheCard = watchdogFired.load(ordering: .relaxed)
            #expect(!waitedForTheCard, "the cancelled transmit waited for the mute card")
            #expect(code == .cancelled)
            #expect(counts.diverted >= 1)
            #expect(counts.blockingCallsFromQueue == 1)

            // Taking the card away ends the blocked SCardTransmit; the close queued behind it then runs.
            await card.remove()
            await channel.close()
            try await log.expect(.cardRemoved(reader), after: next)
        }
    }

    @Test("connect waits for the card, then connects")
    func connectWaitsForCard() async throws {
        let transport = makeTransport()
        let reader = transport.readerID(forReaderNamed: second.name)
        try await withRunning(transport) { log in
            try await log.expect(
                .appeared(ReaderInfo(id: reader, name: second.name, transport: "pcsc", supportsExtendedLength: true))
            )
            try await withThrowingTaskGroup(of: PCSCCardChannel.self) { group in
                group.addTask { try await transport.openChannel(to: reader, options: ConnectOptions()) }
                // No event says the connect is waiting: give it time to wait (or wrongly fail) before the card comes.
                try await Task.sleep(for: .milliseconds(300))
                #expect(await log.all.contains(.cardPresent(reader)) == false)
                let card = try VirtualICC(port: second.port, atr: LivePCSC.atr, answer: LivePCSC.answer)
                let channel = try #require(try await group.next())
                #expect(channel.uid == LivePCSC.uid)
                await channel.close()
                await card.remove()
            }
            try await log.expect(.cardRemoved(reader))
        }
    }

    @Test("a connect waiting for a card is cancellable; an unknown reader is readerVanished")
    func cancelAndUnknown() async throws {
        let transport = makeTransport()
        let reader = transport.readerID(forReaderNamed: second.name)
        try await withRunning(transport) { log in
            _ = try await log.index { if case .appeared(let info) = $0 { info.id == reader } else { false } }
            let waiting = Task { try await transport.connect(to: reader, options: ConnectOptions()) }
            // No event says the connect is waiting for a card: give it time to get there before cancelling it.
            try await Task.sleep(for: .milliseconds(200))
            waiting.cancel()
            #expect(errorCode(of: await waiting.result) == .cancelled)

            let unknown = ReaderID("pcsc/No Such Reader 00 00")
            await #expect(throws: ProximaError(.readerVanished)) {
                try await transport.connect(to: unknown, options: ConnectOptions())
            }
        }
    }

    @Test("an exclusive connection makes another client's connect fail with readerBusy")
    func sharingViolation() async throws {
        let holder = makeTransport(id: "holder", exclusive: true)
        let other = makeTransport(id: "other")
        let holderReader = holder.readerID(forReaderNamed: first.name)
        let otherReader = other.readerID(forReaderNamed: first.name)
        try await withRunning(holder) { holderLog in
            let card = try VirtualICC(port: first.port, atr: LivePCSC.atr, answer: LivePCSC.answer)
            let next = try await holderLog.expect(.cardPresent(holderReader))
            let channel = try await holder.openChannel(to: holderReader, options: ConnectOptions())
            try await withRunning(other) { otherLog in
                try await otherLog.expect(.cardPresent(otherReader))
                await #expect(throws: ProximaError(.readerBusy)) {
                    try await other.connect(to: otherReader, options: ConnectOptions())
                }
            }
            await channel.close()
            await card.remove()
            try await holderLog.expect(.cardRemoved(holderReader), after: next)
        }
    }

    @Test("a connect blocked in SCardBeginTransaction behind another client is cancellable and cleans up")
    func blockedConnectIsCancellable() async throws {
        let holder = makeTransport(id: "holder")
        let other = makeTransport(id: "other")
        let holderReader = holder.readerID(forReaderNamed: first.name)
        let otherReader = other.readerID(forReaderNamed: first.name)
        try await withRunning(holder) { holderLog in
            let card = try VirtualICC(port: first.port, atr: LivePCSC.atr, answer: LivePCSC.answer)
            let next = try await holderLog.expect(.cardPresent(holderReader))
            let channel = try await holder.openChannel(to: holderReader, options: ConnectOptions())
            try await withRunning(other) { otherLog in
                try await otherLog.expect(.cardPresent(otherReader))
                let blocked = Task { try await other.openChannel(to: otherReader, options: ConnectOptions()) }
                // No event says the connect has reached SCardBeginTransaction: give it time to get there, so the
                // cancellation below meets it blocked (were it earlier, it would be cancelled all the same).
                try await Task.sleep(for: .milliseconds(500))
                blocked.cancel()
                let result = try await outcome(of: blocked, "the cancelled connect returning while the holder holds on")
                #expect(errorCode(of: result) == .cancelled)

                // Once the holder lets go, the other client gets the card (after its abandoned connect cleaned up).
                await channel.close()
                let later = try await other.openChannel(to: otherReader, options: ConnectOptions())
                #expect(try await later.transmit(CommandAPDU(bytes: LivePCSC.selectVisa)).status == .success)
                await later.close()
            }
            await card.remove()
            try await holderLog.expect(.cardRemoved(holderReader), after: next)
        }
    }

    @Test("auto extended length: a refused first extended APDU is resent as a chain, then the channel is short-only")
    func extendedLengthFallback() async throws {
        let transport = makeTransport()
        let reader = transport.readerID(forReaderNamed: first.name)
        try await withRunning(transport) { log in
            let card = try VirtualICC(port: first.port, atr: LivePCSC.atr, answer: LivePCSC.answer)
            let next = try await log.expect(.cardPresent(reader))
            let channel = try await transport.openChannel(to: reader, options: ConnectOptions())
            let data = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
            let command = try CommandAPDU(cla: 0x80, ins: 0xDA, p1: 0x01, p2: 0x02, data: data)
            #expect(command.isExtended)

            let response = try await channel.transmit(command)
            #expect(response == ResponseAPDU(data: [45], status: .success), "the last chunk carried 45 bytes")
            #expect(!channel.supportsExtendedLength)
            #expect(channel.maximumCommandLength == 261)
            let chunks = Array(card.received.suffix(2))
            #expect(chunks.map { $0[0] } == [0x90, 0x80])
            #expect(chunks.map(\.count) == [5 + 255, 5 + 45])
            #expect(chunks.flatMap { $0.dropFirst(5) } == data)

            // Later extended APDUs: transmit refuses them, transceive chains them.
            let unsupported = await errorCode { try await channel.transmit(command) }
            #expect(unsupported == .unsupported)
            #expect(try await channel.transceive(command) == ResponseAPDU(data: [45], status: .success))
            await channel.close()
            await card.remove()
            try await log.expect(.cardRemoved(reader), after: next)
        }
    }

    @Test(
        "pcscd stops and comes back: readers vanish and reappear without restarting the transport",
        .enabled(if: LivePCSC.canRestart),
        .livePCSCD(.exclusive)
    )
    func daemonRestart() async throws {
        let transport = makeTransport()
        let reader = transport.readerID(forReaderNamed: first.name)
        let info = ReaderInfo(id: reader, name: first.name, transport: "pcsc", supportsExtendedLength: true)
        try await withRunning(transport) { log in
            var next = try await log.expect(.appeared(info))
            try await LivePCSCD.stop(signal: SIGTERM)
            next = try await log.expect(.vanished(reader), after: next)
            let connectWhileGone = await errorCode {
                try await transport.connect(to: reader, options: ConnectOptions())
            }
            #expect(connectWhileGone == .readerVanished)
            try await LivePCSCD.start()
            next = try await log.expect(.appeared(info), after: next, within: .seconds(15))

            let card = try VirtualICC(port: first.port, atr: LivePCSC.atr, answer: LivePCSC.answer)
            next = try await log.expect(.cardPresent(reader), after: next)
            let channel = try await transport.openChannel(to: reader, options: ConnectOptions())
            #expect(try await channel.transmit(CommandAPDU(bytes: LivePCSC.selectVisa)).bytes == LivePCSC.selectAnswer)
            await channel.close()
            await card.remove()
            try await log.expect(.cardRemoved(reader), after: next)
        }
    }
}
