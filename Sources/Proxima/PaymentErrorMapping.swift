internal import EMVCommon
internal import LoyaltyCapability
internal import PaymentCapability
internal import ProximaCore

/// The one place where the payment service's, the kernel's and the capability's errors become the Apple-shaped
/// errors of the payment API (``PaymentCardReaderError`` and ``PaymentCardReaderSession/ReadError``), and where
/// the service's read events become Apple's event names. Nothing else happens in this layer.
///
/// | From | To |
/// |---|---|
/// | service `notAllowed`, `unsupported`, `emptyToken`, `tokenExpired`, `accountNotLinked`, `accountAlreadyLinked`, `accountLinkingFailed`, `accountLinkingCheckFailed`, `readerBusy`, `notReady` | the `PaymentCardReaderError` case of the same meaning |
/// | service `invalidToken` | `invalidReaderToken` |
/// | service `invalidCurrency`, `invalidAmount` | `ReadError.invalidCurrencyCode`, `ReadError.invalidAmount` |
/// | service `readCancelled` (after ``PaymentCardReaderSession/cancelRead()``) | `ReadError.readCancelled` |
/// | service `sealingFailed` | `ReadError.readerServiceError` |
/// | read failure `declined` | `ReadError.paymentCardDeclined` |
/// | read failure `cardNotSupported` | `ReadError.cardNotSupported` |
/// | read failure `presentAgain`, `ended` | `ReadError.cardReadFailed` |
/// | `PaymentError.cardReadFailed` (also as a kernel error's cause) | `ReadError.cardReadFailed` (reason names the APDU step) |
/// | `PaymentError.invalidTransaction` | `ReadError.invalidAmount` |
/// | `LoyaltyError.invalidRequest` | `PaymentCardReaderError.invalidVASMerchants` |
/// | other `LoyaltyError`s (malformed answer, unknown key, altered or stale cryptogram) | `ReadError.cardReadFailed` |
/// | `ProximaError.cancelled`, `CancellationError` | `ReadError.cancelled` |
/// | `deadlineExceeded` | `ReadError.timedOut` |
/// | `readerBusy` | `PaymentCardReaderError.readerBusy` |
/// | `noSuchLane`, `noSuchReader` | `PaymentCardReaderError.unsupported` |
/// | `readerUnavailable`, `readerVanished`, `readerFaulted`, `pluginFailed` | `ReadError.readerNotAvailable` |
/// | `cardRemoved`, `cardTimeout`, `transmitFailed`, `malformedData` | `ReadError.cardReadFailed` |
/// | `shuttingDown` | `PaymentCardReaderError.backgrounded` (the session must be prepared again) |
/// | `unsupported` | `ReadError.cardNotSupported` |
/// | `invalidArgument`, `invalidManifest` | `PaymentCardReaderError.notAllowed` |
/// | anything else | `ReadError.readerServiceError` |
enum PaymentErrorMapping {
    typealias ReadError = PaymentCardReaderSession.ReadError

    /// The API error for whatever the payment service threw.
    static func apiError(_ error: any Error) -> any Error {
        switch error {
        case let e as PaymentCardReaderError: return e
        case let e as ReadError: return e
        case let e as PaymentServiceError: return serviceError(e)
        case let e as PaymentReadFailure: return readFailure(e)
        case let e as PaymentError: return capabilityError(e)
        case let e as LoyaltyError: return loyaltyError(e)
        case let e as ProximaError:
            // A capability error the kernel wrapped (a reader that faulted mid-read) names the better cause.
            if let payment = e.cause(PaymentError.self), e.code != .deadlineExceeded, e.code != .cancelled {
                return capabilityError(payment)
            }
            if let loyalty = e.cause(LoyaltyError.self), e.code != .deadlineExceeded, e.code != .cancelled {
                return loyaltyError(loyalty)
            }
            return kernelError(e)
        case is CancellationError: return ReadError.cancelled("read cancelled")
        default: return ReadError.readerServiceError("\(error)")
        }
    }

    /// A service error that can only be a ``PaymentCardReaderError`` (configuration, lane).
    static func readerError(_ error: PaymentServiceError) -> PaymentCardReaderError {
        (serviceError(error) as? PaymentCardReaderError) ?? .notAllowed(error.reason)
    }

