/// Why a ``PaymentCardReader`` call failed: configuration, token, account linking and reader readiness. Apple's
/// `PaymentCardReaderError` case names, so code written for iOS reads the same (`catch
/// PaymentCardReaderError.notAllowed`).
///
/// Every case carries a reason that says what failed, where (lane, JSON path, file) and what to do; it never holds
/// a token, a key or card data. Equality compares the case only (``code``), as Proxima's other errors compare
/// codes, so `error == .tokenExpired("")` holds for any reason.
///
/// The mapping from kernel, capability and token errors to these cases lives in one place,
/// `PaymentErrorMapping`.
public enum PaymentCardReaderError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The reader may not be used: the manifest has no valid `capabilities.payment` block (processor key, token
    /// issuer, reader identifier), or the manifest itself could not be loaded. Fix the manifest.
    case notAllowed(String)
    /// This kernel cannot take payments on the requested lane: the lane is not in the manifest (check
    /// `PROXIMA_LANE`).
    case unsupported(String)
    /// A network step failed. This build verifies tokens offline and never throws it; it exists for code written
    /// against Apple's API.
    case networkError(String)
    /// The processor token is empty.
    case emptyReaderToken(String)
    /// The processor token was refused: not an ES256 JWT signed by the processor key of the manifest, wrong
    /// issuer or audience, not yet valid, or without a merchant id. Ask the processor for a new token.
    case invalidReaderToken(String)
    /// The processor token's `exp` has passed (beyond 60 s of clock skew). Ask the processor for a new token.
    case tokenExpired(String)
    /// Another read is in progress on this reader, or every reader of a fail-fast lane is busy. Try again when the
    /// current read ends.
    case readerBusy(String)
    /// The merchant of the token has not been linked on this kernel (or a different merchant is): call
    /// ``PaymentCardReader/linkAccount(using:)`` first.
    case accountNotLinked(String)
    /// ``PaymentCardReader/linkAccount(using:)`` found another merchant linked; use
    /// ``PaymentCardReader/relinkAccount(using:)`` to replace it.
    case accountAlreadyLinked(String)
    /// The account link could not be written to the kernel's data directory (permissions, disk full).
    case accountLinkingFailed(String)
    /// The account link file exists but cannot be read or parsed; fix or remove it and link again.
    case accountLinkingCheckFailed(String)
    /// No reader that can serve the lane became ready in time, or the kernel is not running.
    case notReady(String)
    /// The lane was stopped or the kernel is shutting down while a read was running: call
    /// ``PaymentCardReaderSession/prepare()`` again before the next read.
    case backgrounded(String)
    /// A ``VASRequest`` names no merchant, or a merchant without keys in `capabilities.loyalty.appleVAS`, or the
    /// manifest has no valid `capabilities.loyalty` block.
    case invalidVASMerchants(String)
    /// An offline session may not start: no valid `capabilities.storeAndForward`, store and forward disabled, or
    /// the processor not reached within `onlineWithinHours` (prepare an online session first).
    case storeAndForwardNotAllowed(String)
    /// The offline session's `sessionHours` have passed: prepare a new one.
    case storeAndForwardSessionExpired(String)
    /// The host restarted since the offline session was prepared (Apple: a session is invalid after a restart):
    /// prepare online, then a new session.
    case storeAndForwardSessionInvalidated(String)

    /// The case without its reason, for comparing and switching.
    public enum Code: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        case notAllowed, unsupported, networkError, emptyReaderToken, invalidReaderToken, tokenExpired, readerBusy
        case accountNotLinked, accountAlreadyLinked, accountLinkingFailed, accountLinkingCheckFailed, notReady
        case backgrounded, invalidVASMerchants
        case storeAndForwardNotAllowed, storeAndForwardSessionExpired, storeAndForwardSessionInvalidated

        public var description: String { rawValue }
    }

    public var code: Code {
        switch self {
        case .notAllowed: .notAllowed
        case .unsupported: .unsupported
        case .networkError: .networkError
        case .emptyReaderToken: .emptyReaderToken
        case .invalidReaderToken: .invalidReaderToken
        case .tokenExpired: .tokenExpired
        case .readerBusy: .readerBusy
        case .accountNotLinked: .accountNotLinked
        case .accountAlreadyLinked: .accountAlreadyLinked
        case .accountLinkingFailed: .accountLinkingFailed
        case .accountLinkingCheckFailed: .accountLinkingCheckFailed
        case .notReady: .notReady
        case .backgrounded: .backgrounded
        case .invalidVASMerchants: .invalidVASMerchants
        case .storeAndForwardNotAllowed: .storeAndForwardNotAllowed
        case .storeAndForwardSessionExpired: .storeAndForwardSessionExpired
        case .storeAndForwardSessionInvalidated: .storeAndForwardSessionInvalidated
        }
    }

    /// What failed, where and what to do.
    public var reason: String {
        switch self {
        case .notAllowed(let reason), .unsupported(let reason), .networkError(let reason),
            .emptyReaderToken(let reason), .invalidReaderToken(let reason), .tokenExpired(let reason),
            .readerBusy(let reason), .accountNotLinked(let reason), .accountAlreadyLinked(let reason),
            .accountLinkingFailed(let reason), .accountLinkingCheckFailed(let reason), .notReady(let reason),
            .backgrounded(let reason), .invalidVASMerchants(let reason), .storeAndForwardNotAllowed(let reason),
            .storeAndForwardSessionExpired(let reason), .storeAndForwardSessionInvalidated(let reason):
            reason
        }
    }

    /// The case name, as Apple's `errorName`.
    public var errorName: String { code.rawValue }

    public var description: String { reason.isEmpty ? errorName : "\(errorName): \(reason)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

extension PaymentCardReaderError: LocalizedError {
    public var errorDescription: String? { description }
}

extension PaymentCardReaderSession {
    /// Why one ``PaymentCardReaderSession/readPaymentCard(_:)-(PaymentCardTransactionRequest)`` failed. Apple's
    /// `ReadError` case names, plus `cancelled` from the usage sketch and `timedOut`.
    ///
    /// Every case carries a reason naming the lane, reader and, for card failures, the APDU step (`READ RECORD SFI 2
    /// record 3: …`); never card data. Equality compares the case only (``code``).
    public enum ReadError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The task that called `readPaymentCard` was cancelled (Swift task cancellation).
        case cancelled(String)
        /// ``PaymentCardReaderSession/cancelRead()`` ended the read.
        case readCancelled(String)
        /// The amount is not a number, zero or negative, has more decimals than the currency allows, or needs more
        /// than the 12 digits of Amount, Authorised (`9F02`).
        case invalidAmount(String)
        /// The currency code is not an active ISO 4217 code (see ``ISO4217Currency``).
        case invalidCurrencyCode(String)
        /// ``PaymentCardReaderSession/prepare()`` was not called, or must be called again after
        /// ``PaymentCardReaderError/backgrounded(_:)``.
        case notReady(String)
        /// The card's answers could not be used (malformed or truncated answer, lying length, unexpected status
        /// word), or the card left the field or stopped answering: tap again.
        case cardReadFailed(String)
        /// The card has no application this terminal runs (no contactless payment directory, only unsupported
        /// schemes), or it asks for another interface (contact chip).
        case cardNotSupported(String)
        /// The card declined the transaction (AAC). With
        /// ``PaymentCardReader/Options-swift.struct/includeErrorInReadResult`` the read returns a result with
        /// outcome ``PaymentCardReadResult/ReadOutcome/cardDeclined`` instead.
        case paymentCardDeclined(String)
        /// No reader of the lane is present and healthy, or the reader vanished or faulted during the read.
        case readerNotAvailable(String)
        /// No card was read before ``PaymentCardReader/Options-swift.struct/readTimeout``.
        case timedOut(String)
        /// An internal failure (sealing the card data, an unexpected error type); the reason says which.
        case readerServiceError(String)
        /// A store-and-forward limit refused the read (the reason names the limit and the figures); nothing was
        /// stored.
        case storeAndForwardLimitExceeded(String)
        /// `decline()` more than 60 s after the read, or of a read already batched.
        case storeAndForwardDeclineFailed(String)
        /// `decline()` found no stored read of the session.
        case storeAndForwardResultNotFound(String)

        /// The case without its reason, for comparing and switching.
        public enum Code: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            case cancelled, readCancelled, invalidAmount, invalidCurrencyCode, notReady, cardReadFailed
            case cardNotSupported, paymentCardDeclined, readerNotAvailable, timedOut, readerServiceError
            case storeAndForwardLimitExceeded, storeAndForwardDeclineFailed, storeAndForwardResultNotFound

            public var description: String { rawValue }
        }

        public var code: Code {
            switch self {
            case .cancelled: .cancelled
            case .readCancelled: .readCancelled
            case .invalidAmount: .invalidAmount
            case .invalidCurrencyCode: .invalidCurrencyCode
            case .notReady: .notReady
            case .cardReadFailed: .cardReadFailed
            case .cardNotSupported: .cardNotSupported
            case .paymentCardDeclined: .paymentCardDeclined
            case .readerNotAvailable: .readerNotAvailable
            case .timedOut: .timedOut
            case .readerServiceError: .readerServiceError
            case .storeAndForwardLimitExceeded: .storeAndForwardLimitExceeded
            case .storeAndForwardDeclineFailed: .storeAndForwardDeclineFailed
            case .storeAndForwardResultNotFound: .storeAndForwardResultNotFound
            }
        }

        /// What failed, where and what to do.
        public var reason: String {
            switch self {
            case .cancelled(let reason), .readCancelled(let reason), .invalidAmount(let reason),
                .invalidCurrencyCode(let reason), .notReady(let reason), .cardReadFailed(let reason),
                .cardNotSupported(let reason), .paymentCardDeclined(let reason), .readerNotAvailable(let reason),
                .timedOut(let reason), .readerServiceError(let reason), .storeAndForwardLimitExceeded(let reason),
                .storeAndForwardDeclineFailed(let reason), .storeAndForwardResultNotFound(let reason):
                reason
            }
        }

        /// The case name, as Apple's `errorName`.
        public var errorName: String { code.rawValue }

        public var description: String { reason.isEmpty ? errorName : "\(errorName): \(reason)" }

        public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
        public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    }
}

extension PaymentCardReaderSession.ReadError: LocalizedError {
    public var errorDescription: String? { description }
}
