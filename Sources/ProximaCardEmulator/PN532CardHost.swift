internal import Foundation
internal import ProximaCore
internal import Synchronization

/// An emulated PN532 board on a UART: a ``PN532Chip`` served over a pseudo-terminal, so that libnfc's real
/// `pn532_uart` driver (and `nfc-list`, and Proxima's libnfc transport) talks to it as to a PN532 on `/dev/ttyS0`.
///
/// **Link.** ``start()`` opens a pseudo-terminal pair in raw mode; a host opens ``devicePath`` (`/dev/pts/N`), or
/// the stable ``linkPath`` when one was given (a symbolic link to the terminal, replaced on each start), with the
/// connstring ``connstring`` (`pn532_uart:/dev/pts/N`). The host link is HSU framing (``PN532Frame``): the emulator
/// skips the wake-up preamble (`55 55 00 …`) and garbage, ACKs each information frame at once, then sends the
/// response frame (extended when longer than 254 bytes); a NACK from the host gets the last response again, an ACK
/// (libnfc's abort) is taken silently, frames with bad checksums are dropped (``discardedFrames`` counts them).
///
/// **Cards.** ``insert(_:)`` and ``remove()`` put a card into the field and take it out (the chip activates it on
/// the host's next InListPassiveTarget); ``removeCard(afterAPDUs:)`` pulls it in the middle of an exchange, and
/// ``run(_:)`` inserts and removes on a ``VPCDCardHost/Schedule``.
///
/// **Faults**, for tests (``inject(_:command:times:)``): corrupt frames, bad checksums, the error frame, a NACK
/// storm, a chip that stops answering. ``stop()`` closes the terminal, as the death of the process that hosts the
/// board would: the host's reads and writes fail with `EIO`; a new host on the same ``linkPath`` is the board
/// coming back.
///
/// **Threads.** One thread per started host, named `pn532:<path>`, blocks in `poll` on the terminal and a wake-up
/// pipe; ``stop()`` writes to the pipe and waits until the thread has closed the terminal. Nothing polls on a timer.
/// State sits behind a `Mutex`; no event carries card data.
public final class PN532CardHost: Sendable {
    /// Misbehaviour to inject into responses.
    public enum Fault: Hashable, Sendable {
        /// ACK, then a response frame whose data checksum is wrong.
        case badDataChecksum
        /// ACK, then a response frame whose length checksum is wrong.
        case badLengthChecksum
        /// ACK, then a frame with a wrong frame identifier (not `D5`).
        case corruptFrame
        /// ACK, then the application-level error frame.
        case errorFrame
        /// A NACK instead of the ACK, and no response: the host's frames "never arrive".
        case nack
        /// ACK, and no response: the chip hangs.
        case mute
    }

    /// Something the host did, for logs (never card data).
    public enum Event: Hashable, Sendable {
        case started(path: String)
        case inserted(name: String)
        case removed(name: String, apdus: Int)
        case stopped
    }

    /// PN532 command codes the emulator knows by name, for ``inject(_:command:times:)``.
    public enum Command {
        public static let inDataExchange: UInt8 = 0x40
        public static let inListPassiveTarget: UInt8 = 0x4A
        public static let inCommunicateThru: UInt8 = 0x42
    }

    private struct Injection {
        var fault: Fault
        var command: UInt8?
        var remaining: Int?
    }

    private struct Link: Sendable {
        let terminal: PseudoTerminal
        let wakeUp: WakeUpPipe
        let finished: DispatchSemaphore
    }

    private struct State {
        var chip: PN532Chip
        var link: Link?
        var injections: [Injection] = []
        var lastResponse: [UInt8] = []
        var removeAfterAPDUs: Int?
        var presenceAPDUs = 0
        var discardedFrames = 0
        var framesAnswered = 0
        var devicePath = ""
    }

    /// Where the stable symbolic link to the terminal lives, or `nil` to use `/dev/pts/N` only.
    public let linkPath: String?
    private let state: Mutex<State>
    private let onEvent: @Sendable (Event) -> Void

    /// - Parameters:
    ///   - card: the card in the field at start, or `nil` for an empty field.
    ///   - linkPath: a path for a symbolic link to the terminal that outlives restarts (``stop()`` removes it).
    ///   - onEvent: called on the host's threads for each ``Event``.
    public init(
        card: (any VirtualCard)? = nil,
        linkPath: String? = nil,
        onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.linkPath = linkPath
        self.onEvent = onEvent
        state = Mutex(State(chip: PN532Chip(card: card)))
    }

