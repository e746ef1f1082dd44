internal import CPCSCLite
public import ProximaCore

/// A pcsc-lite status code (`LONG`: `SCARD_S_SUCCESS`, `SCARD_E_*`, `SCARD_W_*`, `SCARD_F_*`, `SCARD_P_*`), with
/// a named member per code pcsc-lite defines, as swift-system's `Errno` does for `errno`.
///
/// The raw value is pcsc-lite's `LONG` widened to `Int`. `LONG` is 64-bit on Linux, so `SCARD_E_NO_SERVICE` is the
/// positive `0x8010001D` there (it is a negative 32-bit value on macOS): compare statuses with the named members,
/// never with literals. ``description`` reads `SCARD_W_REMOVED_CARD (Card was removed)`: the C name, so logs
/// can be searched for it, and pcsc-lite's own text (`pcsc_stringify_error`).
public struct PCSCStatus: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }

    init(_ value: LONG) { rawValue = Int(value) }

    /// The value to hand back to pcsc-lite.
    var cValue: LONG { LONG(truncatingIfNeeded: rawValue) }

    /// Whether this is `SCARD_S_SUCCESS`.
    public var isSuccess: Bool { self == .success }

    /// `SCARD_S_SUCCESS` (0x00000000): No error was encountered.
    public static let success = PCSCStatus(CPCSCLite.SCARD_S_SUCCESS)
    /// `SCARD_F_INTERNAL_ERROR` (0x80100001): An internal consistency check failed.
    public static let internalError = PCSCStatus(CPCSCLite.SCARD_F_INTERNAL_ERROR)
    /// `SCARD_E_CANCELLED` (0x80100002): The action was cancelled by an SCardCancel request.
    public static let cancelled = PCSCStatus(CPCSCLite.SCARD_E_CANCELLED)
    /// `SCARD_E_INVALID_HANDLE` (0x80100003): The supplied handle was invalid.
    public static let invalidHandle = PCSCStatus(CPCSCLite.SCARD_E_INVALID_HANDLE)
    /// `SCARD_E_INVALID_PARAMETER` (0x80100004): One or more of the supplied parameters could not be properly interpreted.
    public static let invalidParameter = PCSCStatus(CPCSCLite.SCARD_E_INVALID_PARAMETER)
    /// `SCARD_E_INVALID_TARGET` (0x80100005): Registry startup information is missing or invalid.
    public static let invalidTarget = PCSCStatus(CPCSCLite.SCARD_E_INVALID_TARGET)
    /// `SCARD_E_NO_MEMORY` (0x80100006): Not enough memory available to complete this command.
    public static let noMemory = PCSCStatus(CPCSCLite.SCARD_E_NO_MEMORY)
    /// `SCARD_F_WAITED_TOO_LONG` (0x80100007): An internal consistency timer has expired.
    public static let waitedTooLong = PCSCStatus(CPCSCLite.SCARD_F_WAITED_TOO_LONG)
    /// `SCARD_E_INSUFFICIENT_BUFFER` (0x80100008): The data buffer to receive returned data is too small for the returned data.
    public static let insufficientBuffer = PCSCStatus(CPCSCLite.SCARD_E_INSUFFICIENT_BUFFER)
    /// `SCARD_E_UNKNOWN_READER` (0x80100009): The specified reader name is not recognized.
    public static let unknownReader = PCSCStatus(CPCSCLite.SCARD_E_UNKNOWN_READER)
    /// `SCARD_E_TIMEOUT` (0x8010000A): The user-specified timeout value has expired.
    public static let timeout = PCSCStatus(CPCSCLite.SCARD_E_TIMEOUT)
    /// `SCARD_E_SHARING_VIOLATION` (0x8010000B): The smart card cannot be accessed because of other connections outstanding.
    public static let sharingViolation = PCSCStatus(CPCSCLite.SCARD_E_SHARING_VIOLATION)
    /// `SCARD_E_NO_SMARTCARD` (0x8010000C): The operation requires a Smart Card, but no Smart Card is currently in the device.
    public static let noSmartcard = PCSCStatus(CPCSCLite.SCARD_E_NO_SMARTCARD)
    /// `SCARD_E_UNKNOWN_CARD` (0x8010000D): The specified smart card name is not recognized.
    public static let unknownCard = PCSCStatus(CPCSCLite.SCARD_E_UNKNOWN_CARD)
    /// `SCARD_E_CANT_DISPOSE` (0x8010000E): The system could not dispose of the media in the requested manner.
    public static let cantDispose = PCSCStatus(CPCSCLite.SCARD_E_CANT_DISPOSE)
    /// `SCARD_E_PROTO_MISMATCH` (0x8010000F): The requested protocols are incompatible with the protocol currently in use with the smart card.
    public static let protocolMismatch = PCSCStatus(CPCSCLite.SCARD_E_PROTO_MISMATCH)
    /// `SCARD_E_NOT_READY` (0x80100010): The reader or smart card is not ready to accept commands.
    public static let notReady = PCSCStatus(CPCSCLite.SCARD_E_NOT_READY)
    /// `SCARD_E_INVALID_VALUE` (0x80100011): One or more of the supplied parameters values could not be properly interpreted.
    public static let invalidValue = PCSCStatus(CPCSCLite.SCARD_E_INVALID_VALUE)
    /// `SCARD_E_SYSTEM_CANCELLED` (0x80100012): The action was cancelled by the system, presumably to log off or shut down.
    public static let systemCancelled = PCSCStatus(CPCSCLite.SCARD_E_SYSTEM_CANCELLED)
    /// `SCARD_F_COMM_ERROR` (0x80100013): An internal communications error has been detected.
    public static let communicationError = PCSCStatus(CPCSCLite.SCARD_F_COMM_ERROR)
    /// `SCARD_F_UNKNOWN_ERROR` (0x80100014): An internal error has been detected, but the source is unknown.
    public static let unknownError = PCSCStatus(CPCSCLite.SCARD_F_UNKNOWN_ERROR)
    /// `SCARD_E_INVALID_ATR` (0x80100015): An ATR obtained from the registry is not a valid ATR string.
    public static let invalidATR = PCSCStatus(CPCSCLite.SCARD_E_INVALID_ATR)
    /// `SCARD_E_NOT_TRANSACTED` (0x80100016): An attempt was made to end a non-existent transaction.
    public static let notTransacted = PCSCStatus(CPCSCLite.SCARD_E_NOT_TRANSACTED)
    /// `SCARD_E_READER_UNAVAILABLE` (0x80100017): The specified reader is not currently available for use.
    public static let readerUnavailable = PCSCStatus(CPCSCLite.SCARD_E_READER_UNAVAILABLE)
    /// `SCARD_P_SHUTDOWN` (0x80100018): The operation has been aborted to allow the server application to exit.
    public static let shutdown = PCSCStatus(CPCSCLite.SCARD_P_SHUTDOWN)
    /// `SCARD_E_PCI_TOO_SMALL` (0x80100019): The PCI Receive buffer was too small.
    public static let pciTooSmall = PCSCStatus(CPCSCLite.SCARD_E_PCI_TOO_SMALL)
    /// `SCARD_E_READER_UNSUPPORTED` (0x8010001A): The reader driver does not meet minimal requirements for support.
    public static let readerUnsupported = PCSCStatus(CPCSCLite.SCARD_E_READER_UNSUPPORTED)
    /// `SCARD_E_DUPLICATE_READER` (0x8010001B): The reader driver did not produce a unique reader name.
    public static let duplicateReader = PCSCStatus(CPCSCLite.SCARD_E_DUPLICATE_READER)
    /// `SCARD_E_CARD_UNSUPPORTED` (0x8010001C): The smart card does not meet minimal requirements for support.
    public static let cardUnsupported = PCSCStatus(CPCSCLite.SCARD_E_CARD_UNSUPPORTED)
    /// `SCARD_E_NO_SERVICE` (0x8010001D): The Smart card resource manager is not running.
    public static let noService = PCSCStatus(CPCSCLite.SCARD_E_NO_SERVICE)
    /// `SCARD_E_SERVICE_STOPPED` (0x8010001E): The Smart card resource manager has shut down.
    public static let serviceStopped = PCSCStatus(CPCSCLite.SCARD_E_SERVICE_STOPPED)
    /// `SCARD_E_UNEXPECTED` (0x8010001F): An unexpected card error has occurred. pcsc-lite never returns it: it shares `0x8010001F` with `SCARD_E_UNSUPPORTED_FEATURE`.
    public static let unexpected = PCSCStatus(CPCSCLite.SCARD_E_UNEXPECTED)
    /// `SCARD_E_UNSUPPORTED_FEATURE` (0x8010001F): This smart card does not support the requested feature. (`0x8010001F` in pcsc-lite, `0x80100022` on Windows.)
    public static let unsupportedFeature = PCSCStatus(CPCSCLite.SCARD_E_UNSUPPORTED_FEATURE)
    /// `SCARD_E_ICC_INSTALLATION` (0x80100020): No primary provider can be found for the smart card.
    public static let iccInstallation = PCSCStatus(CPCSCLite.SCARD_E_ICC_INSTALLATION)
    /// `SCARD_E_ICC_CREATEORDER` (0x80100021): The requested order of object creation is not supported.
    public static let iccCreateOrder = PCSCStatus(CPCSCLite.SCARD_E_ICC_CREATEORDER)
    /// `SCARD_E_DIR_NOT_FOUND` (0x80100023): The identified directory does not exist in the smart card.
    public static let directoryNotFound = PCSCStatus(CPCSCLite.SCARD_E_DIR_NOT_FOUND)
    /// `SCARD_E_FILE_NOT_FOUND` (0x80100024): The identified file does not exist in the smart card.
    public static let fileNotFound = PCSCStatus(CPCSCLite.SCARD_E_FILE_NOT_FOUND)
    /// `SCARD_E_NO_DIR` (0x80100025): The supplied path does not represent a smart card directory.
    public static let noDirectory = PCSCStatus(CPCSCLite.SCARD_E_NO_DIR)
    /// `SCARD_E_NO_FILE` (0x80100026): The supplied path does not represent a smart card file.
    public static let noFile = PCSCStatus(CPCSCLite.SCARD_E_NO_FILE)
    /// `SCARD_E_NO_ACCESS` (0x80100027): Access is denied to this file.
    public static let noAccess = PCSCStatus(CPCSCLite.SCARD_E_NO_ACCESS)
    /// `SCARD_E_WRITE_TOO_MANY` (0x80100028): The smart card does not have enough memory to store the information.
    public static let writeTooMany = PCSCStatus(CPCSCLite.SCARD_E_WRITE_TOO_MANY)
    /// `SCARD_E_BAD_SEEK` (0x80100029): There was an error trying to set the smart card file object pointer.
    public static let badSeek = PCSCStatus(CPCSCLite.SCARD_E_BAD_SEEK)
    /// `SCARD_E_INVALID_CHV` (0x8010002A): The supplied PIN is incorrect.
    public static let invalidCHV = PCSCStatus(CPCSCLite.SCARD_E_INVALID_CHV)
    /// `SCARD_E_UNKNOWN_RES_MNG` (0x8010002B): An unrecognized error code was returned from a layered component.
    public static let unknownResourceManager = PCSCStatus(CPCSCLite.SCARD_E_UNKNOWN_RES_MNG)
    /// `SCARD_E_NO_SUCH_CERTIFICATE` (0x8010002C): The requested certificate does not exist.
    public static let noSuchCertificate = PCSCStatus(CPCSCLite.SCARD_E_NO_SUCH_CERTIFICATE)
    /// `SCARD_E_CERTIFICATE_UNAVAILABLE` (0x8010002D): The requested certificate could not be obtained.
    public static let certificateUnavailable = PCSCStatus(CPCSCLite.SCARD_E_CERTIFICATE_UNAVAILABLE)
    /// `SCARD_E_NO_READERS_AVAILABLE` (0x8010002E): Cannot find a smart card reader.
    public static let noReadersAvailable = PCSCStatus(CPCSCLite.SCARD_E_NO_READERS_AVAILABLE)
    /// `SCARD_E_COMM_DATA_LOST` (0x8010002F): A communications error with the smart card has been detected. Retry the operation.
    public static let communicationDataLost = PCSCStatus(CPCSCLite.SCARD_E_COMM_DATA_LOST)
    /// `SCARD_E_NO_KEY_CONTAINER` (0x80100030): The requested key container does not exist on the smart card.
    public static let noKeyContainer = PCSCStatus(CPCSCLite.SCARD_E_NO_KEY_CONTAINER)
    /// `SCARD_E_SERVER_TOO_BUSY` (0x80100031): The Smart Card Resource Manager is too busy to complete this operation.
    public static let serverTooBusy = PCSCStatus(CPCSCLite.SCARD_E_SERVER_TOO_BUSY)
    /// `SCARD_W_UNSUPPORTED_CARD` (0x80100065): The reader cannot communicate with the card, due to ATR string configuration conflicts.
    public static let unsupportedCard = PCSCStatus(CPCSCLite.SCARD_W_UNSUPPORTED_CARD)
    /// `SCARD_W_UNRESPONSIVE_CARD` (0x80100066): The smart card is not responding to a reset.
    public static let unresponsiveCard = PCSCStatus(CPCSCLite.SCARD_W_UNRESPONSIVE_CARD)
    /// `SCARD_W_UNPOWERED_CARD` (0x80100067): Power has been removed from the smart card, so that further communication is not possible.
    public static let unpoweredCard = PCSCStatus(CPCSCLite.SCARD_W_UNPOWERED_CARD)
    /// `SCARD_W_RESET_CARD` (0x80100068): The smart card has been reset, so any shared state information is invalid.
    public static let resetCard = PCSCStatus(CPCSCLite.SCARD_W_RESET_CARD)
    /// `SCARD_W_REMOVED_CARD` (0x80100069): The smart card has been removed, so further communication is not possible.
    public static let removedCard = PCSCStatus(CPCSCLite.SCARD_W_REMOVED_CARD)
    /// `SCARD_W_SECURITY_VIOLATION` (0x8010006A): Access was denied because of a security violation.
    public static let securityViolation = PCSCStatus(CPCSCLite.SCARD_W_SECURITY_VIOLATION)
    /// `SCARD_W_WRONG_CHV` (0x8010006B): The card cannot be accessed because the wrong PIN was presented.
    public static let wrongCHV = PCSCStatus(CPCSCLite.SCARD_W_WRONG_CHV)
    /// `SCARD_W_CHV_BLOCKED` (0x8010006C): The card cannot be accessed because the maximum number of PIN entry attempts has been reached.
    public static let chvBlocked = PCSCStatus(CPCSCLite.SCARD_W_CHV_BLOCKED)
    /// `SCARD_W_EOF` (0x8010006D): The end of the smart card file has been reached.
    public static let endOfFile = PCSCStatus(CPCSCLite.SCARD_W_EOF)
    /// `SCARD_W_CANCELLED_BY_USER` (0x8010006E): The user pressed "Cancel" on a Smart Card Selection Dialog.
    public static let cancelledByUser = PCSCStatus(CPCSCLite.SCARD_W_CANCELLED_BY_USER)
    /// `SCARD_W_CARD_NOT_AUTHENTICATED` (0x8010006F): No PIN was presented to the smart card.
    public static let cardNotAuthenticated = PCSCStatus(CPCSCLite.SCARD_W_CARD_NOT_AUTHENTICATED)

    /// Every named status with its C name; `SCARD_E_UNEXPECTED` is left out because its value is
    /// `SCARD_E_UNSUPPORTED_FEATURE`'s, and pcsc-lite only ever means the latter.
    static let namedStatuses: [(status: PCSCStatus, name: String)] = [
        (success, "SCARD_S_SUCCESS"),
        (internalError, "SCARD_F_INTERNAL_ERROR"),
        (cancelled, "SCARD_E_CANCELLED"),
        (invalidHandle, "SCARD_E_INVALID_HANDLE"),
        (invalidParameter, "SCARD_E_INVALID_PARAMETER"),
        (invalidTarget, "SCARD_E_INVALID_TARGET"),
        (noMemory, "SCARD_E_NO_MEMORY"),
        (waitedTooLong, "SCARD_F_WAITED_TOO_LONG"),
        (insufficientBuffer, "SCARD_E_INSUFFICIENT_BUFFER"),
        (unknownReader, "SCARD_E_UNKNOWN_READER"),
        (timeout, "SCARD_E_TIMEOUT"),
        (sharingViolation, "SCARD_E_SHARING_VIOLATION"),
        (noSmartcard, "SCARD_E_NO_SMARTCARD"),
        (unknownCard, "SCARD_E_UNKNOWN_CARD"),
        (cantDispose, "SCARD_E_CANT_DISPOSE"),
        (protocolMismatch, "SCARD_E_PROTO_MISMATCH"),
        (notReady, "SCARD_E_NOT_READY"),
        (invalidValue, "SCARD_E_INVALID_VALUE"),
        (systemCancelled, "SCARD_E_SYSTEM_CANCELLED"),
        (communicationError, "SCARD_F_COMM_ERROR"),
        (unknownError, "SCARD_F_UNKNOWN_ERROR"),
        (invalidATR, "SCARD_E_INVALID_ATR"),
        (notTransacted, "SCARD_E_NOT_TRANSACTED"),
        (readerUnavailable, "SCARD_E_READER_UNAVAILABLE"),
        (shutdown, "SCARD_P_SHUTDOWN"),
        (pciTooSmall, "SCARD_E_PCI_TOO_SMALL"),
        (readerUnsupported, "SCARD_E_READER_UNSUPPORTED"),
        (duplicateReader, "SCARD_E_DUPLICATE_READER"),
        (cardUnsupported, "SCARD_E_CARD_UNSUPPORTED"),
        (noService, "SCARD_E_NO_SERVICE"),
        (serviceStopped, "SCARD_E_SERVICE_STOPPED"),
        (unsupportedFeature, "SCARD_E_UNSUPPORTED_FEATURE"),
        (iccInstallation, "SCARD_E_ICC_INSTALLATION"),
        (iccCreateOrder, "SCARD_E_ICC_CREATEORDER"),
        (directoryNotFound, "SCARD_E_DIR_NOT_FOUND"),
        (fileNotFound, "SCARD_E_FILE_NOT_FOUND"),
        (noDirectory, "SCARD_E_NO_DIR"),
        (noFile, "SCARD_E_NO_FILE"),
        (noAccess, "SCARD_E_NO_ACCESS"),
        (writeTooMany, "SCARD_E_WRITE_TOO_MANY"),
        (badSeek, "SCARD_E_BAD_SEEK"),
        (invalidCHV, "SCARD_E_INVALID_CHV"),
        (unknownResourceManager, "SCARD_E_UNKNOWN_RES_MNG"),
        (noSuchCertificate, "SCARD_E_NO_SUCH_CERTIFICATE"),
        (certificateUnavailable, "SCARD_E_CERTIFICATE_UNAVAILABLE"),
        (noReadersAvailable, "SCARD_E_NO_READERS_AVAILABLE"),
        (communicationDataLost, "SCARD_E_COMM_DATA_LOST"),
        (noKeyContainer, "SCARD_E_NO_KEY_CONTAINER"),
        (serverTooBusy, "SCARD_E_SERVER_TOO_BUSY"),
        (unsupportedCard, "SCARD_W_UNSUPPORTED_CARD"),
        (unresponsiveCard, "SCARD_W_UNRESPONSIVE_CARD"),
        (unpoweredCard, "SCARD_W_UNPOWERED_CARD"),
        (resetCard, "SCARD_W_RESET_CARD"),
        (removedCard, "SCARD_W_REMOVED_CARD"),
        (securityViolation, "SCARD_W_SECURITY_VIOLATION"),
        (wrongCHV, "SCARD_W_WRONG_CHV"),
        (chvBlocked, "SCARD_W_CHV_BLOCKED"),
        (endOfFile, "SCARD_W_EOF"),
        (cancelledByUser, "SCARD_W_CANCELLED_BY_USER"),
        (cardNotAuthenticated, "SCARD_W_CARD_NOT_AUTHENTICATED"),
    ]

    private static let names: [Int: String] = Dictionary(
        namedStatuses.map { ($0.status.rawValue, $0.name) },
        uniquingKeysWith: { first, _ in first }
    )

    /// The C name (`SCARD_W_REMOVED_CARD`), or `nil` for a value pcsc-lite does not define.
    public var name: String? { Self.names[rawValue] }

    /// pcsc-lite's text for the status (`pcsc_stringify_error`, which writes into a thread-local buffer and is
    /// therefore safe from any thread), without its final period.
    public var message: String {
        var text = String(cString: pcsc_stringify_error(cValue))
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }

    /// `SCARD_W_REMOVED_CARD (Card was removed)`; an unnamed value reads `PC/SC status 0x8010FFFF (…)`.
    public var description: String {
        let label = name ?? "PC/SC status 0x" + String(UInt32(truncatingIfNeeded: rawValue), radix: 16, uppercase: true)
        return "\(label) (\(message))"
    }

    // MARK: Mapping to Proxima errors

    /// The Proxima error code this status means to a caller of the transport.
    ///
    /// | Status | Code |
    /// |---|---|
    /// | `SCARD_W_REMOVED_CARD` | `cardRemoved` |
    /// | `SCARD_E_READER_UNAVAILABLE`, `SCARD_E_UNKNOWN_READER` | `readerVanished` |
    /// | `SCARD_E_TIMEOUT`, `SCARD_W_UNRESPONSIVE_CARD` | `cardTimeout` |
    /// | `SCARD_E_SHARING_VIOLATION` | `readerBusy` |
    /// | `SCARD_E_NO_SERVICE`, `SCARD_E_SERVICE_STOPPED` | `readerUnavailable` |
    /// | `SCARD_E_CANCELLED` | `cancelled` |
    /// | anything else | `transmitFailed` |
    public var errorCode: ProximaError.Code {
        switch self {
        case .removedCard: .cardRemoved
        case .readerUnavailable, .unknownReader: .readerVanished
        case .timeout, .unresponsiveCard: .cardTimeout
        case .sharingViolation: .readerBusy
        case .noService, .serviceStopped: .readerUnavailable
        case .cancelled: .cancelled
        default: .transmitFailed
        }
    }

    /// The error a caller sees when `step` failed with this status on a reader, e.g.
    /// `SCardTransmit on 'Virtual PCD 00 00': SCARD_W_REMOVED_CARD (Card was removed)`.
    ///
    /// - Parameters:
    ///   - step: the pcsc-lite call that failed (`SCardConnect`, `SCardTransmit`, …).
    ///   - readerName: the reader's PC/SC name.
    ///   - reader: the kernel's id of the reader.
    public func proximaError(step: String, readerName: String, reader: ReaderID?) -> ProximaError {
        ProximaError(errorCode, "\(step) on '\(readerName)': \(self)", reader: reader)
    }
}
