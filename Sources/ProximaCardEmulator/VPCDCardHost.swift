internal import Foundation
public import ProximaCore
internal import ProximaSystem
internal import Synchronization

/// Hosts a ``VirtualCard`` on one slot of vsmartcard's `vpcd` reader driver in pcscd, so that every PC/SC client
/// (Proxima's PC/SC transport, `pcsc_scan`, pyscard, OpenSC) sees the card in a reader such as `Virtual PCD 00 00`.
///
/// **Wire protocol** (vsmartcard `src/vpcd/vpcd.c`): vpcd listens on `CHANNELID + slot` (35963 and 35964 with
/// Debian's `/etc/reader.conf.d/vpcd`) and this host connects to it as a TCP client. Every message, either way, is
/// a 2-byte big-endian length and a payload. A 1-byte payload from vpcd is a control message: `00` power off, `01`
/// power on, `02` reset (none is answered) and `04` get ATR (answered with the card's ATR); other control bytes are
/// ignored. A longer payload is a command APDU, answered with the card's response APDU.
///
/// **Presence.** ``insert()`` connects, which vpcd sees as a card entering the field; ``remove()`` closes the
/// connection: the card leaves. pcscd polls vpcd readers every 400 ms, so PC/SC clients notice either within about
/// 0.4 s. Each presence is answered by a fresh copy of the card, so every tap starts from the profile's state (an
/// EMV card's transaction counter is shared by the copies, as on a physical card). ``run(_:clock:)`` inserts and
/// removes on a ``Schedule``.
///
/// **Reader commands.** A contactless PC/SC reader answers the PC/SC Part 3 pseudo-APDUs of class `FF` itself,
/// while vpcd hands them to the card. With ``Options/answersReaderCommands`` (the default) the host plays the reader:
/// GET DATA `FF CA 00 00 Le` gets the UID, `FF CA 01 00 Le` the ATS historical bytes, and any other `FF` command
/// `6A81` (function not supported).
///
/// **Latency.** The socket has `TCP_NODELAY`, and `TCP_QUICKACK` is armed again before every read (Linux clears
/// it): without them every APDU through pcscd and vpcd waits about 40 ms for a delayed ACK.
///
/// **Threads.** Each presence is served by a thread of its own, named `vpcd:<port>`, that blocks in `recv`.
/// ``remove()`` shuts the socket down, which wakes that thread, and waits until it has ended. Nothing polls.
///
/// **Faults**, for tests (``Faults``): pull the card in the middle of an exchange, or make it stop answering.
///
/// **Robustness.** vpcd closing the connection (pcscd stopped or restarted) ends the presence with
/// ``RemovalReason/closedByReader(_:)``; a frame that breaks the protocol ends it with
/// ``RemovalReason/protocolError(_:)``. Nothing that arrives can trap. Events name the card and the port, never card
/// data.
public final class VPCDCardHost: Sendable {
    /// Where vpcd listens: a host (IPv4 address or name) and a port.
    public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
        public var host: String
        public var port: UInt16

        public init(host: String = "127.0.0.1", port: UInt16) {
            self.host = host
            self.port = port
        }

        /// Reads `HOST:PORT` (`127.0.0.1:35963`), or a bare port for `127.0.0.1`; `nil` when it is neither.
        public init?(parsing text: String) {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            switch parts.count {
            case 1:
                guard let port = UInt16(parts[0]), port > 0 else { return nil }
                self.init(port: port)
            case 2:
                guard !parts[0].isEmpty, let port = UInt16(parts[1]), port > 0 else { return nil }
                self.init(host: String(parts[0]), port: port)
            default:
                return nil
            }
        }