    deinit {
        if let link = state.withLock({ $0.link }) {
            link.wakeUp.wake()
            link.finished.wait()
            if let linkPath { TerminalIO.unlinkPath(linkPath) }
        }
    }

    /// The terminal a host opens: ``linkPath`` when set, otherwise `/dev/pts/N`. Empty before ``start()``.
    public var portPath: String { linkPath ?? devicePath }
    /// `/dev/pts/N` of the running terminal; empty when stopped.
    public var devicePath: String { state.withLock { $0.devicePath } }
    /// libnfc's connstring for the board: `pn532_uart:` and ``portPath``.
    public var connstring: String { "pn532_uart:" + portPath }
    /// APDUs the card answered, over all presences.
    public var apduCount: Int { state.withLock { $0.chip.apduCount } }
    /// Frames from the host answered (ACKed and responded to), over all starts.
    public var framesAnswered: Int { state.withLock { $0.framesAnswered } }
    /// Frames from the host dropped for bad checksums or lengths.
    public var discardedFrames: Int { state.withLock { $0.discardedFrames } }
    /// Whether a card is in the field.
    public var hasCard: Bool { state.withLock { $0.chip.cardInField != nil } }

    /// Opens the terminal and starts serving it. A host that was stopped can be started again (on a new terminal,
    /// with ``linkPath`` pointing to it).
    ///
    /// - Throws: `ProximaError.pluginFailed` naming the system call that failed.
    public func start() throws {
        let terminal = try PseudoTerminal()
        let wakeUp = try WakeUpPipe()
        if let linkPath { try TerminalIO.link(linkPath, to: terminal.path) }
        let link = Link(terminal: terminal, wakeUp: wakeUp, finished: DispatchSemaphore(value: 0))
        let alreadyRunning = state.withLock { state -> Bool in
            guard state.link == nil else { return true }
            state.link = link
            state.devicePath = terminal.path
            return false
        }
        guard !alreadyRunning else { throw ProximaError(.invalidArgument, "the PN532 emulator is already running") }
        let thread = Thread { [self] in
            serve(link)
            link.finished.signal()
        }
        thread.name = "pn532:\(terminal.path)"
        thread.start()
        onEvent(.started(path: terminal.path))
    }

    /// Closes the terminal, as the board's process dying would, and removes ``linkPath``. Waits until the serving
    /// thread has ended. The card stays in the (now unreachable) field.
    public func stop() {
        guard
            let link = state.withLock({ state -> Link? in
                defer {
                    state.link = nil
                    state.devicePath = ""
                }
                return state.link
            })
        else { return }
        if let linkPath { TerminalIO.unlinkPath(linkPath) }
        link.wakeUp.wake()
        link.finished.wait()
        onEvent(.stopped)
    }

    /// Puts `card` into the field, replacing any card there.
    public func insert(_ card: any VirtualCard) {
        state.withLock { state in
            state.chip.insert(card)
            state.presenceAPDUs = 0
            state.removeAfterAPDUs = nil
        }
        onEvent(.inserted(name: card.name))
    }

    /// Takes the card out of the field; the next command to it times out (PN532 status `01`).
    public func remove() {
        let removed = state.withLock { state -> (String, Int)? in
            guard let card = state.chip.cardInField else { return nil }
            state.chip.remove()
            return (card.name, state.presenceAPDUs)
        }
        if let (name, apdus) = removed { onEvent(.removed(name: name, apdus: apdus)) }
    }

    /// Pulls the card out when it has answered `count` more APDUs of this presence, before the next one reaches it.
    public func removeCard(afterAPDUs count: Int) {
        state.withLock { state in state.removeAfterAPDUs = state.presenceAPDUs + max(0, count) }
    }

    /// Makes the emulator misbehave on frames carrying `command` (`nil`: any command), `times` times (`nil`: until
    /// ``clearFaults()``).
    public func inject(_ fault: Fault, command: UInt8? = Command.inDataExchange, times: Int? = 1) {
        state.withLock { $0.injections.append(Injection(fault: fault, command: command, remaining: times)) }
    }

    /// Removes every injected fault.
    public func clearFaults() {
        state.withLock { $0.injections = [] }
    }

