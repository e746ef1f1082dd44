public import ProximaCore
import Synchronization

/// Something that happened in the kernel, for dashboards, logs and the CLI's `--watch`.
///
/// Events carry ids and codes, never card data.
public struct KernelEvent: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        case readerAppeared
        case readerVanished
        case readerFaulted(reason: String)
        case readerRecovered
        case leaseGranted(leaseID: UInt64, waited: Duration)
        case leaseReleased(leaseID: UInt64)
        case readyForTap
        case cardDetected
        case readCompleted
        case readFailed(code: ProximaError.Code, reason: String)
        /// A capability asked the attendant display of the lane to show something (never the app).
        case laneOutput(String)
        /// A plugin could not be built or its `run()` failed; no reader or lane is named.
        case pluginFailed(pluginID: String, reason: String)
    }

    public var kind: Kind
    public var lane: LaneID?
    public var reader: ReaderID?
    /// Time on the kernel's clock since the kernel started.
    public var time: Duration

    public init(_ kind: Kind, lane: LaneID? = nil, reader: ReaderID? = nil, time: Duration) {
        self.kind = kind
        self.lane = lane
        self.reader = reader
        self.time = time
    }

    public var description: String {
        let place = [lane.map { "lane=\($0)" }, reader.map { "reader=\($0)" }].compactMap { $0 }.joined(separator: " ")
        return "\(kind) \(place)"
    }
}

/// Fans kernel events out to any number of subscribers. Each subscriber has a bounded buffer that keeps the
/// newest events, so a slow consumer loses old events instead of stalling readers.
///
/// Invariant: `subscribers` is only touched under its `Mutex`; `publish` never suspends.
public final class KernelEventBus: Sendable {
    private let subscribers = Mutex<[UInt64: AsyncStream<KernelEvent>.Continuation]>([:])
    private let nextID = Atomic<UInt64>(0)

    /// `package`: only the kernel publishes; apps subscribe through ``Kernel/events``.
    package init() {}

    /// A new stream of every event published from now on.
    /// - Parameter bufferSize: how many undelivered events are kept before the oldest are dropped.
    public func subscribe(bufferSize: Int = 1024) -> AsyncStream<KernelEvent> {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).newValue
        let (stream, continuation) = AsyncStream.makeStream(
            of: KernelEvent.self,
            bufferingPolicy: .bufferingNewest(max(1, bufferSize))
        )
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
        }
        subscribers.withLock { $0[id] = continuation }
        return stream
    }

    public var hasSubscribers: Bool { subscribers.withLock { !$0.isEmpty } }

    package func publish(_ event: KernelEvent) {
        subscribers.withLock { subs in
            for continuation in subs.values { continuation.yield(event) }
        }
    }

    /// Ends every subscriber's stream.
    package func finish() {
        let all = subscribers.withLock { subs in
            let all = Array(subs.values)
            subs.removeAll()
            return all
        }
        for continuation in all { continuation.finish() }
    }
}
