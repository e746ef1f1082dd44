internal import Foundation
package import ProximaCore
internal import Synchronization

/// Why a driver session ended badly; the supervisor restarts the driver (or opens the breaker) after any of them.
public struct DriverFault: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable {
        /// The driver closed its standard output or exited.
        case exited
        /// A call or the handshake went past its timeout.
        case hung
        /// A frame was not a valid message (JSON, members, an event before `hello`, a second `hello`).
        case malformed
        /// A frame announced more bytes than `maxFrameBytes`.
        case oversized
        /// An answer to a request id that was never sent or already answered.
        case lied
        /// Events came faster than `maxEventsPerSecond`.
        case flooded
        /// The handshake was refused: an unknown protocol major version.
        case refused
        /// The driver could not be started: missing, writable by others, wrong `sha256`, or `posix_spawn` failed.
        case notStarted
        /// The kernel stopped it (shutdown); not a failure.
        case stopped
    }

    public var kind: Kind
    public var detail: String

    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    public var description: String { "\(kind.rawValue): \(detail)" }
}

/// One running driver process and the protocol session with it.
///
/// **Threads.** One thread per driver (named `driver:<plugin id>`) blocks in `poll` on the driver's standard output
/// and error, a wake pipe and, while frames wait to be written, its standard input. It parses frames, resumes the
/// calls they answer, passes events on through ``incoming``, logs standard error, and enforces every deadline (the
/// handshake's and each call's): `poll` sleeps until the earliest one, or one call timeout when there is none, so a new
/// call never has to wake it. Calls write their frame at once from the calling task (a non-blocking write into a 1 MiB
/// pipe); whatever does not fit is queued for the thread, which is then woken.
///
/// **Ending.** On the first fault (or ``stop()``) every pending call fails with `readerVanished`, the driver's process
/// group gets `SIGKILL`, and the thread drains its pipes until they close (at most one second), reaps the child with
/// `waitpid`, closes every descriptor and finishes ``incoming``. ``waitUntilEnded()`` returns after that.
///
/// `@unchecked Sendable`: every mutable member sits behind a `Mutex` (`state` for calls and faults, `writer` for what
/// goes to standard input); the descriptors are only closed by the thread, standard input and the wake pipe under the
/// writer's lock.
package final class DriverConnection: @unchecked Sendable {
    package enum Incoming: Sendable {
        case message(DriverMessage)
        case failed(DriverFault)
    }

    package let pluginID: String
    /// The driver's pid, 0 for a remote agent.
    package let pid: Int32
    let pipeInodes: [UInt64]
    package let incoming: AsyncStream<Incoming>

    private let continuation: AsyncStream<Incoming>.Continuation
    private let link: any DriverLink
    /// The connection's thread as a task executor: a tap that prefers it (``ExternalCardChannel/preferredTaskExecutor``)
    /// writes its frames and is resumed by their answers on this thread, with no hop through the cooperative pool.
    package let executor: LinkExecutor
    private let configuration: ExternalConfiguration
    private let log: @Sendable (String) -> Void
    private let state: Mutex<State>

    private struct Pending {
        var continuation: CheckedContinuation<JSONValue, any Error>
        var deadline: ContinuousClock.Instant
        /// What the call is, for the `hung` fault: formatted only then, not for every call.
        var what: String
        var id: Int64
    }

    private struct State {
        var nextID: Int64 = 1
        var pending: [Int64: Pending] = [:]
        /// Calls cancelled before their frame went out or their answer came back: a late answer to one is no lie.
        var abandoned: Set<Int64> = []
        var abandonedOrder: [Int64] = []
        var cancelledEarly: Set<Int64> = []
        var fault: DriverFault?
        var stopRequested = false
        var helloDeadline: ContinuousClock.Instant?
        var ended = false
        var endWaiters: [CheckedContinuation<DriverExitStatus?, Never>] = []
        var exitStatus: DriverExitStatus?
    }

    /// The standard input's side, behind a lock of its own so that a write (a system call) never holds up the thread
    /// that matches answers to calls.
    private struct Writer {
        var outbox: [UInt8] = []
        var standardInputOpen = true
    }

    private let writer = Mutex(Writer())
    /// Whether the outbox holds bytes: read by the thread on every turn without taking the writer's lock, which a
    /// caller holds across its `write` (checking under the lock made the two contend on every APDU).
    private let outboxPending = Atomic<Bool>(false)
    private static let abandonedLimit = 1024

    /// Starts `executable` and the thread that serves it, and sends the kernel's `hello`.
    /// - Throws: ``DriverFault`` `.notStarted` when a pipe or `posix_spawn` fails.
    convenience init(
        pluginID: String,
        executable: String,
        configuration: ExternalConfiguration,
        log: @escaping @Sendable (String) -> Void
    ) throws(DriverFault) {
        var environment = DriverSystemCalls.environment().filter { entry in
            guard let key = entry.split(separator: "=", maxSplits: 1).first else { return true }
            return configuration.environment[String(key)] == nil
        }
        environment += configuration.environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let process: SpawnedProcess
        do {
            process = try DriverSystemCalls.spawn(
                executable: executable,
                arguments: configuration.arguments,
                environment: environment,
                workingDirectory: configuration.workingDirectory
            )
        } catch {
            throw DriverFault(.notStarted, "\(error)")
        }
        let link = ProcessDriverLink(process)
        do {
            try self.init(pluginID: pluginID, link: link, configuration: configuration, log: log)
        } catch {
            link.terminate()
            link.closeInput()
            link.closeLog()
            link.closeOutput()
            _ = link.reap()
            throw error
        }
    }

    /// Serves the protocol over `link` (a child's pipes or an agent's TLS connection) on a thread of its own, and
    /// sends the kernel's `hello`. The connection owns `link` from now on and closes it when it ends.
    /// - Parameters:
    ///   - configuration: the session's limits (``ExternalConfiguration/callTimeout``, handshake timeout, frame size,
    ///     event rate, log rate); its command members are not used.
    /// - Throws: ``DriverFault`` `.notStarted` when the wake pipe cannot be made (`link` is then not touched).
    package init(
        pluginID: String,
        link: any DriverLink,
        configuration: ExternalConfiguration,
        log: @escaping @Sendable (String) -> Void
    ) throws(DriverFault) {
        self.pluginID = pluginID
        self.configuration = configuration
        self.log = log
        do {
            executor = try LinkExecutor()
        } catch {
            throw DriverFault(.notStarted, "\(error)")
        }
        self.link = link
        pid = link.processID ?? 0
        pipeInodes = link.inodes
        (incoming, continuation) = AsyncStream.makeStream(of: Incoming.self, bufferingPolicy: .unbounded)
        var initial = State()
        initial.helloDeadline = .now + configuration.handshakeTimeout
        state = Mutex(initial)
        send(KernelMessage.hello())
        let thread = Thread { [self] in serve() }
        thread.name = "driver:\(pluginID)"
        thread.start()
    }

    // MARK: Calls

    /// Sends request `type` with `members` and waits for its answer: the `result` object.
    ///
    /// - Throws: `ProximaError` — the code the driver answered with (``DriverErrorCode``), `readerVanished` when the
    ///   driver fails or is stopped before answering, `cancelled` when the calling task is cancelled.
    func call(_ type: String, _ members: [(key: String, value: JSONValue)], what: String) async throws -> JSONValue {
        try await call(what: what) { id, milliseconds in
            var fields: [(key: String, value: JSONValue)] = [("type", .string(type)), ("id", .integer(id))]
            fields += members
            fields.append(("timeoutMs", .integer(milliseconds)))
            return DriverFrame.encode(.object(fields))
        }
    }

    /// ``call(_:_:what:)`` with the frame written by `frame` from the request id and the timeout in milliseconds (the
    /// `transmit` request, written straight into its frame).
    func call(what: String, frame makeFrame: (Int64, Int64) -> [UInt8]) async throws -> JSONValue {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let timeout = configuration.callTimeout
        let milliseconds = timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        let frame = makeFrame(id, milliseconds)
        let deadline = ContinuousClock.now + timeout + ExternalConfiguration.timeoutGrace
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<JSONValue, any Error>) in
                let registered = state.withLock { state -> Bool in
                    if let fault = state.fault {
                        continuation.resume(throwing: Self.vanished(fault, pluginID: pluginID))
                        return false
                    }
                    if state.cancelledEarly.remove(id) != nil {
                        continuation.resume(throwing: ProximaError(.cancelled, "\(what) cancelled"))
                        return false
                    }
                    state.pending[id] = Pending(continuation: continuation, deadline: deadline, what: what, id: id)
                    return true
                }
                // No wake-up for the deadline: it is at least a call timeout away, and the thread never sleeps longer
                // than that.
                if registered { enqueue(frame) }
            }
        } onCancel: {
            state.withLock { state in
                if let pending = state.pending.removeValue(forKey: id) {
                    Self.abandon(id, state: &state)
                    pending.continuation.resume(throwing: ProximaError(.cancelled, "\(what) cancelled"))
                } else if state.fault == nil {
                    state.cancelledEarly.insert(id)
                }
            }
        }
    }

    /// Queues a frame that answers nothing (the kernel's `hello` and `bye`).
    package func send(_ message: JSONValue) {
        guard state.withLock({ $0.fault == nil }) else { return }
        enqueue(DriverFrame.encode(message))
    }

    /// Writes what it can of `frame` now; what is left waits in the outbox for the thread, which is woken.
    private func enqueue(_ frame: [UInt8]) {
        writer.withLock { writer in
            guard writer.standardInputOpen else { return }
            guard writer.outbox.isEmpty else {
                writer.outbox += frame
                return
            }
            guard link.writesFromCallers else {
                writer.outbox = frame
                outboxPending.store(true, ordering: .releasing)
                executor.wake()
                return
            }
            switch link.write(frame[...]) {
            case .wrote(let count) where count == frame.count:
                return
            case .wrote(let count):
                writer.outbox = Array(frame[count...])
            case .wouldBlock:
                writer.outbox = frame
            case .closed, .failed:
                return  // the thread sees the driver's end of its pipes close and reports why
            }
            outboxPending.store(true, ordering: .releasing)
            executor.wake()
        }
    }

    /// Wakes the thread from `poll` (the executor keeps the wake pipe open until the thread ends).
    private func wakeThread() { executor.wake() }

    private static func abandon(_ id: Int64, state: inout State) {
        state.abandoned.insert(id)
        state.abandonedOrder.append(id)
        if state.abandonedOrder.count > abandonedLimit {
            state.abandoned.remove(state.abandonedOrder.removeFirst())
        }
    }

    static func vanished(_ fault: DriverFault, pluginID: String) -> ProximaError {
        ProximaError(.readerVanished, "the driver of external transport \"\(pluginID)\" failed (\(fault))")
    }

    /// Ends the session: the driver is killed and its pending calls fail. Returns at once; see ``waitUntilEnded()``.
    package func fail(_ fault: DriverFault) {
        let waiting = state.withLock { state -> [Pending]? in
            guard state.fault == nil else { return nil }
            state.fault = fault
            state.stopRequested = true
            state.helloDeadline = nil
            defer { state.pending = [:] }
            return Array(state.pending.values)
        }
        guard let waiting else { return }
        wakeThread()
        for pending in waiting { pending.continuation.resume(throwing: Self.vanished(fault, pluginID: pluginID)) }
        continuation.yield(.failed(fault))
    }

    /// Stops the driver (kernel shutdown).
    package func stop() { fail(DriverFault(.stopped, "the kernel stopped the driver")) }

    /// Waits until the process was reaped and every descriptor closed; returns how it exited.
    package func waitUntilEnded() async -> DriverExitStatus? {
        await withCheckedContinuation { continuation in
            let status = state.withLock { state -> DriverExitStatus?? in
                if state.ended { return .some(state.exitStatus) }
                state.endWaiters.append(continuation)
                return nil
            }
            if let status { continuation.resume(returning: status) }
        }
    }

    // MARK: The thread

    private func serve() {
        executor.attachCurrentThread()
        var decoder = DriverFrame.Decoder(maximumPayload: configuration.maximumFrameBytes)
        var stderrLog = DriverStderrLog(linesPerSecond: Double(configuration.stderrLinesPerSecond))
        var events = RateLimiter(
            ratePerSecond: Double(configuration.maximumEventsPerSecond),
            burst: configuration.eventBurst
        )
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var inputOpen = true
        var logOpen = link.logDescriptor != nil
        var helloSeen = false
        var killedAt: ContinuousClock.Instant?

        func closeInput() {
            if inputOpen {
                link.closeInput()
                inputOpen = false
            }
        }

        while inputOpen || logOpen {
            // Tap code resumed by the last read (or enqueued from elsewhere) runs first: it may write the next frame.
            executor.runJobs()
            let now = ContinuousClock.now
            let (deadline, stopping) = state.withLock { state in
                var earliest = state.helloDeadline
                for pending in state.pending.values where earliest.map({ pending.deadline < $0 }) ?? true {
                    earliest = pending.deadline
                }
                return (earliest, state.stopRequested)
            }
            let wantsWrite = !stopping && outboxPending.load(ordering: .acquiring)
            if stopping && killedAt == nil {
                link.terminate()
                killedAt = now
                closeInput()
            }
            if let killedAt, now - killedAt > .seconds(1) { break }  // a descendant outside the group holds a pipe

            if let deadline, killedAt == nil, now >= deadline {
                let what = state.withLock { state in
                    state.pending.values.filter { $0.deadline <= now }.map { "\($0.what) #\($0.id)" }.first
                }
                if let what {
                    fail(DriverFault(.hung, "no answer to \(what) within \(configuration.callTimeout)"))
                } else {
                    fail(DriverFault(.hung, "no hello within \(configuration.handshakeTimeout) of starting"))
                }
                continue
            }

            var entries: [(fd: Int32, read: Bool, write: Bool)] = [(executor.wakeDescriptor, true, false)]
            if inputOpen {
                entries.append(
                    (link.inputDescriptor, true, wantsWrite && link.outputDescriptor == link.inputDescriptor)
                )
            }
            if wantsWrite && (!inputOpen || link.outputDescriptor != link.inputDescriptor) {
                entries.append((link.outputDescriptor, false, true))
            }
            if logOpen, let fd = link.logDescriptor { entries.append((fd, true, false)) }
            // Without a deadline, sleep one call timeout at most: a call registered meanwhile has a deadline at least
            // that far away, so it needs no wake-up (one fewer thread switch per APDU).
            let horizon = deadline ?? now + configuration.callTimeout + ExternalConfiguration.timeoutGrace
            let left = horizon - now
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            let buffered = inputOpen && link.hasBufferedInput
            let jobsWaiting = executor.beginPolling()
            let timeout: Int32 =
                buffered || jobsWaiting ? 0 : killedAt != nil ? 100 : Int32(clamping: max(1, milliseconds + 1))
            let ready = DriverSystemCalls.poll(entries, timeout: timeout)
            let woken = ready[executor.wakeDescriptor]?.read == true
            executor.endPolling(woken: woken)

            if woken {
                // A frame queued by a caller of a link only this thread writes: out now, not after one more poll.
                if !link.writesFromCallers && !stopping && outboxPending.load(ordering: .acquiring) { flushOutbox() }
            }
            if wantsWrite, ready[link.outputDescriptor]?.write == true { flushOutbox() }
            if inputOpen, buffered || ready[link.inputDescriptor]?.read == true {
                switch link.read(into: &buffer) {
                case .bytes(let count):
                    decoder.append(buffer[..<count])
                    readFrames(&decoder, events: &events, helloSeen: &helloSeen)
                    if state.withLock({ $0.fault != nil }) { closeInput() }
                case .wouldBlock:
                    break
                case .endOfFile:
                    closeInput()
                    fail(
                        DriverFault(
                            .exited,
                            link.processID != nil
                                ? "the driver closed its standard output" : "\(link.peerName) closed the connection"
                        )
                    )
                case .failed(let error):
                    closeInput()
                    fail(DriverFault(.exited, "reading from \(link.peerName): \(error)"))
                }
            }
            if logOpen, let fd = link.logDescriptor, ready[fd]?.read == true {
                switch link.readLog(into: &buffer) {
                case .bytes(let count):
                    for line in stderrLog.consume(buffer[..<count], at: .now) { log(line) }
                case .wouldBlock:
                    break
                case .endOfFile, .failed:
                    link.closeLog()
                    logOpen = false
                }
            }
        }
        closeInput()
        executor.runJobs()
        executor.end()
        if logOpen { link.closeLog() }
        for line in stderrLog.finish(at: .now) { log(line) }
        if killedAt == nil { link.terminate() }
        let status = link.reap()
        writer.withLock { writer in
            writer.standardInputOpen = false
            writer.outbox = []
            link.closeOutput()
        }
        continuation.finish()
        let waiters = state.withLock { state in
            state.ended = true
            state.exitStatus = status
            defer { state.endWaiters = [] }
            return state.endWaiters
        }
        for waiter in waiters { waiter.resume(returning: status) }
    }

    private func flushOutbox() {
        writer.withLock { writer in
            guard writer.standardInputOpen, !writer.outbox.isEmpty else {
                outboxPending.store(false, ordering: .releasing)
                return
            }
            switch link.write(writer.outbox[...]) {
            case .wrote(let count): writer.outbox.removeFirst(count)
            case .wouldBlock: break
            case .closed, .failed: writer.outbox = []
            }
            if writer.outbox.isEmpty { outboxPending.store(false, ordering: .releasing) }
        }
    }

    private func readFrames(
        _ decoder: inout DriverFrame.Decoder,
        events: inout RateLimiter,
        helloSeen: inout Bool
    ) {
        while true {
            let payload: [UInt8]
            do {
                guard let next = try decoder.next() else { return }
                payload = next
            } catch {
                let kind: DriverFault.Kind = if case .oversized = error { .oversized } else { .malformed }
                fail(DriverFault(kind, "\(error)"))
                return
            }
            let message: DriverMessage
            do {
                message = try DriverMessage.parse(payload)
            } catch let error as ProximaError {
                fail(DriverFault(.malformed, error.reason))
                return
            } catch {
                fail(DriverFault(.malformed, "\(error)"))
                return
            }
            switch message {
            case .hello:
                guard !helloSeen else {
                    fail(DriverFault(.malformed, "a second hello"))
                    return
                }
                helloSeen = true
                state.withLock { $0.helloDeadline = nil }
                continuation.yield(.message(message))
            case .result(let id, let body):
                guard answer(id, with: .success(body)) else { return }
            case .error(let id, let code, let text):
                let kernelCode = DriverErrorCode(rawValue: code)?.kernelCode ?? .transmitFailed
                let reason = text.isEmpty ? "the driver answered \(code)" : "the driver answered \(code): \(text)"
                guard answer(id, with: .failure(ProximaError(kernelCode, reason))) else { return }
            case .readers, .readerAppeared, .readerVanished, .cardPresent, .cardRemoved:
                guard helloSeen else {
                    fail(DriverFault(.malformed, "an event before the driver's hello"))
                    return
                }
                guard events.allow(at: .now) else {
                    fail(
                        DriverFault(
                            .flooded,
                            "events faster than \(configuration.maximumEventsPerSecond) per second"
                        )
                    )
                    return
                }
                continuation.yield(.message(message))
            }
        }
    }

    /// Resumes the call `id`; `false` (and the session fails) when no such call is pending.
    private func answer(_ id: Int64, with result: Result<JSONValue, ProximaError>) -> Bool {
        let outcome = state.withLock { state -> (Pending?, Bool) in
            if let pending = state.pending.removeValue(forKey: id) { return (pending, true) }
            if state.abandoned.remove(id) != nil { return (nil, true) }
            return (nil, false)
        }
        switch outcome {
        case (let pending?, _):
            pending.continuation.resume(with: result.mapError { $0 as any Error })
            return true
        case (nil, true):
            return true
        case (nil, false):
            fail(DriverFault(.lied, "an answer to request #\(id), which is not waiting for one"))
            return false
        }
    }
}
