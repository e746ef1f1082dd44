package import ProximaCore
internal import Synchronization

/// One read at a time, and a way to cancel it from another task (Apple's `cancelRead()`): one slot per reader
/// object of the API.
///
/// `Sendable`: its one value sits behind a `Mutex`.
package final class PaymentReadSlot: Sendable {
    private struct Active: Sendable {
        var owner: ObjectIdentifier
        var cancel: AsyncStream<Void>.Continuation
        var cancelRequested = false
    }

    private let active = Mutex<Active?>(nil)

    package init() {}

    /// Asks the read of `owner` to stop; `false` when `owner` has no read in progress.
    @discardableResult
    package func cancel(owner: ObjectIdentifier) -> Bool {
        let signal = active.withLock { active -> AsyncStream<Void>.Continuation? in
            guard active?.owner == owner else { return nil }
            active?.cancelRequested = true
            return active?.cancel
        }
        signal?.yield()
        return signal != nil
    }

    /// Takes the slot for `owner`, or throws `readerBusy`.
    package func begin(owner: ObjectIdentifier, lane: LaneID) throws(PaymentServiceError) -> AsyncStream<Void> {
        let (signal, continuation) = AsyncStream.makeStream(of: Void.self)
        let busy = active.withLock { active -> Bool in
            guard active == nil else { return true }
            active = Active(owner: owner, cancel: continuation)
            return false
        }
        guard !busy else {
            throw PaymentServiceError(
                .readerBusy,
                "another read is in progress on this reader (lane \(lane)); one read at a time"
            )
        }
        return signal
    }

    package func end() {
        let continuation = active.withLock { active -> AsyncStream<Void>.Continuation? in
            defer { active = nil }
            return active?.cancel
        }
        continuation?.finish()
    }

    private var cancelRequested: Bool { active.withLock { $0?.cancelRequested ?? false } }

    /// Runs `operation` until it ends or ``cancel(owner:)`` is called, whichever comes first. A read that ended
    /// before the cancellation keeps its result; one cancelled throws `readCancelled` with the kernel's error as
    /// its cause.
    package func cancellable<T: Sendable>(
        _ signal: AsyncStream<Void>,
        lane: LaneID,
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let result: Result<T, any Error> = await withTaskGroup(of: SlotEnding<T>?.self) { group in
            group.addTask {
                for await _ in signal { return .cancelRequested }
                return nil
            }
            group.addTask {
                do {
                    return .finished(.success(try await operation()))
                } catch {
                    return .finished(.failure(error))
                }
            }
            var result: Result<T, any Error> = .failure(CancellationError())
            while let ending = await group.next() {
                switch ending {
                case .finished(let finished)?:
                    result = finished
                    group.cancelAll()
                case .cancelRequested?:
                    group.cancelAll()
                case nil:
                    continue
                }
            }
            return result
        }
        if case .failure(let error) = result, cancelRequested, Self.isCancellation(error) {
            throw PaymentServiceError(.readCancelled, "cancelRead() ended the read [lane \(lane)]", underlying: error)
        }
        return try result.get()
    }

    private static func isCancellation(_ error: any Error) -> Bool {
        error is CancellationError || (error as? ProximaError)?.code == .cancelled
    }
}

/// How a cancellable read's race ended.
private enum SlotEnding<T: Sendable>: Sendable {
    case finished(Result<T, any Error>)
    case cancelRequested
}
