/// An error of a cryptographic operation that has no counterpart among ``ProximaError`` codes: a key that is not
/// a valid P-256 key, a ciphertext that does not authenticate, an exhausted HPKE context, a failure inside OpenSSL.
///
/// Argument and format problems that are not specific to cryptography throw ``ProximaError`` instead:
/// `.invalidArgument` for a value out of range passed by the caller (an AES key of 20 bytes, an empty IV, an HKDF
/// output longer than 255 blocks) and `.malformedData` for outside bytes that do not parse (a DER signature).
///
/// Like ``ProximaError``, only the ``code`` takes part in equality, so tests compare against
/// `CryptoError(.authenticationFailed)`. The ``reason`` never contains key material.
public struct CryptoError: Error, Hashable, Sendable, CustomStringConvertible {
    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String = "") {
        self.code = code
        self.reason = reason
    }

    public var description: String { reason.isEmpty ? "\(code)" : "\(code): \(reason)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// A stable error code. Compare codes, never reasons.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String, Hashable, Sendable {
            case invalidKey, authenticationFailed, messageLimitReached, deriveKeyPairFailed, libraryFailure
        }
        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }
        public var description: String { backing.rawValue }

        /// The bytes are not a valid P-256 key: wrong length or encoding, a scalar of zero or not below the group
        /// order, a point not on the curve or at infinity, or a PEM/DER key of another type or curve.
        public static let invalidKey = Code(.invalidKey)
        /// An AEAD ciphertext failed authentication: the tag does not match (wrong key, nonce or associated data,
        /// or altered bytes), or the ciphertext is shorter than its tag.
        public static let authenticationFailed = Code(.authenticationFailed)
        /// An HPKE context used up its sequence numbers (RFC 9180 §5.2 `MessageLimitReachedError`); set up a new
        /// context.
        public static let messageLimitReached = Code(.messageLimitReached)
        /// RFC 9180 §7.1.3 `DeriveKeyPairError`: no candidate scalar in 256 tries was valid (probability ~2^-8192).
        public static let deriveKeyPairFailed = Code(.deriveKeyPairFailed)
        /// OpenSSL failed where it should not (allocation, no random source, missing algorithm); the reason carries
        /// OpenSSL's error queue.
        public static let libraryFailure = Code(.libraryFailure)
    }
}