        public var description: String { "\(host):\(port)" }
    }

    /// Misbehaviour to inject, for tests of what a reader sees when a card goes wrong.
    public struct Faults: Hashable, Sendable {
        /// Answer this many command APDUs of a presence, then close the connection on receiving the next one,
        /// without answering it: the card is pulled in the middle of an exchange.
        public var removeAfterCommands: Int?
        /// Answer this many command APDUs of a presence, then answer nothing more (the connection stays open until
        /// ``VPCDCardHost/remove()``): a card that went mute in the field.
        public var muteAfterCommands: Int?

        public init(removeAfterCommands: Int? = nil, muteAfterCommands: Int? = nil) {
            self.removeAfterCommands = removeAfterCommands
            self.muteAfterCommands = muteAfterCommands
        }
    }

    /// How the host behaves.
    public struct Options: Sendable {
        /// Answer the PC/SC Part 3 pseudo-APDUs (class `FF`) as a contactless reader does, instead of passing them
        /// to the card.
        public var answersReaderCommands: Bool
        /// Keep every command APDU received (see ``recordedCommands``), e.g. to replay a read. Off by default: they
        /// can carry transaction data.
        public var recordsCommands: Bool
        public var faults: Faults

        public init(answersReaderCommands: Bool = true, recordsCommands: Bool = false, faults: Faults = Faults()) {
            self.answersReaderCommands = answersReaderCommands
            self.recordsCommands = recordsCommands
            self.faults = faults
        }
    }

    /// Why a presence ended.
    public enum RemovalReason: Hashable, Sendable, CustomStringConvertible {
        /// ``VPCDCardHost/remove()`` (or the schedule) took the card out.
        case removed
        /// ``Faults/removeAfterCommands`` pulled the card when command number `command` arrived.
        case pulledMidExchange(command: Int)
        /// vpcd closed the connection or it broke (pcscd stopped or restarted); the text says how.
        case closedByReader(String)
        /// vpcd sent something this protocol does not allow; the text says what.
        case protocolError(String)

        public var description: String {
            switch self {
            case .removed: "removed"
            case .pulledMidExchange(let command): "pulled while command \(command) was in flight"
            case .closedByReader(let detail): "vpcd closed the connection (\(detail))"
            case .protocolError(let detail): "protocol error: \(detail)"
            }
        }
    }

    /// What the host reports to ``init(card:endpoint:options:onEvent:)``'s handler.
    public enum Event: Hashable, Sendable, CustomStringConvertible {
        /// Presence number `presence` (1, 2, …) began: connected to vpcd.
        case inserted(presence: Int, endpoint: Endpoint)
        /// Presence number `presence` ended after `commands` command APDUs.
        case removed(presence: Int, endpoint: Endpoint, reason: RemovalReason, commands: Int)

        public var description: String {
            switch self {
            case .inserted(let presence, let endpoint):
                "card inserted into vpcd \(endpoint) (presence \(presence))"
            case .removed(let presence, let endpoint, let reason, let commands):
                "card removed from vpcd \(endpoint) (presence \(presence), \(commands) APDUs): \(reason)"
            }
        }
    }

    /// When to insert and remove the card, for ``run(_:clock:)``.
    public struct Schedule: Hashable, Sendable {
        /// How many presences; `nil` for no limit.
        public var taps: Int?
        /// How long each presence lasts; `nil` keeps the card in the field until cancelled (inserting it again
        /// whenever vpcd drops it, e.g. across a pcscd restart).
        public var present: Duration?
        /// How long the card stays out between presences.
        public var absent: Duration
        /// The wait before connecting again when vpcd is not listening (pcscd not running yet); it doubles up to
        /// 2 s.
        public var retryDelay: Duration

        public init(
            taps: Int? = nil,
            present: Duration? = nil,
            absent: Duration = .seconds(1),
            retryDelay: Duration = .milliseconds(100)
        ) {
            self.taps = taps
            self.present = present
            self.absent = absent
            self.retryDelay = retryDelay
        }
    }

    /// The largest payload a frame can carry (its length field has 16 bits).
    public static let maximumPayloadLength = 0xFFFF

    public let card: any VirtualCard
    public let endpoint: Endpoint
    public let options: Options

    private struct State {
        var presence: Presence?
        var connecting = false
        var presenceCount = 0
        var faults: Faults
        var recorded: [[UInt8]] = []
        var commandsAnswered = 0
        var lastRemoval: RemovalReason?
    }

    private let state: Mutex<State>
    private let onEvent: @Sendable (Event) -> Void

    /// - Parameters:
    ///   - card: the card to host; each presence starts from a copy of it.
    ///   - endpoint: where vpcd listens for this reader slot.
    ///   - options: reader commands, recording, faults.
    ///   - onEvent: called as the card is inserted (on the thread that called ``insert()``) and removed (on the
    ///     serving thread, before ``remove()`` returns); must return quickly.
    public init(
        card: any VirtualCard,
        endpoint: Endpoint,
        options: Options = Options(),
        onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.card = card
        self.endpoint = endpoint
        self.options = options
        self.onEvent = onEvent
        state = Mutex(State(faults: options.faults))
    }

    deinit {
        // A host dropped while its card is in the field: take it out (the serving thread holds no reference to
        // the host, so it notices the shutdown and ends by itself).
        state.withLock { $0.presence }?.shutDown(reason: .removed)
    }

    /// Whether the card is in the field (connected to vpcd).
    public var isInserted: Bool { state.withLock { $0.presence != nil } }

    /// How many presences have begun.
    public var presenceCount: Int { state.withLock { $0.presenceCount } }

    /// Command APDUs answered by the card or, for `FF` commands, by the host, over all presences.
    public var commandsAnswered: Int { state.withLock { $0.commandsAnswered } }

    /// Every command APDU received, in order, when ``Options/recordsCommands`` is on; otherwise empty.
    public var recordedCommands: [[UInt8]] { state.withLock { $0.recorded } }

    /// Forgets the recorded commands.
    public func clearRecordedCommands() { state.withLock { $0.recorded = [] } }

    /// The faults in force; a change applies from the next command APDU on.
    public var faults: Faults {
        get { state.withLock { $0.faults } }
        set { state.withLock { $0.faults = newValue } }
    }

    // MARK: Presence

    /// Puts the card in the field: connects to vpcd and starts answering on a thread of its own.
    ///
    /// - Throws: `ProximaError.readerUnavailable` when vpcd does not accept the connection (pcscd not running, or
    ///   no vpcd reader on that port); `ProximaError.invalidArgument` when the card is already in the field.
    public func insert() throws {
        try state.withLock { state in
            guard state.presence == nil, !state.connecting else {
                throw ProximaError(
                    .invalidArgument,
                    "the card is already in the field of vpcd \(endpoint); remove it first"
                )
            }
            state.connecting = true
        }
        let socket: FileDescriptor
        do {
            socket = try VPCDSocket.connect(to: endpoint)
        } catch {
            state.withLock { $0.connecting = false }
            throw error
        }
        let presence = state.withLock { state in
            state.connecting = false
            state.presenceCount += 1
            let presence = Presence(number: state.presenceCount, socket: socket)
            state.presence = presence
            return presence
        }
        onEvent(.inserted(presence: presence.number, endpoint: endpoint))
        let name = "vpcd:\(endpoint.port)"
        let card = card
        let answersReaderCommands = options.answersReaderCommands
        // The thread holds the host weakly, so a host dropped while its card is in the field is deinitialised,
        // which shuts the socket down and so ends the thread.
        let thread = Thread { [weak self] in
            // On the thread itself, Foundation names the OS thread (what `top -H` and /proc/<pid>/task show).
            Thread.current.name = name
            var session = VPCDSession(
                host: self,
                presence: presence,
                card: card,
                answersReaderCommands: answersReaderCommands
            )
            session.serve()
        }
        thread.start()
    }

    /// Takes the card out of the field: closes the connection and returns once the serving thread has ended.
    /// Does nothing when the card is not in the field.
    public func remove() async {
        guard let presence = state.withLock({ $0.presence }) else { return }
        presence.shutDown(reason: .removed)
        // Not cancellable: the shutdown wakes the serving thread at once, and the card must be out on return.
        await presence.waitUntilEnded(cancellable: false)
    }

    /// Returns when the current presence ends: after ``remove()``, or when vpcd closed the connection or a fault
    /// pulled the card. When the card is out of the field already, returns at once.
    ///
    /// - Returns: why the presence ended (the last one, when the card is already out); `nil` when the card was
    ///   never inserted, or the calling task was cancelled first.
    @discardableResult
    public func waitUntilRemoved() async -> RemovalReason? {
        let (presence, last) = state.withLock { ($0.presence, $0.lastRemoval) }
        guard let presence else { return last }
        return await presence.waitUntilEnded(cancellable: true)
    }

    /// Why the last presence ended; `nil` while the first one lasts, or before it.
    public var lastRemovalReason: RemovalReason? { state.withLock { $0.lastRemoval } }

    /// Inserts and removes the card on `schedule` until it is done or the calling task is cancelled; the card is
    /// out of the field when this returns.
    ///
    /// A connection that vpcd refuses (pcscd not running yet) is tried again after ``Schedule/retryDelay``,
    /// doubling up to 2 s, and reported to `waiting` once per outage.
    ///
    /// - Parameters:
    ///   - schedule: how many presences, how long in and out.
    ///   - clock: the clock the schedule's durations run on.
    ///   - waiting: called with the error when a connection was refused and the host waits to try again.
    /// - Throws: what ``insert()`` threw when it was anything but a refused connection (the schedule cannot go on,
    ///   and ending it short without a word would leave the caller waiting for taps that never come).
    public func run<C: Clock<Duration>>(
        _ schedule: Schedule,
        clock: C = ContinuousClock(),
        waiting: (ProximaError) -> Void = { _ in }
    ) async throws {
        var taps = 0
        var refused = false
        var delay = schedule.retryDelay
        while !Task.isCancelled, schedule.taps.map({ taps < $0 }) ?? true {
            do {
                try insert()
            } catch let error as ProximaError where error.code == .readerUnavailable {
                if !refused { waiting(error) }
                refused = true
                guard (try? await clock.sleep(for: delay)) != nil else { break }
                delay = min(delay * 2, .seconds(2))
                continue
            } catch {
                await remove()
                throw error
            }
            refused = false
            delay = schedule.retryDelay
            taps += 1
            let endedByItself = await presentFor(schedule.present, clock: clock)
            await remove()
            if Task.isCancelled { break }
            if schedule.taps.map({ taps >= $0 }) ?? false { break }
            // Out of the field for `absent`; a card that vpcd dropped while it was meant to stay is tried again
            // after the retry delay instead.
            let pause = schedule.present == nil && endedByItself ? schedule.retryDelay : schedule.absent
            guard (try? await clock.sleep(for: pause)) != nil else { break }
        }
        await remove()
    }

    /// Waits until `duration` passed (`nil`: forever) or the presence ended by itself; `true` in the latter case.
    private func presentFor<C: Clock<Duration>>(_ duration: Duration?, clock: C) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await self.waitUntilRemoved()
                return true
            }
            group.addTask {
                if let duration {
                    try? await clock.sleep(for: duration)
                } else {
                    // Until cancelled: iterating a stream that never yields ends on cancellation.
                    let never = AsyncStream<Void> { _ in }
                    for await _ in never {}
                }
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    // MARK: Serving thread callbacks

    /// What to do with command number `number` (1-based) of a presence.
    fileprivate func disposition(ofCommand number: Int, _ command: [UInt8]) -> CommandDisposition {
        state.withLock { state in
            if options.recordsCommands { state.recorded.append(command) }
            if let limit = state.faults.removeAfterCommands, number > limit { return .pull }
            if let limit = state.faults.muteAfterCommands, number > limit { return .ignore }
            state.commandsAnswered += 1
            return .answer
        }
    }

    fileprivate func ended(_ presence: Presence, reason: RemovalReason, commands: Int) {
        state.withLock { state in
            if state.presence === presence { state.presence = nil }
            state.lastRemoval = reason
        }
        onEvent(.removed(presence: presence.number, endpoint: endpoint, reason: reason, commands: commands))
    }

    // MARK: Reader commands

    /// The answer a contactless reader gives to a PC/SC Part 3 pseudo-APDU (class `FF`), §3.2.2.1.3 GET DATA.
    static func readerAnswer(to command: [UInt8], card: any VirtualCard) -> [UInt8] {
        guard command.count >= 4, command[1] == 0xCA, command[3] == 0x00 else { return [0x6A, 0x81] }
        let data: [UInt8]
        switch command[2] {
        case 0x00: data = card.uid
        case 0x01: data = historicalBytes(ofATS: card.ats)
        default: return [0x6A, 0x81]
        }
        guard !data.isEmpty else { return [0x6A, 0x81] }
        // Le: 00 (or absent) means "all of it"; a shorter Le gets 6Cxx with the right length (Part 3 Table 3-6).
        if command.count == 5, command[4] != 0, Int(command[4]) != data.count {
            return [0x6C, UInt8(truncatingIfNeeded: data.count)]
        }
        return data + [0x90, 0x00]
    }

    /// The historical bytes of an ISO/IEC 14443-4 ATS (TL, T0, then TA/TB/TC as T0 says, then the historical
    /// bytes), `[]` when the ATS is too short for what it announces.
    static func historicalBytes(ofATS ats: [UInt8]) -> [UInt8] {
        guard ats.count >= 2 else { return [] }
        let length = min(Int(ats[0]), ats.count)
        let format = ats[1]
        var start = 2
        for bit in [0x10, 0x20, 0x40] as [UInt8] where format & bit != 0 { start += 1 }
        guard start <= length else { return [] }
        return Array(ats[start..<length])
    }
}

