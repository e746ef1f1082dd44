package import ProximaCore
package import ProximaKernel
internal import Synchronization

/// One read at a time, and a way to cancel it from another task (Apple's `cancelRead()`): one slot per reader
/// object of the API.
///
/// `Sendable`: its one value sits behind a `Mutex`.
package final class PaymentReadSlot: Sendable {
    private struct Active: Sendable {
        var owner: ObjectIdentifier
        var canceller: TaskCanceller
    }

    private let active = Mutex<Active?>(nil)

    package init() {}

    /// Asks the read of `owner` to stop; `false` when `owner` has no read in progress.
    @discardableResult
    package func cancel(owner: ObjectIdentifier) -> Bool {
        let canceller = active.withLock { active -> TaskCanceller? in
            guard active?.owner == owner else { return nil }
            return active?.canceller
        }
        canceller?.cancel()
        return canceller != nil
    }

    /// Takes the slot for `owner`, or throws `readerBusy`; what it returns goes to ``cancellable(_:lane:_:)``.
    package func begin(owner: ObjectIdentifier, lane: LaneID) throws(PaymentServiceError) -> TaskCanceller {
        let canceller = TaskCanceller()
        let busy = active.withLock { active -> Bool in
            guard active == nil else { return true }
            active = Active(owner: owner, canceller: canceller)
            return false
        }
        guard !busy else {
            throw PaymentServiceError(
                .readerBusy,
                "another read is in progress on this reader (lane \(lane)); one read at a time"
            )
        }
        return canceller
    }

    package func end() {
        active.withLock { $0 = nil }
    }

    /// Runs `operation`, the kernel tap of a read, with `options` carrying `canceller` (as
    /// ``ProximaKernel/TapOptions/canceller``), which ``cancel(owner:)`` cancels. A read that ended before the
    /// cancellation keeps its result; one cancelled throws `readCancelled` with the kernel's error as its cause.
    ///
    /// The tap's own child task (the one its deadline cancels) is what the canceller cancels, so a read costs no
    /// task of its own here.
    package func cancellable<T: Sendable>(
        _ canceller: TaskCanceller,
        lane: LaneID,
        options: TapOptions,
        _ operation: (TapOptions) async throws -> T
    ) async throws -> T {
        var options = options
        options.canceller = canceller
        do {
            return try await operation(options)
        } catch  where canceller.isCancelled && Self.isCancellation(error) {
            throw PaymentServiceError(.readCancelled, "cancelRead() ended the read [lane \(lane)]", underlying: error)
        }
    }

    private static func isCancellation(_ error: any Error) -> Bool {
        error is CancellationError || (error as? ProximaError)?.code == .cancelled
    }
}
