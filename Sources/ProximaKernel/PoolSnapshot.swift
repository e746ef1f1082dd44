public import ProximaCore

/// A point-in-time view of a ``ReaderPool``, for the CLI, dashboards and tests.
public struct PoolSnapshot: Hashable, Sendable {
    /// What a reader is doing.
    public enum ReaderState: Hashable, Sendable {
        /// Present, healthy and free.
        case idle
        /// Present, healthy and leased.
        case leased
        /// Present but out of rotation after a fault (it may still be leased: see ``Reader/leaseID``).
        case faulted(reason: String)
        /// Known but not present (it may still be leased: see ``Reader/leaseID``).
        case vanished
    }

    /// One reader the pool has seen.
    public struct Reader: Hashable, Sendable {
        public var info: ReaderInfo
        /// The lanes that claim it, in configuration order; empty when it sits in the shared pool.
        public var lanes: [LaneID]
        public var state: ReaderState
        /// The lease currently held on it, if any.
        public var leaseID: UInt64?
        /// The lane holding that lease.
        public var holderLane: LaneID?

        /// Whether the reader is in the shared pool (no lane claims it).
        public var isShared: Bool { lanes.isEmpty }
    }

    /// One request waiting for a reader.
    public struct WaitingRequest: Hashable, Sendable {
        public var lane: LaneID
        public var pinnedReader: ReaderID?
        public var needsExtendedLength: Bool
        /// Kernel-clock time the pool first saw the request.
        public var arrival: Duration
        /// Kernel-clock time at which it fails unless served.
        public var deadline: Duration
    }

    /// Kernel-clock time of the snapshot.
    public var time: Duration
    /// Every reader seen so far, present or not, sorted by id.
    public var readers: [Reader]
    /// Waiting requests per lane (every configured lane, zero included; pinned requests count for their lane).
    public var queueLengths: [LaneID: Int]
    /// Every waiting request, oldest first.
    public var waiting: [WaitingRequest]
    public var activeLeaseCount: Int
    public var isShutDown: Bool
}
