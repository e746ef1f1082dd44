public import ProximaCore

/// The error the EMV payment capability throws when a card's answers cannot be used, or when the request itself
/// cannot be encoded into EMV data.
///
/// Like ``ProximaCore/ProximaError``, it carries a stable ``code`` that callers compare and a human ``reason``; it
/// adds the APDU ``step`` that failed (`SELECT PPSE`, `GET PROCESSING OPTIONS`, `READ RECORD SFI 2 record 3`,
/// `GENERATE AC`). Messages name tags, offsets and lengths, never values: no PAN or track data is ever part of one.
///
/// Transport failures (card removed, reader vanished, time-out, cancellation) are not wrapped: they stay
/// `ProximaError`s with their own codes, their reason prefixed with the step.
public struct PaymentError: CapabilityStepError {
    public let code: Code
    /// The APDU exchange or processing step that failed, such as `READ RECORD SFI 2 record 3`.
    public let step: String
    /// What was wrong, e.g. `TLV length at offset 12 exceeds data (needs 40, has 7)`.
    public let reason: String
    /// The reader of the tap, when known.
    public let reader: ReaderID?

    public init(_ code: Code, step: String, _ reason: String, reader: ReaderID? = nil) {
        self.code = code
        self.step = step
        self.reason = reason
        self.reader = reader
    }

    /// A stable error code. Compare codes, never reasons.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String, Hashable, Sendable {
            case cardReadFailed, invalidTransaction
        }
        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }
        public var description: String { backing.rawValue }

        /// The card answered something that cannot be used: a malformed or truncated answer, a length that lies,
        /// a missing mandatory data object, an unexpected status word, an invalid AFL. Tap again or use another
        /// card; the ``PaymentError/step`` and ``PaymentError/reason`` say where.
        public static let cardReadFailed = Code(.cardReadFailed)
        /// The transaction cannot be expressed in EMV data: an amount beyond 12 digits or negative, a currency or
        /// country code beyond 3 digits, an impossible date. The API layer validates first; this is the backstop.
        public static let invalidTransaction = Code(.invalidTransaction)
    }
}

extension PaymentError: ClassifiedError {
    /// `malformedData` for an unusable card answer, `invalidArgument` for a transaction EMV cannot express.
    public var kernelCode: ProximaError.Code { code == .cardReadFailed ? .malformedData : .invalidArgument }
}
