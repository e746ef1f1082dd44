public import ProximaCore

/// The error the loyalty capability throws when a phone's VAS answers cannot be used or a pass's cryptogram is
/// refused.
///
/// Like `PaymentError` it carries a stable ``code``, the APDU ``step`` (`SELECT OSE.VAS.01`, `GET VAS DATA
/// pass.com.example.loyalty`, `DECRYPT 9F27 pass.com.example.loyalty`) and a human ``reason`` naming tags,
/// offsets, lengths and key ids, never the pass data.
public struct LoyaltyError: CapabilityStepError {
    public let code: Code
    /// The APDU exchange or processing step that failed.
    public let step: String
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
            case cardReadFailed, cryptogramRejected, staleCryptogram, unknownKey, invalidRequest, sessionRefused
            case commandRejected
        }
        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }
        public var description: String { backing.rawValue }

        /// The phone answered something that cannot be used: a truncated or malformed TLV, a missing `9F27`, a
        /// status word VAS does not define. Tap again.
        public static let cardReadFailed = Code(.cardReadFailed)
        /// The cryptogram did not decrypt: its tag failed (altered bytes, or a key with the right id but the
        /// wrong secret), or the plaintext is shorter than its timestamp.
        public static let cryptogramRejected = Code(.cryptogramRejected)
        /// The cryptogram's timestamp is older than `maxCryptogramAgeSeconds` (or as far in the future): VAS has
        /// no reader nonce, so age is the only thing that stops a replayed cryptogram.
        public static let staleCryptogram = Code(.staleCryptogram)
        /// The cryptogram's key id is none of the merchant's configured keys.
        public static let unknownKey = Code(.unknownKey)
        /// The request names a merchant this kernel has no keys for, or no merchant at all.
        public static let invalidRequest = Code(.invalidRequest)
        /// A phone refused the Google Smart Tap session for good (`95xx`): `9500`, it could not authenticate the
        /// terminal (it does not know the collector ID or key version, or the collector's signature did not verify:
        /// check `capabilities.loyalty.smartTap` against the Google Pay & Wallet Console), or `9502`, it does not
        /// support this Smart Tap version.
        public static let sessionRefused = Code(.sessionRefused)
        /// A phone rejected one of this terminal's Smart Tap commands (`94xx`: it could not parse it, its crypto
        /// input or merchant is wrong, or there were too many requests): a fault of the reader's side, which
        /// tapping again does not cure.
        public static let commandRejected = Code(.commandRejected)
    }
}

extension LoyaltyError: ClassifiedError {
    /// `malformedData` for unusable phone answers and refused cryptograms, `invalidArgument` for a bad request.
    public var kernelCode: ProximaError.Code { code == .invalidRequest ? .invalidArgument : .malformedData }
}
