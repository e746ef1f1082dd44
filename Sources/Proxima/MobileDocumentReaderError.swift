/// Why a ``MobileDocumentReader`` or ``MobileDocumentReaderSession`` call failed, with Apple's
/// `MobileDocumentReaderError` case names so code written for iOS reads the same (`catch let error as
/// MobileDocumentReaderError`, `case .invalidToken`).
///
/// Every case carries a reason that says what failed and what to do; it never holds a token, a key or an identity
/// element. Equality compares the case only (``code``). The mapping from the service's, the capability's and the
/// kernel's errors lives in one place, `MobileDocumentErrorMapping`.
public enum MobileDocumentReaderError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The read was cancelled (the task was cancelled, or the holder ended the session).
    case cancelled(String)
    /// The request is unusable: no element, an element or document type twice, or an unknown request type.
    case invalidRequest(String)
    /// The holder's answer failed a check of ISO/IEC 18013-5 (issuer chain, signature, digests, validity, docType,
    /// device authentication, …); `check` names it (`msoExpired`, `digestMismatch`, …).
    case invalidResponse(check: String, String)
    /// The reader token was refused (empty, signature, issuer, audience, not yet valid): get a new token from
    /// your server and prepare again.
    case invalidToken(String)
    /// A network step failed. This build verifies tokens offline and never throws it.
    case networkUnavailable(String)
    /// The reader may not be used: the manifest has no valid `capabilities.mobileDocument` block, no way to
    /// verify reader tokens, or could not be loaded.
    case notAllowed(String)
    /// This kernel cannot read documents on the requested lane, or the holder offers nothing this reader speaks.
    case notSupported(String)
    /// No reader of the lane became ready, the holder went silent or was taken away, the deadline passed, or the
    /// lane has no attendant display for a display request.
    case serviceUnavailable(String)
    /// The reader token has expired: get a new one from your server and prepare again.
    case sessionExpired(String)
    /// Another document read of this session is in progress: one read at a time.
    case systemBusy(String)
    /// Anything else (a reader fault); the reason says what.
    case unknown(String)

    /// The case without its reason, for comparing and switching.
    public enum Code: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        case cancelled, invalidRequest, invalidResponse, invalidToken, networkUnavailable, notAllowed
        case notSupported, serviceUnavailable, sessionExpired, systemBusy, unknown

        public var description: String { rawValue }
    }

    public var code: Code {
        switch self {
        case .cancelled: .cancelled
        case .invalidRequest: .invalidRequest
        case .invalidResponse: .invalidResponse
        case .invalidToken: .invalidToken
        case .networkUnavailable: .networkUnavailable
        case .notAllowed: .notAllowed
        case .notSupported: .notSupported
        case .serviceUnavailable: .serviceUnavailable
        case .sessionExpired: .sessionExpired
        case .systemBusy: .systemBusy
        case .unknown: .unknown
        }
    }

    /// What failed, where and what to do.
    public var reason: String {
        switch self {
        case .cancelled(let reason), .invalidRequest(let reason), .invalidResponse(_, let reason),
            .invalidToken(let reason), .networkUnavailable(let reason), .notAllowed(let reason),
            .notSupported(let reason), .serviceUnavailable(let reason), .sessionExpired(let reason),
            .systemBusy(let reason), .unknown(let reason):
            reason
        }
    }

    /// The ISO/IEC 18013-5 check an ``invalidResponse(check:_:)`` failed, else `nil`.
    public var failedCheck: String? {
        if case .invalidResponse(let check, _) = self { return check }
        return nil
    }

    public var description: String {
        failedCheck.map { "\(code) (\($0)): \(reason)" } ?? "\(code): \(reason)"
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