    /// Inserts and removes the card on `schedule` until it is done or the calling task is cancelled; the card is
    /// out of the field at the end. With no ``VPCDCardHost/Schedule/present`` duration the card stays in.
    public func run<C: Clock<Duration>>(_ schedule: VPCDCardHost.Schedule, card: any VirtualCard, clock: C) async {
        var taps = 0
        while !Task.isCancelled, schedule.taps.map({ taps < $0 }) ?? true {
            insert(card)
            taps += 1
            guard let present = schedule.present else {
                let never = AsyncStream<Void> { _ in }
                for await _ in never {}
                break
            }
            guard (try? await clock.sleep(for: present)) != nil else { break }
            remove()
            if schedule.taps.map({ taps >= $0 }) ?? false { break }
            guard (try? await clock.sleep(for: schedule.absent)) != nil else { break }
        }
        remove()
    }

    // MARK: Serving the terminal (on the host's thread)

    private func serve(_ link: Link) {
        var decoder = PN532FrameDecoder()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let controller = link.terminal.controller
        loop: while true {
            switch TerminalIO.waitForInput(controller, wakeUp: link.wakeUp.readEnd) {
            case .woken, .failed:
                break loop
            case .readable:
                guard let count = TerminalIO.readAvailable(controller, into: &buffer) else { break loop }
                decoder.append(buffer[..<count])
                while let item = decoder.next() {
                    switch item {
                    case .discarded:
                        state.withLock { $0.discardedFrames += 1 }
                    case .frame(let frame):
                        for reply in replies(to: frame) where !TerminalIO.writeAll(controller, reply) { break }
                    }
                }
            }
        }
    }

    /// What goes back on the wire for one frame from the host: nothing, an ACK or NACK, and a response.
    private func replies(to frame: PN532Frame) -> [[UInt8]] {
        switch frame {
        case .ack, .error:
            return []
        case .nack:
            let last = state.withLock { $0.lastResponse }
            return last.isEmpty ? [] : [last]
        case .information(let payload):
            let (response, removed) = state.withLock { state -> ([[UInt8]], (String, Int)?) in
                let command = payload.count >= 2 ? payload[1] : nil
                let fault = takeFault(for: command, in: &state)
                if fault == .nack { return ([PN532Frame.nack.bytes], nil) }
                var removed: (String, Int)? = nil
                if command == Command.inDataExchange, let limit = state.removeAfterAPDUs, state.presenceAPDUs >= limit,
                    let card = state.chip.cardInField
                {
                    state.chip.remove()
                    state.removeAfterAPDUs = nil
                    removed = (card.name, state.presenceAPDUs)
                }
                let before = state.chip.apduCount
                let answer = state.chip.respond(to: payload)
                state.presenceAPDUs += state.chip.apduCount - before
                state.framesAnswered += 1
                var bytes: [UInt8]
                switch answer {
                case .errorFrame: bytes = PN532Frame.error.bytes
                case .information(let data): bytes = PN532Frame.information(data).bytes
                }
                state.lastResponse = bytes
                switch fault {
                case .mute?: return ([PN532Frame.ack.bytes], removed)
                case .errorFrame?: bytes = PN532Frame.error.bytes
                case .badDataChecksum?: bytes[bytes.count - 2] &+= 1
                case .badLengthChecksum?: bytes[4] &+= 1
                case .corruptFrame?: if let tfi = Self.tfiIndex(of: bytes) { bytes[tfi] = 0xD7 }
                case .nack?, nil: break
                }
                return ([PN532Frame.ack.bytes, bytes], removed)
            }
            if let (name, apdus) = removed { onEvent(.removed(name: name, apdus: apdus)) }
            return response
        }
    }

    private static func tfiIndex(of frame: [UInt8]) -> Int? {
        guard frame.count > 6 else { return nil }
        return frame[3] == 0xFF && frame[4] == 0xFF ? 8 : 5
    }

    private func takeFault(for command: UInt8?, in state: inout State) -> Fault? {
        guard let index = state.injections.firstIndex(where: { $0.command == nil || $0.command == command }) else {
            return nil
        }
        let fault = state.injections[index].fault
        if let remaining = state.injections[index].remaining {
            if remaining <= 1 {
                state.injections.remove(at: index)
            } else {
                state.injections[index].remaining = remaining - 1
            }
        }
        return fault
    }
}
