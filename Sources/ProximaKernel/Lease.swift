public import ProximaCore

/// The right to use one reader, granted by ``ReaderPool/lease(_:)`` and given back with ``ReaderPool/release(_:)``.
///
/// Two leases are equal when they are the same grant (same ``id``, same pool).
public struct Lease: Hashable, Sendable, CustomStringConvertible {
    /// Unique within its pool, increasing in grant order.
    public let id: UInt64
    /// The reader, as it was when the lease was granted.
    public let reader: ReaderInfo
    /// The lane the request came from (also for pinned requests).
    public let lane: LaneID
    /// Kernel-clock time of the grant.
    public let grantedAt: Duration
    /// How long the request waited in the queue; zero when a reader was free at once.
    public let waited: Duration
    /// The reader's slot in its pool, so that release and health checks need no lookup by name.
    let slot: Int
    /// The pool that granted it (process-unique), so a lease of another pool is never mistaken for one's own.
    let poolID: UInt64

    init(
        id: UInt64,
        reader: ReaderInfo,
        lane: LaneID,
        grantedAt: Duration,
        waited: Duration,
        slot: Int,
        poolID: UInt64
    ) {
        self.id = id
        self.reader = reader
        self.lane = lane
        self.grantedAt = grantedAt
        self.waited = waited
        self.slot = slot
        self.poolID = poolID
    }

    public static func == (lhs: Lease, rhs: Lease) -> Bool { lhs.id == rhs.id && lhs.poolID == rhs.poolID }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    public var description: String { "lease \(id) of reader \(reader.id) for lane \(lane)" }
}

/// What a lane asks the pool for.
public struct LeaseRequest: Hashable, Sendable {
    /// The lane the request belongs to; it decides which readers may serve it, the queue and the policy.
    public var lane: LaneID
    /// Absolute kernel-clock time after which the request fails; `nil` means the lane policy's `maxWait` from
    /// the moment the pool sees the request. The earlier of the two applies.
    public var deadline: Duration?
    /// Serve only from this exact reader, whether or not the lane claims it. The request still queues in
    /// arrival order with every other request that reader could serve.
    public var pinnedReader: ReaderID?
    /// Only readers that send extended-length APDUs qualify.
    public var needsExtendedLength: Bool

    public init(
        lane: LaneID,
        deadline: Duration? = nil,
        pinnedReader: ReaderID? = nil,
        needsExtendedLength: Bool = false
    ) {
        self.lane = lane
        self.deadline = deadline
        self.pinnedReader = pinnedReader
        self.needsExtendedLength = needsExtendedLength
    }
}

/// Whether the reader of a lease stayed usable while the lease was held.
///
/// A fault or disappearance during the lease is remembered until the lease is released, even if the reader
/// recovers or comes back meanwhile: whatever the holder did with the reader at that time may have failed.
public enum LeaseHealth: Hashable, Sendable {
    /// Nothing happened to the reader since the grant.
    case healthy
    /// The reader reported a fault while leased (the latest event wins).
    case readerFaulted(reason: String)
    /// The reader disappeared while leased (the latest event wins).
    case readerVanished
    /// The lease is no longer held (released, or not from this pool).
    case released

    /// The error a holder should report for this interruption, or `nil` when there was none.
    public func error(for lease: Lease) -> ProximaError? {
        switch self {
        case .healthy, .released:
            return nil
        case .readerFaulted(let reason):
            return ProximaError(
                .readerFaulted,
                "reader \(lease.reader.id) reported a fault during lease \(lease.id): \(reason); "
                    + "it left rotation until it recovers, retry on another reader",
                reader: lease.reader.id,
                lane: lease.lane
            )
        case .readerVanished:
            return ProximaError(
                .readerVanished,
                "reader \(lease.reader.id) disappeared during lease \(lease.id); check its connection, then retry",
                reader: lease.reader.id,
                lane: lease.lane
            )
        }
    }
}