    static func serviceError(_ error: PaymentServiceError) -> any Error {
        let reason = error.reason
        switch error.code {
        case .notAllowed: return PaymentCardReaderError.notAllowed(reason)
        case .unsupported: return PaymentCardReaderError.unsupported(reason)
        case .emptyToken: return PaymentCardReaderError.emptyReaderToken(reason)
        case .invalidToken: return PaymentCardReaderError.invalidReaderToken(reason)
        case .tokenExpired: return PaymentCardReaderError.tokenExpired(reason)
        case .accountNotLinked: return PaymentCardReaderError.accountNotLinked(reason)
        case .accountAlreadyLinked: return PaymentCardReaderError.accountAlreadyLinked(reason)
        case .accountLinkingFailed: return PaymentCardReaderError.accountLinkingFailed(reason)
        case .accountLinkingCheckFailed: return PaymentCardReaderError.accountLinkingCheckFailed(reason)
        case .readerBusy: return PaymentCardReaderError.readerBusy(reason)
        case .notReady: return PaymentCardReaderError.notReady(reason)
        case .invalidCurrency: return ReadError.invalidCurrencyCode(reason)
        case .invalidAmount: return ReadError.invalidAmount(reason)
        case .readCancelled: return ReadError.readCancelled(reason)
        case .sealingFailed: return ReadError.readerServiceError(reason)
        }
    }

    static func readFailure(_ failure: PaymentReadFailure) -> ReadError {
        switch failure.code {
        case .declined: .paymentCardDeclined(failure.reason)
        case .cardNotSupported: .cardNotSupported(failure.reason)
        case .presentAgain, .ended: .cardReadFailed(failure.reason)
        }
    }

    static func capabilityError(_ error: PaymentError) -> ReadError {
        error.code == .invalidTransaction
            ? .invalidAmount(error.description) : .cardReadFailed("\(error.description); tap again")
    }

    /// A VAS request naming unconfigured merchants → `invalidVASMerchants`; a phone answer or cryptogram that
    /// cannot be used (malformed, unknown key, altered, stale) → `cardReadFailed`, naming the step.
    static func loyaltyError(_ error: LoyaltyError) -> any Error {
        switch error.code {
        case .invalidRequest: PaymentCardReaderError.invalidVASMerchants(error.reason)
        // A phone that refuses the Smart Tap collector, or this terminal's command, will refuse it again: no "tap
        // again".
        case .sessionRefused, .commandRejected: ReadError.cardReadFailed(error.description)
        default: ReadError.cardReadFailed("\(error.description); tap again")
        }
    }

    static func kernelError(_ error: ProximaError) -> any Error {
        let reason = error.description
        switch error.code {
        case .cancelled:
            return ReadError.cancelled(reason)
        case .deadlineExceeded:
            return ReadError.timedOut("\(reason); no card was read in time (PaymentCardReader.Options.readTimeout)")
        case .readerBusy:
            return PaymentCardReaderError.readerBusy(reason)
        case .noSuchLane, .noSuchReader:
            return PaymentCardReaderError.unsupported(reason)
        case .readerUnavailable, .readerVanished, .readerFaulted, .pluginFailed:
            return ReadError.readerNotAvailable(reason)
        case .cardRemoved, .cardTimeout, .transmitFailed, .malformedData:
            return ReadError.cardReadFailed("\(reason); tap again")
        case .shuttingDown:
            return PaymentCardReaderError.backgrounded("\(reason); call prepare() again before the next read")
        case .unsupported:
            return ReadError.cardNotSupported(reason)
        case .invalidArgument, .invalidManifest:
            return PaymentCardReaderError.notAllowed(reason)
        default:
            return ReadError.readerServiceError(reason)
        }
    }

    /// Whether a read error means the session must be prepared again.
    static func needsPrepare(_ error: any Error) -> Bool {
        (error as? PaymentCardReaderError)?.code == .backgrounded
    }

    /// The reader event of a read event of the service.
    static func event(_ event: PaymentReadEvent) -> PaymentCardReader.Event {
        switch event {
        case .readyForTap: .readyForTap
        case .cardDetected: .cardDetected
        case .removeCard: .removeCard
        case .pinEntryRequested: .pinEntryRequested
        }
    }

    /// The event that ends a read which threw `error` (the service's error, before mapping), or `nil` when the
    /// read never started (a check refused it): `readCompleted` for a decline (the card was read), `readRetry`
    /// when the card asks to be presented again, `readCancelled`, `notReady` when the session must be prepared
    /// again, `readNotCompleted` otherwise.
    static func finalEvent(of error: any Error) -> PaymentCardReader.Event? {
        if let failure = error as? PaymentReadFailure {
            switch failure.code {
            case .declined: return .readCompleted
            case .presentAgain: return .readRetry
            case .cardNotSupported, .ended: return .readNotCompleted
            }
        }
        if let service = error as? PaymentServiceError {
            switch service.code {
            case .readCancelled: return .readCancelled
            case .sealingFailed: return .readNotCompleted
            default: return nil
            }
        }
        let mapped = apiError(error)
        if needsPrepare(mapped) { return .notReady }
        if let read = mapped as? ReadError, read.code == .cancelled { return .readCancelled }
        return .readNotCompleted
    }
}
