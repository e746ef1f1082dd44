internal import CPCSCLite
internal import Dispatch
internal import ProximaCore
internal import Synchronization

/// Watches pcscd's readers and cards on a dedicated queue and tells the rest of the transport what it saw.
///
/// A *session* is one pcsc-lite context: ``runSession()`` establishes it, then loops on the monitor queue:
/// `SCardListReaders` (pcsc-lite 1.9 can miss reader changes that happen between two calls, so the list is read
/// again after every wake-up), `.appeared` / `.vanished` for the difference, then a blocking
/// `SCardGetStatusChange(INFINITE)` over `\\?PnP?\Notification` and every known reader. Card transitions become
/// `.cardPresent` / `.cardRemoved` and wake the ``waitForCard(on:after:)`` callers; the ATR pcscd reports with a
/// present card is kept for ``atr(of:generation:)``, so connections need not ask `SCardStatus` for it. When pcscd
/// goes away (`SCARD_E_NO_SERVICE`, `SCARD_E_SERVICE_STOPPED`, `SCARD_F_COMM_ERROR`, …) the session reports every
/// reader `.vanished`, releases its context and returns; the transport then starts a new session after a backoff.
/// Every `.vanished` is also passed to `readerVanished` (the transport releases that reader's connection context).
///
/// Stopping: ``requestStop()`` (called when the task running the session is cancelled) sets a flag and calls
/// `SCardCancel` from a separate queue. pcsc-lite ignores `SCardCancel` unless the call is already waiting on the
/// daemon, so the cancel is repeated every 10 ms until the session has left `SCardGetStatusChange`; the first
/// one normally lands. Nothing else polls.
final class PCSCReaderMonitor: Sendable {
    /// How a session ended.
    enum SessionEnd: Sendable, Equatable {
        /// ``requestStop()`` was called.
        case stopped
        /// The context worked, then failed with this status (pcscd stopped, …); readers were reported vanished.
        case lost(PCSCStatus)
        /// `SCardEstablishContext` failed with this status.
        case notEstablished(PCSCStatus)
    }

    /// A reader as connect sees it. `generation` counts the card arrivals the monitor has seen on it; `atr` is the
    /// ATR pcscd last reported for the card present (empty when none, or the card is mute).
    private struct Reader {
        var name: String
        var present = false
        var generation: UInt64 = 0
        var atr: [UInt8] = []
    }

    private struct Waiter {
        var readerName: String
        var after: UInt64
        var continuation: CheckedContinuation<(name: String, generation: UInt64), any Error>?
        var cancelled = false
    }

