internal import Dispatch

/// The ``ReadStore`` actor's executor: a serial dispatch queue of its own, so SQLite's blocking calls (a commit
/// waits for `fsync`) run there and never on Swift's cooperative pool. As the PC/SC reader executor, it makes
/// "only on that queue" a compiler-checked fact: the connection is reachable only from the actor.
///
/// (`DispatchSerialQueue` is not available on Linux, hence this adapter.)
final class StoreExecutor: SerialExecutor {
    private static let queueKey = DispatchSpecificKey<ObjectIdentifier>()
    private let queue: DispatchQueue
    private let marker = Marker()

    private final class Marker: Sendable {}

    init(label: String) {
        queue = DispatchQueue(label: label, qos: .userInitiated)
        queue.setSpecific(key: Self.queueKey, value: ObjectIdentifier(marker))
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    func isIsolatingCurrentContext() -> Bool? {
        DispatchQueue.getSpecific(key: Self.queueKey) == ObjectIdentifier(marker)
    }

    func checkIsolated() { dispatchPrecondition(condition: .onQueue(queue)) }
}
