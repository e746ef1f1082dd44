internal import CLibUSB
public import ProximaCore

/// A libusb result code (`LIBUSB_SUCCESS`, `LIBUSB_ERROR_*`), with a named member per code, as swift-system's
/// `Errno` does for `errno`. ``description`` reads `LIBUSB_ERROR_BUSY (Resource busy)`.
public struct LibUSBStatus: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let success = LibUSBStatus(rawValue: 0)
    public static let io = LibUSBStatus(rawValue: -1)
    public static let invalidParameter = LibUSBStatus(rawValue: -2)
    public static let access = LibUSBStatus(rawValue: -3)
    public static let noDevice = LibUSBStatus(rawValue: -4)
    public static let notFound = LibUSBStatus(rawValue: -5)
    public static let busy = LibUSBStatus(rawValue: -6)
    public static let timeout = LibUSBStatus(rawValue: -7)
    public static let overflow = LibUSBStatus(rawValue: -8)
    public static let pipe = LibUSBStatus(rawValue: -9)
    public static let interrupted = LibUSBStatus(rawValue: -10)
    public static let noMemory = LibUSBStatus(rawValue: -11)
    public static let notSupported = LibUSBStatus(rawValue: -12)
    public static let other = LibUSBStatus(rawValue: -99)

    public var description: String {
        let name = String(cString: libusb_error_name(rawValue))
        let text = String(cString: libusb_strerror(rawValue))
        return "\(name) (\(text))"
    }

    /// The kernel's code for a libusb call that failed with this status.
    public var errorCode: ProximaError.Code {
        switch self {
        case .busy, .access: .readerBusy
        case .noDevice, .notFound: .readerVanished
        case .timeout: .cardTimeout
        case .notSupported: .unsupported
        default: .transmitFailed
        }
    }
}
