internal import CNFC
public import ProximaCore

/// A libnfc result code (`NFC_SUCCESS`, `NFC_EIO`, … from `<nfc/nfc.h>`), with a named member per code libnfc 1.8
/// defines, as swift-system's `Errno` does for `errno`. Non-negative results of libnfc calls are counts, not
/// statuses.
///
/// ``description`` reads `NFC_ERFTRANS (RF Transmission Error)`: the C name, so logs can be searched for it, and
/// libnfc's own text (`nfc_strerror`'s table in `libnfc/nfc.c`).
public struct LibNFCStatus: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// `NFC_SUCCESS`: Success (no error).
    public static let success = LibNFCStatus(rawValue: NFC_SUCCESS)
    /// `NFC_EIO`: Input / output error: the device link failed (a closed terminal, a corrupted or refused frame).
    public static let inputOutput = LibNFCStatus(rawValue: NFC_EIO)
    /// `NFC_EINVARG`: Invalid argument(s).
    public static let invalidArgument = LibNFCStatus(rawValue: NFC_EINVARG)
    /// `NFC_EDEVNOTSUPP`: Operation not supported by device.
    public static let deviceNotSupported = LibNFCStatus(rawValue: NFC_EDEVNOTSUPP)
    /// `NFC_ENOTSUCHDEV`: No such device.
    public static let noSuchDevice = LibNFCStatus(rawValue: NFC_ENOTSUCHDEV)
    /// `NFC_EOVFLOW`: Buffer overflow.
    public static let overflow = LibNFCStatus(rawValue: NFC_EOVFLOW)
    /// `NFC_ETIMEOUT`: Operation timed out: the device itself did not answer in time.
    public static let timeout = LibNFCStatus(rawValue: NFC_ETIMEOUT)
    /// `NFC_EOPABORTED`: Operation aborted (by user).
    public static let aborted = LibNFCStatus(rawValue: NFC_EOPABORTED)
    /// `NFC_ENOTIMPL`: Not (yet) implemented.
    public static let notImplemented = LibNFCStatus(rawValue: NFC_ENOTIMPL)
    /// `NFC_ETGRELEASED`: Target released: the card left the field.
    public static let targetReleased = LibNFCStatus(rawValue: NFC_ETGRELEASED)
    /// `NFC_ERFTRANS`: RF transmission error: the card did not answer, or answered garbage.
    public static let rfTransmission = LibNFCStatus(rawValue: NFC_ERFTRANS)
    /// `NFC_EMFCAUTHFAIL`: MIFARE Classic authentication failed.
    public static let mifareAuthenticationFailed = LibNFCStatus(rawValue: NFC_EMFCAUTHFAIL)
    /// `NFC_ESOFT`: Software error (allocation, file/pipe creation, etc.).
    public static let software = LibNFCStatus(rawValue: NFC_ESOFT)
    /// `NFC_ECHIP`: Device's internal chip error.
    public static let chip = LibNFCStatus(rawValue: NFC_ECHIP)

    private static let names: [Int32: (String, String)] = [
        NFC_SUCCESS: ("NFC_SUCCESS", "Success"),
        NFC_EIO: ("NFC_EIO", "Input / Output Error"),
        NFC_EINVARG: ("NFC_EINVARG", "Invalid argument(s)"),
        NFC_EDEVNOTSUPP: ("NFC_EDEVNOTSUPP", "Not Supported by Device"),
        NFC_ENOTSUCHDEV: ("NFC_ENOTSUCHDEV", "No Such Device"),
        NFC_EOVFLOW: ("NFC_EOVFLOW", "Buffer Overflow"),
        NFC_ETIMEOUT: ("NFC_ETIMEOUT", "Timeout"),
        NFC_EOPABORTED: ("NFC_EOPABORTED", "Operation Aborted"),
        NFC_ENOTIMPL: ("NFC_ENOTIMPL", "Not (yet) Implemented"),
        NFC_ETGRELEASED: ("NFC_ETGRELEASED", "Target Released"),
        NFC_ERFTRANS: ("NFC_ERFTRANS", "RF Transmission Error"),
        NFC_EMFCAUTHFAIL: ("NFC_EMFCAUTHFAIL", "Mifare Authentication Failed"),
        NFC_ESOFT: ("NFC_ESOFT", "Software Error"),
        NFC_ECHIP: ("NFC_ECHIP", "Device's Internal Chip Error"),
    ]

    public var description: String {
        guard let (name, text) = Self.names[rawValue] else { return "libnfc error \(rawValue)" }
        return "\(name) (\(text))"
    }

    /// Whether the status says the link to the device failed (as opposed to the card): the device is then probed and,
    /// failing that, marked faulted and reopened.
    public var meansLinkFailure: Bool {
        switch self {
        case .inputOutput, .timeout, .noSuchDevice, .chip, .software, .aborted: true
        default: false
        }
    }

    /// Whether the status says the card did not answer or left (the device works).
    public var meansCardProblem: Bool { self == .rfTransmission || self == .targetReleased }

    /// The kernel's code for a call that failed with this status.
    public var errorCode: ProximaError.Code {
        switch self {
        case .targetReleased: .cardRemoved
        case .rfTransmission: .cardTimeout
        case .inputOutput, .timeout, .chip, .overflow: .transmitFailed
        case .noSuchDevice: .readerVanished
        case .deviceNotSupported, .notImplemented: .unsupported
        case .invalidArgument: .invalidArgument
        default: .pluginFailed
        }
    }

    /// A `ProximaError` for `step` (the libnfc call) failing with this status on the device `connstring`.
    func proximaError(step: String, connstring: String, reader: ReaderID?) -> ProximaError {
        ProximaError(errorCode, "\(step) failed with \(self) on libnfc device '\(connstring)'", reader: reader)
    }
}