    private struct State {
        var readers: [ReaderID: Reader] = [:]
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        /// Set for good by ``requestStop()`` or ``shutDown()``.
        var stopRequested = false
        /// The session's context while it runs, for `SCardCancel`; cleared before it is released.
        var context: SCARDCONTEXT? = nil
    }

    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "proxima.pcsc.monitor", qos: .userInitiated)
    private let cancelQueue = DispatchQueue(label: "proxima.pcsc.monitor.cancel", qos: .userInitiated)
    private let transportID: String
    private let configuration: PCSCConfiguration
    private let readerIDPrefix: String
    private let events: AsyncStream<ReaderEvent>.Continuation
    private let readerVanished: @Sendable (String) -> Void

    init(
        transportID: String,
        configuration: PCSCConfiguration,
        readerIDPrefix: String,
        events: AsyncStream<ReaderEvent>.Continuation,
        readerVanished: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.transportID = transportID
        self.configuration = configuration
        self.readerIDPrefix = readerIDPrefix
        self.events = events
        self.readerVanished = readerVanished
    }

    func readerID(forReaderNamed name: String) -> ReaderID { ReaderID(readerIDPrefix + name) }

    /// The PC/SC name of a reader the monitor knows (present or not), `nil` for another id.
    func readerName(of reader: ReaderID) -> String? { state.withLock { $0.readers[reader]?.name } }

    // MARK: Sessions

    /// Runs one session on the monitor queue until it is stopped (the calling task is cancelled) or lost.
    func runSession() async -> SessionEnd {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<SessionEnd, Never>) in
                queue.async { continuation.resume(returning: self.session()) }
            }
        } onCancel: {
            requestStop()
        }
    }

    /// Stops the running session and every later one.
    func requestStop() {
        state.withLock { $0.stopRequested = true }
        cancelQueue.async { self.cancelWait() }
    }

    /// Stops for good: no more sessions, and every `waitForCard` caller fails with `readerVanished`.
    func shutDown() {
        let waiters = state.withLock { state in
            state.stopRequested = true
            state.readers = [:]
            let waiters = state.waiters.values.compactMap(\.continuation)
            state.waiters = [:]
            return waiters
        }
        for waiter in waiters {
            waiter.resume(throwing: ProximaError(.readerVanished, "PC/SC transport \"\(transportID)\" stopped"))
        }
    }

    private func cancelWait() {
        let running = state.withLock { state -> Bool in
            guard let context = state.context else { return false }
            // Under the lock, so that the session cannot release the context in between.
            _ = SCardCancel(context)
            return true
        }
        if running {
            cancelQueue.asyncAfter(deadline: .now() + .milliseconds(10)) { self.cancelWait() }
        }
    }

    /// One session, blocking: on the monitor queue only.
    private func session() -> SessionEnd {
        var context = SCARDCONTEXT(0)
        let established = PCSCStatus(SCardEstablishContext(PCSC.scopeSystem, nil, nil, &context))
        guard established.isSuccess else { return .notEstablished(established) }
        let registered = state.withLock { state -> Bool in
            guard !state.stopRequested else { return false }
            state.context = context
            return true
        }
        guard registered else {
            _ = SCardReleaseContext(context)
            return .stopped
        }
        let watched = WatchedReaders()
        let end = watch(context: context, watched: watched)
        state.withLock { $0.context = nil }
        _ = SCardReleaseContext(context)
        if case .lost(let status) = end {
            for name in watched.names { vanish(name, because: "pcscd went away (\(status))") }
        }
        return end
    }

    private func stopRequested() -> Bool { state.withLock { $0.stopRequested } }

    private func watch(context: SCARDCONTEXT, watched: WatchedReaders) -> SessionEnd {
        // Bounds a loop of immediate failures that are not the daemon going away (a reader named in the call
        // vanished just before it, …): each is retried at once, but not forever.
        var immediateFailures = 0
        while true {
            if stopRequested() { return .stopped }
            switch Self.listReaders(context: context) {
            case .success(let names): reconcile(names.filter(configuration.selects(readerNamed:)), watched: watched)
            case .failure(let status): return .lost(status)
            }
            var states = watched.readerStates()
            let status = PCSCStatus(SCardGetStatusChange(context, PCSC.infinite, &states, DWORD(states.count)))
            switch status {
            case .success:
                immediateFailures = 0
                apply(states, watched: watched)
            case .cancelled, .timeout:
                continue
            case .unknownReader, .readerUnavailable:
                immediateFailures += 1
                if immediateFailures > 10 { return .lost(status) }
            default:
                return .lost(status)
            }
        }
    }

    /// `SCardListReaders`; no readers is an empty list.
    static func listReaders(context: SCARDCONTEXT) -> Result<[String], PCSCStatus> {
        // A reader can appear between the call that sizes the buffer and the one that fills it: try again then.
        for _ in 0..<4 {
            var length = DWORD(0)
            var status = PCSCStatus(SCardListReaders(context, nil, nil, &length))
            if status == .noReadersAvailable { return .success([]) }
            guard status.isSuccess else { return .failure(status) }
            var buffer = [CChar](repeating: 0, count: Int(min(max(length, 2), 1 << 16)))
            length = DWORD(buffer.count)
            status = buffer.withUnsafeMutableBufferPointer { pointer in
                PCSCStatus(SCardListReaders(context, nil, pointer.baseAddress, &length))
            }
            if status == .insufficientBuffer { continue }
            if status == .noReadersAvailable { return .success([]) }
            guard status.isSuccess else { return .failure(status) }
            let used = min(Int(length), buffer.count)
            return .success(PCSCMultiString.parse(buffer[..<used].lazy.map { UInt8(bitPattern: $0) }))
        }
        return .failure(.insufficientBuffer)
    }

    // MARK: Readers and cards

    private func reconcile(_ names: [String], watched: WatchedReaders) {
        // pcsc-lite takes at most 16 reader states per call, the PnP pseudo-reader included; it has at most 16
        // readers, and with 16 the PnP entry is dropped (no reader can be added anyway).
        let listed = Array(names.prefix(PCSC.maximumReaderStates))
        let current = Set(listed)
        for name in watched.names where !current.contains(name) {
            watched.remove(name)
            vanish(name, because: "pcscd no longer lists it")
        }
        for name in listed where !watched.contains(name) {
            watched.add(name)
            let info = ReaderInfo(
                id: readerID(forReaderNamed: name),
                name: name,
                transport: transportID,
                supportsExtendedLength: configuration.extendedLength != .never
            )
            state.withLock { $0.readers[info.id] = Reader(name: name) }
            events.yield(.appeared(info))
        }
    }

    private func vanish(_ name: String, because reason: String) {
        let id = readerID(forReaderNamed: name)
        let waiters = state.withLock { state in
            state.readers[id] = nil
            return takeWaiters(&state) { $0.readerName == name }
        }
        events.yield(.vanished(id))
        readerVanished(name)
        let error = ProximaError(.readerVanished, "reader '\(name)' vanished: \(reason)", reader: id)
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    private func apply(_ states: [SCARD_READERSTATE], watched: WatchedReaders) {
        for (index, readerState) in states.enumerated() {
            let event = readerState.dwEventState
            guard let name = watched.update(index: index, eventState: event) else { continue }
            // A reader that is gone reads UNKNOWN; the next SCardListReaders removes it.
            guard event & (PCSC.stateUnknown | PCSC.stateIgnore) == 0 else { continue }
            let present = event & PCSC.statePresent != 0
            let counter = event >> 16
            let previous = watched.cardState(of: name)
            watched.setCardState(of: name, present: present, counter: counter)
            // pcsc-lite fills rgbAtr from pcscd's reader state whenever the card is present: what SCardStatus says.
            let atr = present && event & PCSC.stateMute == 0 ? Self.atr(of: readerState) : []
            // The high 16 bits count insertions and removals: a jump of 2 or more while the card still reads
            // present means it was removed and another was presented between two calls.
            let swapped = previous.present && present && previous.counter.map { (counter &- $0) & 0xFFFF >= 2 } == true
            if previous.present && (!present || swapped) { cardRemoved(name) }
            if present && (!previous.present || swapped) {
                cardPresented(name, atr: atr)
            } else if present {
                // The same card, now powered (or mute): keep its ATR current.
                let id = readerID(forReaderNamed: name)
                state.withLock { $0.readers[id]?.atr = atr }
            }
        }
    }

    private static func atr(of readerState: SCARD_READERSTATE) -> [UInt8] {
        let count = Int(min(readerState.cbAtr, DWORD(MemoryLayout.size(ofValue: readerState.rgbAtr))))
        return withUnsafeBytes(of: readerState.rgbAtr) { Array($0.prefix(count)) }
    }

    private func cardPresented(_ name: String, atr: [UInt8]) {
        let id = readerID(forReaderNamed: name)
        let (generation, waiters) = state.withLock { state -> (UInt64, [WaiterContinuation]) in
            guard var reader = state.readers[id] else { return (0, []) }
            reader.present = true
            reader.generation += 1
            reader.atr = atr
            state.readers[id] = reader
            let generation = reader.generation
            return (generation, takeWaiters(&state) { $0.readerName == name && generation > $0.after })
        }
        events.yield(.cardPresent(id))
        for waiter in waiters { waiter.resume(returning: (name, generation)) }
    }

    private func cardRemoved(_ name: String) {
        let id = readerID(forReaderNamed: name)
        state.withLock { state in
            state.readers[id]?.present = false
            state.readers[id]?.atr = []
        }
        events.yield(.cardRemoved(id))
    }

    /// The ATR pcscd reported for card arrival number `generation` on `reader`, if that card is still the one the
    /// monitor last saw there and it has one; `nil` otherwise (ask `SCardStatus`).
    func atr(of reader: ReaderID, generation: UInt64) -> [UInt8]? {
        state.withLock { state in
            guard let known = state.readers[reader], known.present, known.generation == generation,
                !known.atr.isEmpty
            else { return nil }
            return known.atr
        }
    }

    // MARK: Waiting for a card

    private typealias WaiterContinuation = CheckedContinuation<(name: String, generation: UInt64), any Error>

    /// Removes the waiters `matching` and returns their continuations.
    private func takeWaiters(_ state: inout State, matching: (Waiter) -> Bool) -> [WaiterContinuation] {
        var taken: [WaiterContinuation] = []
        for (key, waiter) in state.waiters where matching(waiter) {
            guard let continuation = waiter.continuation else { continue }
            state.waiters[key] = nil
            taken.append(continuation)
        }
        return taken
    }

    /// Waits until the monitor has seen a card on `reader` that arrived after card arrival number `after`.
    ///
    /// - Returns: the reader's PC/SC name and the arrival number of the card now present.
    /// - Throws: `ProximaError.readerVanished` when the reader is unknown or leaves, `.cancelled` when the task is
    ///   cancelled.
    func waitForCard(on reader: ReaderID, after: UInt64) async throws -> (name: String, generation: UInt64) {
        // The entry exists from here until the wait ends, so a cancellation before the continuation is installed
        // can mark it, and one after the wait ended finds nothing to do.
        let key = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            state.waiters[state.nextWaiter] = Waiter(readerName: "", after: after, continuation: nil)
            return state.nextWaiter
        }
        let cancelled = ProximaError(.cancelled, "cancelled while waiting for a card", reader: reader)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: WaiterContinuation) in
                let immediate = state.withLock { state -> Result<(name: String, generation: UInt64), any Error>? in
                    if state.waiters.removeValue(forKey: key)?.cancelled == true { return .failure(cancelled) }
                    guard !state.stopRequested, let known = state.readers[reader] else {
                        return .failure(
                            ProximaError(
                                .readerVanished,
                                "PC/SC transport \"\(transportID)\" has no reader \(reader) (unknown or vanished)",
                                reader: reader
                            )
                        )
                    }
                    if known.present && known.generation > after { return .success((known.name, known.generation)) }
                    state.waiters[key] = Waiter(readerName: known.name, after: after, continuation: continuation)
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let continuation = state.withLock { state -> WaiterContinuation? in
                guard let waiter = state.waiters[key] else { return nil }
                guard let continuation = waiter.continuation else {
                    state.waiters[key]?.cancelled = true
                    return nil
                }
                state.waiters[key] = nil
                return continuation
            }
            continuation?.resume(throwing: cancelled)
        }
    }
}