/// What the serving thread does with one command APDU.
private enum CommandDisposition {
    case answer
    /// Close without answering (``VPCDCardHost/Faults/removeAfterCommands``).
    case pull
    /// Answer nothing (``VPCDCardHost/Faults/muteAfterCommands``).
    case ignore
}

/// One card presence: the connected socket, and whoever waits for it to end.
///
/// Invariant: `socket` is closed only by the serving thread in ``close(reason:)``, under the mutex, and
/// ``shutDown(reason:)`` touches it only under the same mutex while it is open, so a shutdown can never reach a
/// descriptor number the system has already handed to someone else.
private final class Presence: Sendable {
    let number: Int
    private struct State {
        var socket: FileDescriptor?
        var requestedReason: VPCDCardHost.RemovalReason?
        var endReason: VPCDCardHost.RemovalReason?
        var waiters: [Int: CheckedContinuation<VPCDCardHost.RemovalReason?, Never>] = [:]
        /// Waiters cancelled before they installed their continuation.
        var cancelledWaiters: Set<Int> = []
        var nextWaiter = 0
    }
    private let state: Mutex<State>

    init(number: Int, socket: FileDescriptor) {
        self.number = number
        state = Mutex(State(socket: socket))
    }

    /// The socket, for the serving thread's reads and writes (which only that thread does).
    var socket: FileDescriptor? { state.withLock { $0.socket } }

