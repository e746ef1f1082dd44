/// The error every Proxima module throws: a stable ``code`` that callers and tests compare, and a human
/// ``reason`` that says what failed, where (reader, lane, JSON path, APDU step) and what to do.
///
/// This type is `Equatable` and `Hashable`, but only the ``code`` takes part, so a test can compare a thrown
/// error against `ProximaError(.readerBusy)`. New codes can be added without breaking callers.
public struct ProximaError: Error, Hashable, Sendable, CustomStringConvertible {
    public let code: Code
    public let reason: String
    /// The reader the error happened on, when there was one.
    public let reader: ReaderID?
    /// The lane of the request, when there was one.
    public let lane: LaneID?
    /// The manifest JSON path the error is about (`lanes[2].readers[0]`), for `invalidManifest` errors; the
    /// ``reason`` does not repeat it.
    public let jsonPath: String?
    /// The error that caused this one (a capability's `PaymentError`, a `CryptoError`, a system error), kept as
    /// it was so callers can inspect it instead of parsing ``reason``.
    public let underlying: (any Error)?

    public init(
        _ code: Code,
        _ reason: String = "",
        reader: ReaderID? = nil,
        lane: LaneID? = nil,
        jsonPath: String? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.reason = reason
        self.reader = reader
        self.lane = lane
        self.jsonPath = jsonPath
        self.underlying = underlying
    }

    /// A copy that carries a reader and a lane, keeping what was already set.
    public func at(reader: ReaderID? = nil, lane: LaneID? = nil) -> ProximaError {
        ProximaError(
            code,
            reason,
            reader: self.reader ?? reader,
            lane: self.lane ?? lane,
            jsonPath: jsonPath,
            underlying: underlying
        )
    }

    /// The first error of type `E` in the chain of ``underlying`` errors, starting with this one's cause.
    public func cause<E: Error>(_ type: E.Type) -> E? {
        var next = underlying
        while let error = next {
            if let match = error as? E { return match }
            next = (error as? ProximaError)?.underlying
        }
        return nil
    }

    /// ``reason`` after the ``jsonPath`` when there is one (`lanes[0].id: expected a string`): the text a message
    /// that wraps this error quotes, so the path is not lost.
    public var pathAndReason: String {
        guard let jsonPath else { return reason }
        return "\(StrictObject.display(jsonPath)): \(reason)"
    }

    public var description: String {
        var where_: [String] = []
        if let lane { where_.append("lane \(lane)") }
        if let reader { where_.append("reader \(reader)") }
        let location = where_.isEmpty ? "" : " [\(where_.joined(separator: ", "))]"
        let path = jsonPath.map { "\(StrictObject.display($0)): " } ?? ""
        return reason.isEmpty && path.isEmpty ? "\(code)\(location)" : "\(code)\(location): \(path)\(reason)"
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// A stable error code. Compare codes, never reasons.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String, Hashable, Sendable {
            case malformedData, invalidArgument, invalidManifest
            case readerBusy, deadlineExceeded, cancelled, noSuchLane, noSuchReader, readerUnavailable
            case readerVanished, readerFaulted, cardRemoved, cardTimeout, transmitFailed
            case pluginFailed, shuttingDown, unsupported
        }
        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }
        public var description: String { backing.rawValue }

        /// Bytes from outside (a card, a file, a process) that do not parse: the reason names what and where.
        public static let malformedData = Code(.malformedData)
        /// A caller passed a value out of range.
        public static let invalidArgument = Code(.invalidArgument)
        /// The manifest is broken; the reason names the JSON path and what was expected.
        public static let invalidManifest = Code(.invalidManifest)
        /// Every reader of the lane is busy and the lane's queue policy is fail-fast.
        public static let readerBusy = Code(.readerBusy)
        /// The request's deadline passed before it was served or finished.
        public static let deadlineExceeded = Code(.deadlineExceeded)
        /// The request was cancelled by its caller.
        public static let cancelled = Code(.cancelled)
        /// The request named a lane the manifest does not declare.
        public static let noSuchLane = Code(.noSuchLane)
        /// The request named a reader the kernel does not know.
        public static let noSuchReader = Code(.noSuchReader)
        /// No reader that can serve the lane is present and healthy.
        public static let readerUnavailable = Code(.readerUnavailable)
        /// The reader disappeared (unplugged, daemon gone) while in use.
        public static let readerVanished = Code(.readerVanished)
        /// The reader reported a fault; it left rotation until it recovers.
        public static let readerFaulted = Code(.readerFaulted)
        /// The card left the field during the exchange; tap again.
        public static let cardRemoved = Code(.cardRemoved)
        /// The card did not answer within the frame waiting time.
        public static let cardTimeout = Code(.cardTimeout)
        /// The transport could not exchange the APDU (link error).
        public static let transmitFailed = Code(.transmitFailed)
        /// A plugin failed to start or crashed.
        public static let pluginFailed = Code(.pluginFailed)
        /// The kernel is stopping; the request was not served.
        public static let shuttingDown = Code(.shuttingDown)
        /// The card, reader or request is not supported.
        public static let unsupported = Code(.unsupported)
    }
}

/// The error of a capability's APDU step (`PaymentError`, `LoyaltyError`): a stable ``code`` that callers compare, the
/// ``step`` that failed (`SELECT PPSE`, `GET VAS DATA …`), a human ``reason`` that names tags, offsets and lengths but
/// never card or pass data, and the reader when known. The shared behaviour lives here once: equality and hashing by
/// code only, the description, and naming the reader.
public protocol CapabilityStepError: Error, Hashable, Sendable, CustomStringConvertible {
    associatedtype Code: Hashable, Sendable, CustomStringConvertible
    var code: Code { get }
    var step: String { get }
    var reason: String { get }
    var reader: ReaderID? { get }
    init(_ code: Code, step: String, _ reason: String, reader: ReaderID?)
}

extension CapabilityStepError {
    /// A copy that names `reader`, keeping one already set.
    public func at(reader: ReaderID) -> Self { Self(code, step: step, reason, reader: self.reader ?? reader) }

    /// `code [reader R]: step: reason`.
    public var description: String {
        let location = reader.map { " [reader \($0)]" } ?? ""
        return "\(code)\(location): \(step): \(reason)"
    }

    /// Errors are equal when their codes are: compare codes, never reasons.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// An error type of a plugin's own (a capability's `PaymentError`, …) that the kernel passes through to the
/// caller unchanged but can still classify for events and metrics.
public protocol ClassifiedError: Error, CustomStringConvertible {
    /// The kernel code closest to this error (`malformedData` for a card answer that cannot be used, …).
    var kernelCode: ProximaError.Code { get }
}
