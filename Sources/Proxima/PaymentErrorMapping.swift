import PaymentCapability
import ProximaCore
import ProximaCrypto
import ProximaKernel

/// The one place where kernel, capability, token and crypto errors become the Apple-shaped errors of the payment
/// API (``PaymentCardReaderError`` and ``PaymentCardReaderSession/ReadError``), and where EMV outcomes that are not
/// a success become read errors.
///
/// | From | To |
/// |---|---|
/// | `JWTError.expired` | `tokenExpired` |
/// | any other `JWTError` (`malformedToken`, `algorithmNotAllowed` (`none`, `HS256`, …), `invalidSignature`, `notYetValid`, `wrongIssuer`, `wrongAudience`, `missingClaim`) | `invalidReaderToken` |
/// | `ProximaError.cancelled`, `CancellationError` | `ReadError.readCancelled` after ``PaymentCardReaderSession/cancelRead()``, else `ReadError.cancelled` |
/// | `deadlineExceeded` | `ReadError.timedOut` |
/// | `readerBusy` | `PaymentCardReaderError.readerBusy` |
/// | `noSuchLane`, `noSuchReader` | `PaymentCardReaderError.unsupported` |
/// | `readerUnavailable`, `readerVanished`, `readerFaulted`, `pluginFailed` | `ReadError.readerNotAvailable` |
/// | `cardRemoved`, `cardTimeout`, `transmitFailed`, `malformedData` | `ReadError.cardReadFailed` |
/// | `shuttingDown` | `PaymentCardReaderError.backgrounded` (the session must be prepared again) |
/// | `unsupported` | `ReadError.cardNotSupported` |
/// | `invalidArgument`, `invalidManifest` | `PaymentCardReaderError.notAllowed` |
/// | `PaymentError.cardReadFailed` | `ReadError.cardReadFailed` (reason names the APDU step) |
/// | `PaymentError.invalidTransaction` | `ReadError.invalidAmount` |
/// | anything else (`CryptoError` while sealing, …) | `ReadError.readerServiceError` |
enum PaymentErrorMapping {
    /// A refused token.
    static func tokenRefused(_ error: JWTError, readerIdentifier: String) -> PaymentCardReaderError {
        if error.code == .expired {
            return .tokenExpired("the processor token has expired (\(error.reason)); ask the processor for a new one")
        }
        return .invalidReaderToken(
            "the processor token was refused for reader \"\(readerIdentifier)\": \(error.code): \(error.reason)"
        )
    }

    /// Whether a read error means the session must be prepared again.
    static func needsPrepare(_ error: any Error) -> Bool {
        (error as? PaymentCardReaderError)?.code == .backgrounded
    }

    /// The API error for whatever a read threw.
    ///
    /// - Parameters:
    ///   - error: The error of `Kernel.tap` (or of sealing the card data).
    ///   - capabilityError: The `PaymentError` the capability threw during the tap, if any; the kernel may hand it
    ///     on wrapped.
    ///   - readCancelled: Whether ``PaymentCardReaderSession/cancelRead()`` asked the read to stop.
    ///   - lane: The lane, for messages.
    static func readFailure(
        _ error: any Error,
        capabilityError: PaymentError?,
        readCancelled: Bool,
        lane: LaneID
    ) -> any Error {
        if let payment = (error as? PaymentError) ?? capabilityError {
            return payment.code == .invalidTransaction
                ? PaymentCardReaderSession.ReadError.invalidAmount(payment.description)
                : PaymentCardReaderSession.ReadError.cardReadFailed("\(payment.description); tap again")
        }
        let kernelError: ProximaError
        switch error {
        case let e as ProximaError: kernelError = e
        case is CancellationError: kernelError = ProximaError(.cancelled, "read cancelled", lane: lane)
        case let e as PaymentCardReaderError: return e
        case let e as PaymentCardReaderSession.ReadError: return e
        default:
            return PaymentCardReaderSession.ReadError.readerServiceError("lane \(lane): \(error)")
        }
        let reason = kernelError.description
        switch kernelError.code {
        case .cancelled:
            return readCancelled
                ? PaymentCardReaderSession.ReadError.readCancelled("cancelRead() ended the read [lane \(lane)]")
                : PaymentCardReaderSession.ReadError.cancelled(reason)
        case .deadlineExceeded:
            return PaymentCardReaderSession.ReadError.timedOut(
                "\(reason); no card was read in time (PaymentCardReader.Options.readTimeout)"
            )
        case .readerBusy:
            return PaymentCardReaderError.readerBusy(reason)
        case .noSuchLane, .noSuchReader:
            return PaymentCardReaderError.unsupported(reason)
        case .readerUnavailable, .readerVanished, .readerFaulted, .pluginFailed:
            return PaymentCardReaderSession.ReadError.readerNotAvailable(reason)
        case .cardRemoved, .cardTimeout, .transmitFailed, .malformedData:
            return PaymentCardReaderSession.ReadError.cardReadFailed("\(reason); tap again")
        case .shuttingDown:
            return PaymentCardReaderError.backgrounded("\(reason); call prepare() again before the next read")
        case .unsupported:
            return PaymentCardReaderSession.ReadError.cardNotSupported(reason)
        case .invalidArgument, .invalidManifest:
            return PaymentCardReaderError.notAllowed(reason)
        default:
            return PaymentCardReaderSession.ReadError.readerServiceError(reason)
        }
    }

    /// The read error of an EMV outcome that is no success, or `nil` for online request and approved.
    static func outcomeFailure(_ outcome: EMVOutcome, reader: ReaderID, lane: LaneID) -> PaymentCardReaderSession
        .ReadError?
    {
        let place = "[lane \(lane), reader \(reader)]"
        switch outcome.status {
        case .onlineRequest, .approved:
            return nil
        case .declined:
            return .paymentCardDeclined("the card declined the transaction (AAC) \(place)")
        case .tryAnotherInterface:
            return .cardNotSupported("the card asks for another interface (insert the chip) \(place)")
        case .tryAgain:
            return .cardReadFailed("the card asks to be presented again (e.g. unlock the phone), then tap \(place)")
        case .endApplication where outcome.isCardNotSupported:
            return .cardNotSupported("\(outcome.reason) \(place)")
        case .endApplication, .selectNext:
            return .cardReadFailed("\(outcome.reason); tap again or use another card \(place)")
        }
    }
}