/// The readers a session watches, in call order, with the C strings and states `SCardGetStatusChange` takes.
///
/// Used by one session on the monitor queue only; it frees its C strings when the session drops it.
private final class WatchedReaders {
    private struct Entry {
        var name: String
        var cName: UnsafeMutablePointer<CChar>
        var currentState: DWORD
        var present = false
        var counter: DWORD? = nil
    }

    private var entries: [Entry] = []
    private let plugAndPlay: UnsafeMutablePointer<CChar>
    private var plugAndPlayState = PCSC.stateUnaware

    init() {
        plugAndPlay = Self.duplicate(PCSC.plugAndPlayReaderName)
    }

    deinit {
        for entry in entries { entry.cName.deallocate() }
        plugAndPlay.deallocate()
    }

    private static func duplicate(_ string: String) -> UnsafeMutablePointer<CChar> {
        let utf8 = Array(string.utf8CString)
        let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count)
        pointer.initialize(from: utf8, count: utf8.count)
        return pointer
    }

    var names: [String] { entries.map(\.name) }

    func contains(_ name: String) -> Bool { entries.contains { $0.name == name } }

    func add(_ name: String) {
        entries.append(Entry(name: name, cName: Self.duplicate(name), currentState: PCSC.stateUnaware))
    }

    func remove(_ name: String) {
        guard let index = entries.firstIndex(where: { $0.name == name }) else { return }
        entries[index].cName.deallocate()
        entries.remove(at: index)
    }

    /// One state per reader, then the PnP pseudo-reader when there is room for it.
    func readerStates() -> [SCARD_READERSTATE] {
        var states = entries.map { entry in
            var state = SCARD_READERSTATE()
            state.szReader = UnsafePointer(entry.cName)
            state.dwCurrentState = entry.currentState
            return state
        }
        if states.count < PCSC.maximumReaderStates {
            var state = SCARD_READERSTATE()
            state.szReader = UnsafePointer(plugAndPlay)
            state.dwCurrentState = plugAndPlayState
            states.append(state)
        }
        return states
    }

    /// Takes the state pcsc-lite reported as the next call's current state; returns the reader's name, or `nil`
    /// for the PnP entry.
    func update(index: Int, eventState: DWORD) -> String? {
        guard index < entries.count else {
            plugAndPlayState = eventState
            return nil
        }
        entries[index].currentState = eventState
        return entries[index].name
    }

    func cardState(of name: String) -> (present: Bool, counter: DWORD?) {
        guard let entry = entries.first(where: { $0.name == name }) else { return (false, nil) }
        return (entry.present, entry.counter)
    }

    func setCardState(of name: String, present: Bool, counter: DWORD) {
        guard let index = entries.firstIndex(where: { $0.name == name }) else { return }
        entries[index].present = present
        entries[index].counter = counter
    }
}
