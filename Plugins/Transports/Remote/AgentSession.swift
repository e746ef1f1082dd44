internal import ExternalTransport
internal import Foundation
internal import Glibc
internal import ProximaCore
internal import ProximaSystem
internal import Synchronization

/// The agent's end of one TLS link to the store: frames in, frames out, on one thread.
///
/// **Thread.** `agent-link` polls the socket and a wake pipe, reads, and writes what ``send(_:)`` could not write at
/// once (a full socket buffer); ``send(_:)`` writes a frame itself when nothing waits before it (a non-blocking TLS
/// write, under the link's lock). Frames read are
/// parsed (``AgentRequest``) and go out through ``incoming``; the first fault (end of the link, a TLS alert, a
/// malformed or oversized frame, no kernel `hello` in time) or ``stop()`` ends the session: the link is shut down and
/// freed, and ``incoming`` yields ``Incoming/ended(_:)`` and finishes.
///
/// `@unchecked Sendable`: `outbox`, `stopping` and the wake pipe's state sit behind `state`'s lock; writes to `link`
/// happen under it too (so frames keep their order), and `link` guards its own `SSL` object.
final class AgentSession: @unchecked Sendable {
    enum Incoming: Sendable {
        case request(AgentRequest)
        case ended(String)
    }

    let incoming: AsyncStream<Incoming>
    private let continuation: AsyncStream<Incoming>.Continuation
    private let link: TLSLink
    /// The session's thread as a task executor: the agent answers the store's requests on it (``RemoteAgent`` runs its
    /// request loop with this preference), so a request read here is answered by the same thread, with no hop.
    let executor: LinkExecutor
    private let maximumFrameBytes: Int
    private let helloTimeout: Duration
    private let state = Mutex(State())

    private struct State {
        var outbox: [UInt8] = []
        var stopReason: String?
        /// Cleared when the thread ends: nothing is written to the link after that.
        var wakeOpen = true
        var ended = false
        var endWaiters: [CheckedContinuation<Void, Never>] = []
    }

    init(link: TLSLink, maximumFrameBytes: Int, helloTimeout: Duration) throws(TLSFailure) {
        do {
            executor = try LinkExecutor()
        } catch {
            link.terminate()
            link.closeOutput()
            throw TLSFailure("cannot make a wake pipe: \(error)")
        }
        self.link = link
        self.maximumFrameBytes = maximumFrameBytes
        self.helloTimeout = helloTimeout
        (incoming, continuation) = AsyncStream.makeStream(of: Incoming.self, bufferingPolicy: .unbounded)
        let thread = Thread { [self] in serve() }
        thread.name = "agent-link"
        thread.start()
    }

    /// Queues `message` for the store.
    func send(_ message: JSONValue) { send(frame: DriverFrame.encode(message)) }

    /// Queues a frame already encoded (``AgentMessage/transmitResult(_:_:)``).
    func send(frame: [UInt8]) {
        state.withLock { state in
            guard state.stopReason == nil, state.wakeOpen else { return }
            if state.outbox.isEmpty {
                // Nothing queued before it: written at once (a non-blocking TLS write), the rest left to the thread.
                switch link.write(frame[...]) {
                case .wrote(let count) where count == frame.count: return
                case .wrote(let count): state.outbox = Array(frame[count...])
                case .wouldBlock: state.outbox = frame
                case .closed, .failed: return  // the thread reads why
                }
            } else {
                state.outbox += frame
            }
            executor.wake()
        }
    }

    /// Ends the session with `reason`; returns at once.
    func stop(_ reason: String) {
        state.withLock { state in
            if state.stopReason == nil { state.stopReason = reason }
        }
        executor.wake()
    }

    /// Waits until the link is closed and the thread has ended.
    func waitUntilEnded() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.ended { return true }
                state.endWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func serve() {
        executor.attachCurrentThread()
        var decoder = DriverFrame.Decoder(maximumPayload: maximumFrameBytes)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var outboxWaiting = false
        let helloDeadline = ContinuousClock.now + helloTimeout
        var helloSeen = false
        var reason: String?
        loop: while reason == nil {
            // Answers resumed by the last read run first: each writes its frame at once.
            executor.runJobs()
            // The outbox is written under the lock that senders hold, so frames keep their order.
            let (stop, written, outboxLeft) = state.withLock { state -> (String?, WriteOutcome?, Bool) in
                guard state.stopReason == nil else { return (state.stopReason, nil, false) }
                var last: WriteOutcome?
                while !state.outbox.isEmpty {
                    let outcome = link.write(state.outbox[...])
                    last = outcome
                    guard case .wrote(let count) = outcome else { break }
                    state.outbox.removeFirst(count)
                }
                return (nil, last, !state.outbox.isEmpty)
            }
            if let stop {
                reason = stop
                break
            }
            switch written {
            case .failed(let error)? where error.errno == 0:
                reason = error.call
                break loop
            case .closed?, .failed?:
                // Whatever the store said last (a TLS alert refusing this agent) is still to be read.
                if case .failed(let error) = link.read(into: &buffer) {
                    reason = error.call
                } else {
                    reason = "the store closed the connection"
                }
                break loop
            default:
                break
            }
            outboxWaiting = outboxLeft
            let now = ContinuousClock.now
            if !helloSeen && now >= helloDeadline {
                reason = "no hello from the store within \(helloTimeout)"
                break
            }
            let left = helloSeen ? Duration.seconds(1) : helloDeadline - now
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            var entries = [
                pollfd(
                    fd: link.inputDescriptor,
                    events: Int16(POLLIN | (outboxWaiting ? POLLOUT : 0)),
                    revents: 0
                ),
                pollfd(fd: executor.wakeDescriptor, events: Int16(POLLIN), revents: 0),
            ]
            let jobsWaiting = executor.beginPolling()
            let timeout: Int32 =
                link.hasBufferedInput || jobsWaiting ? 0 : Int32(clamping: max(1, milliseconds + 1))
            _ = poll(&entries, 2, timeout)
            executor.endPolling(woken: entries[1].revents != 0)
            guard entries[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 || link.hasBufferedInput else { continue }
            switch link.read(into: &buffer) {
            case .bytes(let count):
                decoder.append(buffer[..<count])
                while reason == nil {
                    let payload: [UInt8]
                    do {
                        guard let next = try decoder.next() else { break }
                        payload = next
                    } catch {
                        reason = "a bad frame from the store: \(error)"
                        break
                    }
                    do {
                        let request = try AgentRequest.parse(payload)
                        switch request {
                        case .bye(let why):
                            // Ends the session here, before the end of the stream that follows it can be read.
                            reason = "the store ended the session: \(why.isEmpty ? "no reason given" : why)"
                        case .hello:
                            helloSeen = true
                            continuation.yield(.request(request))
                        default:
                            continuation.yield(.request(request))
                        }
                    } catch let error as ProximaError {
                        reason = "a malformed frame from the store: \(error.pathAndReason)"
                    } catch {
                        reason = "a malformed frame from the store: \(error)"
                    }
                }
            case .wouldBlock:
                continue
            case .endOfFile:
                reason = "the store closed the connection"
            case .failed(let error):
                // A TLS alert from the store (expired or unknown certificate) is reported here.
                reason = error.call
            }
        }
        state.withLock { state in
            if state.stopReason == nil { state.stopReason = reason }
            state.wakeOpen = false
            state.outbox = []
        }
        executor.runJobs()
        executor.end()
        link.closeGracefully(within: .milliseconds(200))
        continuation.yield(.ended(reason ?? "stopped"))
        continuation.finish()
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.ended = true
            defer { state.endWaiters = [] }
            return state.endWaiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