    /// Wakes the serving thread: `shutdown` makes its `recv` return 0. The first reason asked for wins.
    func shutDown(reason: VPCDCardHost.RemovalReason) {
        state.withLock { state in
            guard let socket = state.socket else { return }
            if state.requestedReason == nil { state.requestedReason = reason }
            socket.shutdownBoth()
        }
    }

    /// Closes the socket; returns the reason the presence ended: the one asked for by ``shutDown(reason:)``, if
    /// any, else `reason`.
    func close(reason: VPCDCardHost.RemovalReason) -> VPCDCardHost.RemovalReason {
        state.withLock { state in
            try? state.socket?.close()
            state.socket = nil
            return state.requestedReason ?? reason
        }
    }

    /// Records the end and wakes every waiter (after the host has reported it, so a waiter sees the event first).
    func markEnded(_ reason: VPCDCardHost.RemovalReason) {
        let waiters = state.withLock { state in
            state.endReason = reason
            let waiters = state.waiters.values
            state.waiters = [:]
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: reason) }
    }

    /// Returns why the presence ended, once it has; `nil` when `cancellable` and the calling task is cancelled
    /// first.
    @discardableResult
    func waitUntilEnded(cancellable: Bool) async -> VPCDCardHost.RemovalReason? {
        let key = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        guard cancellable else { return await wait(key: key) }
        return await withTaskCancellationHandler {
            await wait(key: key)
        } onCancel: {
            let waiter = state.withLock { state in
                guard let waiter = state.waiters.removeValue(forKey: key) else {
                    if state.endReason == nil { state.cancelledWaiters.insert(key) }
                    return nil as CheckedContinuation<VPCDCardHost.RemovalReason?, Never>?
                }
                return waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    private func wait(key: Int) async -> VPCDCardHost.RemovalReason? {
        await withCheckedContinuation { (continuation: CheckedContinuation<VPCDCardHost.RemovalReason?, Never>) in
            let immediate = state.withLock { state -> VPCDCardHost.RemovalReason?? in
                if let reason = state.endReason { return .some(reason) }
                if state.cancelledWaiters.remove(key) != nil { return .some(nil) }
                state.waiters[key] = continuation
                return nil
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }
}

/// The serving thread's loop: reads frames, answers them, ends the presence when the connection ends. Lives on
/// that thread only.
private struct VPCDSession {
    private weak var host: VPCDCardHost?
    private let presence: Presence
    private let answersReaderCommands: Bool
    private var card: any VirtualCard
    private var frames = VPCDFrameReader()
    private var output: [UInt8] = []
    private var commands = 0

    init(host: VPCDCardHost?, presence: Presence, card: any VirtualCard, answersReaderCommands: Bool) {
        self.host = host
        self.presence = presence
        self.card = card
        self.answersReaderCommands = answersReaderCommands
        output.reserveCapacity(512)
    }

    mutating func serve() {
        let reason = presence.close(reason: loop())
        host?.ended(presence, reason: reason, commands: commands)
        presence.markEnded(reason)
    }

    private mutating func loop() -> VPCDCardHost.RemovalReason {
        guard let socket = presence.socket else { return .removed }
        while true {
            while let frame = frames.next() {
                switch frame {
                case .invalid(let problem):
                    return .protocolError(problem)
                case .payload(let control) where control.count == 1:
                    // Control: only GET ATR is answered; power off/on and reset need nothing from a virtual card.
                    if control[0] == VPCDControl.getATR, let failure = send(card.atr, on: socket) { return failure }
                case .payload(let command):
                    commands += 1
                    switch host?.disposition(ofCommand: commands, command) ?? .pull {
                    case .pull:
                        // vpcd hands pcscd an empty answer (0 bytes, as a success) for the command in flight.
                        return .pulledMidExchange(command: commands)
                    case .ignore:
                        continue
                    case .answer:
                        let answer =
                            answersReaderCommands && command.first == 0xFF
                            ? VPCDCardHost.readerAnswer(to: command, card: card)
                            : card.respond(to: command)
                        if let failure = send(answer, on: socket) { return failure }
                    }
                }
            }
            socket.armQuickAck()
            switch frames.receive(from: socket) {
            case .received:
                continue
            case .closed:
                return frames.hasPartialFrame
                    ? .closedByReader("the connection ended inside a frame") : .closedByReader("end of stream")
            case .failed(let error):
                return .closedByReader("recv: \(error)")
            }
        }
    }

    /// Sends one frame; the removal reason when the connection broke.
    private mutating func send(_ payload: [UInt8], on socket: FileDescriptor) -> VPCDCardHost.RemovalReason? {
        // A card answer without a status word, or one a frame cannot carry, becomes 6F00 (no precise diagnosis).
        let payload = payload.count >= 2 && payload.count <= VPCDCardHost.maximumPayloadLength ? payload : [0x6F, 0x00]
        output.removeAll(keepingCapacity: true)
        output.append(UInt8(payload.count >> 8))
        output.append(UInt8(payload.count & 0xFF))
        output.append(contentsOf: payload)
        do {
            try socket.sendAll(output)
            return nil
        } catch {
            return .closedByReader("send: \(error)")
        }
    }
}

/// vpcd's control bytes (`vpcd.h`).
enum VPCDControl {
    static let powerOff: UInt8 = 0x00
    static let powerOn: UInt8 = 0x01
    static let reset: UInt8 = 0x02
    static let getATR: UInt8 = 0x04
}

/// Splits the byte stream from vpcd into frames (2-byte big-endian length, then the payload).
///
/// Total: any byte sequence yields frames or one error, with memory bounded by the largest frame (64 KiB + 2).
struct VPCDFrameReader {
    enum Frame: Equatable {
        /// A control byte (1 byte) or a command APDU.
        case payload([UInt8])
        /// A frame the protocol forbids; the text says why.
        case invalid(String)
    }

    enum ReceiveResult: Equatable {
        case received
        case closed
        case failed(Errno)
    }

    /// Room for one whole frame of the largest size and the start of the next.
    static let capacity = 2 * (2 + VPCDCardHost.maximumPayloadLength)
    private var buffer = [UInt8](repeating: 0, count: VPCDFrameReader.capacity)
    private var start = 0
    private var end = 0

    /// Whether bytes of an unfinished frame are waiting.
    var hasPartialFrame: Bool { end > start }

    /// Appends `bytes` as if they had been received (tests and fuzzing).
    mutating func append(_ bytes: some Collection<UInt8>) {
        for byte in bytes {
            if end == buffer.count { compact() }
            guard end < buffer.count else { return }
            buffer[end] = byte
            end += 1
        }
    }

    /// The next complete frame's payload, an error for a frame the protocol forbids, or `nil` when more bytes are
    /// needed.
    mutating func next() -> Frame? {
        guard end - start >= 2 else { return nil }
        let length = Int(buffer[start]) << 8 | Int(buffer[start + 1])
        guard length > 0 else {
            start += 2
            return .invalid("vpcd sent an empty frame (length 0)")
        }
        guard end - start >= 2 + length else { return nil }
        let payload = Array(buffer[(start + 2)..<(start + 2 + length)])
        start += 2 + length
        if start == end {
            start = 0
            end = 0
        }
        return .payload(payload)
    }

    /// One blocking `recv` into the free space.
    mutating func receive(from socket: FileDescriptor) -> ReceiveResult {
        if end == buffer.count { compact() }
        let free = buffer.count - end
        let count = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(Errno) in
                try socket.receive(into: UnsafeMutableRawBufferPointer(rebasing: raw[end..<(end + free)]))
            }
        }
        switch count {
        case .success(0): return .closed
        case .success(let received):
            end += received
            return .received
        case .failure(let error): return .failed(error)
        }
    }

    private mutating func compact() {
        guard start > 0 else { return }
        let pending = end - start
        for i in 0..<pending { buffer[i] = buffer[start + i] }
        start = 0
        end = pending
    }
}

/// The host's connection to vpcd, on the system-call layer.
enum VPCDSocket {
    /// A TCP connection to `endpoint` with `TCP_NODELAY` and `TCP_QUICKACK`.
    static func connect(to endpoint: VPCDCardHost.Endpoint) throws -> FileDescriptor {
        let socket: FileDescriptor
        do {
            socket = try FileDescriptor.connectTCP(host: endpoint.host, port: Int(endpoint.port))
        } catch {
            throw ProximaError(
                .readerUnavailable,
                "cannot connect to vpcd at \(endpoint): \(error.reason); is pcscd running with a vpcd reader on port "
                    + "\(endpoint.port) (scripts/pcscd-harness.sh, or vsmartcard-vpcd's /etc/reader.conf.d/vpcd)?",
                underlying: error
            )
        }
        socket.setNoDelay()
        socket.armQuickAck()
        return socket
    }
}
