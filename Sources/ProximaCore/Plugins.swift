/// The RF technology a card was found with.
public enum CardTechnology: String, Hashable, Sendable, Codable, CustomStringConvertible {
    /// ISO/IEC 14443 Type A (most payment cards, phones).
    case iso14443A
    /// ISO/IEC 14443 Type B.
    case iso14443B
    /// FeliCa (JIS X 6319-4).
    case felica
    /// A contact card (ISO/IEC 7816-3) seen through a PC/SC reader.
    case contact
    /// The transport could not tell.
    case unknown
    public var description: String { rawValue }
}

/// What a transport knows about one of its readers.
public struct ReaderInfo: Hashable, Sendable {
    /// Kernel-wide identifier.
    public var id: ReaderID
    /// The name the hardware or driver reports (`ACS ACR122U PICC Interface 00 00`); lanes may match it by pattern.
    public var name: String
    /// The manifest id of the transport plugin that provides it.
    public var transport: String
    /// Whether the reader can send extended-length APDUs.
    public var supportsExtendedLength: Bool

    public init(id: ReaderID, name: String, transport: String, supportsExtendedLength: Bool = true) {
        self.id = id
        self.name = name
        self.transport = transport
        self.supportsExtendedLength = supportsExtendedLength
    }
}

/// Something a transport saw happen on its readers.
public enum ReaderEvent: Hashable, Sendable {
    /// A reader became available (at start or hot-plugged).
    case appeared(ReaderInfo)
    /// A reader left (unplugged, daemon gone). An exchange in flight on it fails with `readerVanished`.
    case vanished(ReaderID)
    /// A card entered the field of the reader.
    case cardPresent(ReaderID)
    /// The card left the field.
    case cardRemoved(ReaderID)
    /// The reader reported a fault; it leaves rotation until `recovered`.
    case fault(ReaderID, reason: String)
    /// The reader works again after a fault.
    case recovered(ReaderID)
}

/// A live connection to one card on one reader, valid for one card presence.
///
/// A channel is used by one task at a time (the lease holder). `transmit` throws `ProximaError` with
/// `cardRemoved`, `cardTimeout`, `readerVanished` or `transmitFailed`; status words such as `6A82` are not
/// errors and come back in the response.
public protocol CardChannel: AnyObject, Sendable {
    /// The reader the card sits on.
    var reader: ReaderID { get }
    /// The ATR as the reader reports it (PC/SC builds a pseudo-ATR for contactless cards), or empty.
    var atr: [UInt8] { get }
    /// The ATS of an ISO/IEC 14443-4 Type A card, or empty.
    var ats: [UInt8] { get }
    /// The anti-collision identifier (UID / PUPI / IDm), or empty if the reader does not expose it.
    var uid: [UInt8] { get }
    var technology: CardTechnology { get }
    /// The largest command APDU, in bytes, the reader and card accept (261 for short-only readers).
    var maximumCommandLength: Int { get }
    /// Whether extended-length APDUs reach the card.
    var supportsExtendedLength: Bool { get }
    /// The executor the kernel runs a tap's body on while it holds this channel (SE-0417 task executor
    /// preference): a transport whose calls block on a thread of its own offers that thread, so a capability's code
    /// and the transport's calls run there without hopping between it and the cooperative pool. `nil` (the default):
    /// the cooperative pool.
    var preferredTaskExecutor: (any TaskExecutor)? { get }

    /// Sends one command APDU and returns the card's answer, exactly as received.
    func transmit(_ command: CommandAPDU) async throws -> ResponseAPDU
    /// Ends the connection; the card may stay in the field. Further transmits throw.
    func close() async
}

extension CardChannel {
    public var preferredTaskExecutor: (any TaskExecutor)? { nil }
}

/// Options for waiting for and connecting to a card.
public struct ConnectOptions: Hashable, Sendable {
    /// Exclusive access to the card (PC/SC `SCARD_SHARE_EXCLUSIVE`); shared otherwise.
    public var exclusive: Bool
    public init(exclusive: Bool = false) { self.exclusive = exclusive }
}

/// A transport plugin: how bytes reach cards. It knows nothing of EMV, VAS or mDL.
///
/// The kernel calls `run()` in a task group for the plugin's lifetime and stops it by cancellation; `run()`
/// reports readers through `events`. `connect(to:options:)` waits until a card is in the reader's field and
/// connects to it; it is cancellable and is only called by the holder of a lease on that reader.
public protocol Transport: Sendable {
    /// The plugin id from the manifest.
    var id: String { get }
    /// Readers this transport knows it will provide (from its configuration), for manifest checks; `nil` when
    /// readers are only discovered at run time (PC/SC, libnfc).
    var declaredReaders: [ReaderInfo]? { get }
    /// Reader events. The stream finishes when `run()` returns.
    var events: AsyncStream<ReaderEvent> { get }
    /// Discovers readers and watches them until cancelled.
    func run() async throws
    /// Waits for a card on `reader` and connects to it.
    /// - Throws: `ProximaError` (`readerVanished`, `readerFaulted`, `cancelled`, …).
    func connect(to reader: ReaderID, options: ConnectOptions) async throws -> any CardChannel
    /// The executor the kernel runs a whole tap on `reader` on, connect and close included (SE-0417 task executor
    /// preference): the reader's own thread for a transport whose calls block on one, so that connecting, the
    /// capability's exchanges and closing do not hop between that thread and the cooperative pool. `nil` (the
    /// default): where the tap's caller runs.
    func preferredTaskExecutor(for reader: ReaderID) -> (any TaskExecutor)?
}

extension Transport {
    public func preferredTaskExecutor(for reader: ReaderID) -> (any TaskExecutor)? { nil }
}

/// What a capability needs from a reader and card.
public struct CapabilityRequirements: Hashable, Sendable {
    /// Application identifiers the capability selects, for routing and diagnostics.
    public var applicationIdentifiers: [[UInt8]]
    /// Whether the capability cannot work without extended-length APDUs.
    public var needsExtendedLength: Bool
    /// Technologies it works with; empty means any.
    public var technologies: Set<CardTechnology>

    public init(
        applicationIdentifiers: [[UInt8]] = [],
        needsExtendedLength: Bool = false,
        technologies: Set<CardTechnology> = []
    ) {
        self.applicationIdentifiers = applicationIdentifiers
        self.needsExtendedLength = needsExtendedLength
        self.technologies = technologies
    }
}

/// Per-tap state shared by the capabilities that run in order within one card presence (loyalty, then
/// payment, …). Capabilities never own the lease; the kernel does.
public struct TapContext: Sendable {
    public var lane: LaneID
    public var reader: ReaderID
    /// A kernel-unique id of this tap, for logs and events.
    public var tapID: UInt64
    /// How long the request waited in its lane's queue for a reader.
    public var queueWait: Duration
    public init(lane: LaneID, reader: ReaderID, tapID: UInt64, queueWait: Duration = .zero) {
        self.lane = lane
        self.reader = reader
        self.tapID = tapID
        self.queueWait = queueWait
    }
}

/// A capability plugin: what a tap means. It sees readers only through a `CardChannel`.
public protocol Capability: Sendable {
    associatedtype Request: Sendable
    associatedtype Output: Sendable
    /// Stable identifier, also the key of its settings in the manifest's `capabilities`.
    var identifier: CapabilityID { get }
    var requirements: CapabilityRequirements { get }
    /// Runs the capability's protocol over `channel` for one request.
    func run(_ request: Request, on channel: any CardChannel, context: TapContext) async throws -> Output
}
