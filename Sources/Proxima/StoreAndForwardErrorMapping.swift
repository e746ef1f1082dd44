internal import StoreAndForwardCapability

/// The one place where the store-and-forward service's errors become the Apple-shaped errors: a session's
/// (``PaymentCardReaderError``, ``PaymentCardReaderSession/ReadError``) and the store's
/// (``PaymentCardReaderStore/StoreError``). The payment read's own errors go through `PaymentErrorMapping`.
///
/// | Service code | Session | Store |
/// |---|---|---|
/// | `notAllowed` | `PaymentCardReaderError.storeAndForwardNotAllowed` | `notAllowed` |
/// | `sessionExpired` | `PaymentCardReaderError.storeAndForwardSessionExpired` | — |
/// | `sessionInvalidated` | `PaymentCardReaderError.storeAndForwardSessionInvalidated` | `notAllowed` |
/// | `limitExceeded` | `ReadError.storeAndForwardLimitExceeded` (reason + limit) | — |
/// | `declineFailed`, `resultNotFound` | `ReadError.storeAndForwardDeclineFailed`, `…ResultNotFound` | — |
/// | `batch…`, `resultsNotFound`, `deletionToken…`, `busy` | `ReadError.readerServiceError` | the case of that name |
/// | `storeFailed`, `tampered` | `ReadError.readerServiceError` | `storeFailed`, `tampered` |
enum StoreAndForwardErrorMapping {
    typealias StoreError = PaymentCardReaderStore.StoreError

    static func apiError(_ error: any Error) -> any Error {
        guard let error = error as? StoreAndForwardError else { return PaymentErrorMapping.apiError(error) }
        let reason = error.limit.map { "\(error.reason) (limit: \($0))" } ?? error.reason
        switch error.code {
        case .notAllowed: return PaymentCardReaderError.storeAndForwardNotAllowed(reason)
        case .sessionExpired: return PaymentCardReaderError.storeAndForwardSessionExpired(reason)
        case .sessionInvalidated: return PaymentCardReaderError.storeAndForwardSessionInvalidated(reason)
        case .limitExceeded: return PaymentCardReaderSession.ReadError.storeAndForwardLimitExceeded(reason)
        case .declineFailed: return PaymentCardReaderSession.ReadError.storeAndForwardDeclineFailed(reason)
        case .resultNotFound: return PaymentCardReaderSession.ReadError.storeAndForwardResultNotFound(reason)
        default: return PaymentCardReaderSession.ReadError.readerServiceError("store and forward: \(error)")
        }
    }

    static func storeError(_ error: any Error) -> StoreError {
        switch error {
        case let error as StoreError: return error
        case let error as StoreAndForwardError:
            let reason = error.reason
            switch error.code {
            case .notAllowed, .sessionExpired, .sessionInvalidated, .limitExceeded: return .notAllowed(reason)
            case .storeFailed, .declineFailed, .resultNotFound: return .storeFailed(reason)
            case .tampered: return .tampered(reason)
            case .batchAlreadyExists: return .storeAndForwardBatchAlreadyExists(reason)
            case .batchNotFound: return .storeAndForwardBatchNotFound(reason)
            case .batchSizeInvalid: return .storeAndForwardBatchSizeInvalid(reason)
            case .resultsNotFound: return .storeAndForwardResultsNotFound(reason)
            case .deletionTokenInvalid: return .storeAndForwardDeletionTokenInvalid(reason)
            case .deletionTokenExpired: return .storeAndForwardDeletionTokenExpired(reason)
            case .busy: return .busy(reason)
            }
        case let error as PaymentCardReaderError: return .notAllowed(error.description)
        default: return .storeFailed("\(error)")
        }
    }
}
