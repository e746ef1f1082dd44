internal import MobileDocumentCapability
internal import ProximaCore

/// The one place where the ID service's, the mDL capability's and the kernel's errors become Apple's
/// ``MobileDocumentReaderError`` cases.
enum MobileDocumentErrorMapping {
    static func readerError(_ error: any Error) -> MobileDocumentReaderError {
        switch error {
        case let error as MobileDocumentReaderError:
            return error
        case let error as MobileDocumentServiceError:
            return serviceError(error)
        case let error as MobileDocumentError:
            return documentError(error)
        case let error as ProximaError:
            return kernelError(error)
        case is CancellationError:
            return .cancelled("the read was cancelled")
        default:
            return .unknown("\(error)")
        }
    }

    static func serviceError(_ error: MobileDocumentServiceError) -> MobileDocumentReaderError {
        switch error.code {
        case .notAllowed: .notAllowed(error.reason)
        case .unsupported: .notSupported(error.reason)
        case .invalidToken: .invalidToken(error.reason)
        case .tokenExpired: .sessionExpired(error.reason)
        case .invalidRequest: .invalidRequest(error.reason)
        case .notReady, .noDisplay: .serviceUnavailable(error.reason)
        case .busy: .systemBusy(error.reason)
        }
    }

    static func documentError(_ error: MobileDocumentError) -> MobileDocumentReaderError {
        switch error.code {
        case .notAnMdoc, .unsupportedEngagement:
            .notSupported("\(error.code): \(error.reason)")
        case .holderSilent:
            .serviceUnavailable("\(error.code): \(error.reason)")
        case .sessionTerminated:
            .cancelled("\(error.code): \(error.reason)")
        default:
            .invalidResponse(check: "\(error.code)", error.reason)
        }
    }

    static func kernelError(_ error: ProximaError) -> MobileDocumentReaderError {
        // A capability error the kernel wrapped (deadline passed meanwhile, reader faulted) keeps its check.
        if let cause = error.underlying as? MobileDocumentError, error.code != .cancelled {
            return documentError(cause)
        }
        switch error.code {
        case .cancelled: return .cancelled(error.reason)
        case .noSuchLane: return .notSupported(error.reason)
        case .readerBusy: return .systemBusy(error.reason)
        case .cardRemoved, .cardTimeout, .deadlineExceeded, .readerVanished, .readerFaulted, .shuttingDown,
            .noSuchReader, .readerUnavailable, .transmitFailed:
            return .serviceUnavailable(error.reason)
        default: return .unknown("\(error.code): \(error.reason)")
        }
    }
}
