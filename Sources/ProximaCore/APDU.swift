/// A command APDU (ISO/IEC 7816-4 §5.1): header CLA INS P1 P2, optional data field, optional expected length.
///
/// The four cases follow from `data` and `expectedLength`: case 1 (neither), case 2 (Le only), case 3 (data
/// only), case 4 (both). Short encoding is used when `data` is at most 255 bytes and Le at most 256; otherwise
/// the extended encoding (a `00` byte then two-byte Lc / Le). `expectedLength` of 256 (short) or 65,536
/// (extended) is encoded as `00` / `0000`, meaning "as many as available".
public struct CommandAPDU: Hashable, Sendable, CustomStringConvertible {
    public var cla: UInt8
    public var ins: UInt8
    public var p1: UInt8
    public var p2: UInt8
    public var data: [UInt8]
    /// Ne, the maximum number of response bytes expected; `nil` for none (cases 1 and 3).
    public var expectedLength: Int?

    /// The largest data field and Ne of each encoding.
    public static let maxShortData = 255
    public static let maxShortExpected = 256
    public static let maxExtendedData = 65_535
    public static let maxExtendedExpected = 65_536

    /// - Throws: `ProximaError.invalidArgument` when `data` or `expectedLength` cannot be encoded at all.
    public init(cla: UInt8, ins: UInt8, p1: UInt8, p2: UInt8, data: [UInt8] = [], expectedLength: Int? = nil) throws {
        guard data.count <= Self.maxExtendedData else {
            throw ProximaError(.invalidArgument, "APDU data of \(data.count) bytes exceeds 65,535")
        }
        if let ne = expectedLength, ne < 1 || ne > Self.maxExtendedExpected {
            throw ProximaError(.invalidArgument, "APDU Le \(ne) is outside 1…65,536")
        }
        self.cla = cla
        self.ins = ins
        self.p1 = p1
        self.p2 = p2
        self.data = data
        self.expectedLength = expectedLength
    }

    /// Whether the encoding needs extended length fields.
    public var isExtended: Bool {
        data.count > Self.maxShortData || (expectedLength ?? 0) > Self.maxShortExpected
    }

    /// ISO/IEC 7816-4 case number, 1 to 4.
    public var isoCase: Int {
        switch (data.isEmpty, expectedLength == nil) {
        case (true, true): 1
        case (true, false): 2
        case (false, true): 3
        case (false, false): 4
        }
    }

    /// The bytes sent to the card.
    public var bytes: [UInt8] {
        var out: [UInt8] = [cla, ins, p1, p2]
        out.reserveCapacity(4 + 3 + data.count + 3)
        if isExtended {
            out.append(0x00)
            if !data.isEmpty {
                out.append(UInt8(data.count >> 8))
                out.append(UInt8(data.count & 0xFF))
                out.append(contentsOf: data)
            }
            if let ne = expectedLength {
                let le = ne == Self.maxExtendedExpected ? 0 : ne
                out.append(UInt8(le >> 8))
                out.append(UInt8(le & 0xFF))
            }
        } else {
            if !data.isEmpty {
                out.append(UInt8(data.count))
                out.append(contentsOf: data)
            }
            if let ne = expectedLength {
                out.append(ne == Self.maxShortExpected ? 0 : UInt8(ne))
            }
        }
        return out
    }

    /// Parses a command APDU from bytes (used by virtual cards and the vpcd/PN532 adapters).
    ///
    /// - Throws: `ProximaError.malformedData` naming the inconsistency when the bytes are no valid APDU.
    public init(bytes: [UInt8]) throws {
        let n = bytes.count
        guard n >= 4 else {
            throw ProximaError(.malformedData, "command APDU of \(n) bytes is shorter than its header")
        }
        let header = (bytes[0], bytes[1], bytes[2], bytes[3])
        var data: [UInt8] = []
        var ne: Int? = nil
        if n == 4 {
            // case 1
        } else if n == 5 {
            ne = bytes[4] == 0 ? 256 : Int(bytes[4])
        } else if bytes[4] != 0 {
            let lc = Int(bytes[4])
            if n == 5 + lc {
                data = Array(bytes[5..<n])
            } else if n == 6 + lc {
                data = Array(bytes[5..<(5 + lc)])
                ne = bytes[n - 1] == 0 ? 256 : Int(bytes[n - 1])
            } else {
                throw ProximaError(.malformedData, "command APDU Lc \(lc) does not match its \(n) bytes")
            }
        } else {
            // Extended: 00 then two bytes.
            guard n >= 7 else { throw ProximaError(.malformedData, "extended command APDU of \(n) bytes is truncated") }
            let first = Int(bytes[5]) << 8 | Int(bytes[6])
            if n == 7 {
                ne = first == 0 ? 65_536 : first
            } else {
                let lc = first
                guard lc > 0 else { throw ProximaError(.malformedData, "extended command APDU has Lc 0") }
                if n == 7 + lc {
                    data = Array(bytes[7..<n])
                } else if n == 9 + lc {
                    data = Array(bytes[7..<(7 + lc)])
                    let le = Int(bytes[n - 2]) << 8 | Int(bytes[n - 1])
                    ne = le == 0 ? 65_536 : le
                } else {
                    throw ProximaError(.malformedData, "extended command APDU Lc \(lc) does not match its \(n) bytes")
                }
            }
        }
        try self.init(cla: header.0, ins: header.1, p1: header.2, p2: header.3, data: data, expectedLength: ne)
    }

    /// Header and lengths only: data fields may carry card data, so they are never printed.
    public var description: String {
        let header = [cla, ins, p1, p2].hexString
        let le = expectedLength.map { " Le=\($0)" } ?? ""
        return "\(header) Lc=\(data.count)\(le)"
    }
}

/// A status word SW1 SW2 (ISO/IEC 7816-4 §5.6).
public struct StatusWord: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ sw1: UInt8, _ sw2: UInt8) { rawValue = UInt16(sw1) << 8 | UInt16(sw2) }
    public var sw1: UInt8 { UInt8(rawValue >> 8) }
    public var sw2: UInt8 { UInt8(rawValue & 0xFF) }

    public static let success = StatusWord(rawValue: 0x9000)
    public static let wrongLength = StatusWord(rawValue: 0x6700)
    public static let securityNotSatisfied = StatusWord(rawValue: 0x6982)
    public static let conditionsNotSatisfied = StatusWord(rawValue: 0x6985)
    public static let functionNotSupported = StatusWord(rawValue: 0x6A81)
    public static let fileNotFound = StatusWord(rawValue: 0x6A82)
    public static let recordNotFound = StatusWord(rawValue: 0x6A83)
    public static let wrongParameters = StatusWord(rawValue: 0x6B00)
    public static let instructionNotSupported = StatusWord(rawValue: 0x6D00)
    public static let classNotSupported = StatusWord(rawValue: 0x6E00)
    public static let selectedFileInvalidated = StatusWord(rawValue: 0x6283)

    /// 9000, or 61xx (more data waiting, which the channel wrapper collects with GET RESPONSE).
    public var isSuccess: Bool { rawValue == 0x9000 }
    /// 61xx: SW2 more bytes are available with GET RESPONSE (00 means 256 or more).
    public var bytesRemaining: Int? { sw1 == 0x61 ? (sw2 == 0 ? 256 : Int(sw2)) : nil }
    /// 6Cxx: wrong Le; re-issue the command with Le = SW2 (00 means 256).
    public var correctLength: Int? { sw1 == 0x6C ? (sw2 == 0 ? 256 : Int(sw2)) : nil }
    /// 62xx / 63xx: processing completed with a warning.
    public var isWarning: Bool { sw1 == 0x62 || sw1 == 0x63 }

    public var description: String { [sw1, sw2].hexString }
}

/// A response APDU: data field then SW1 SW2.
public struct ResponseAPDU: Hashable, Sendable, CustomStringConvertible {
    public var data: [UInt8]
    public var status: StatusWord

    public init(data: [UInt8] = [], status: StatusWord) {
        self.data = data
        self.status = status
    }

    /// - Throws: `ProximaError.malformedData` when fewer than two bytes arrived.
    public init(bytes: [UInt8]) throws {
        guard bytes.count >= 2 else {
            throw ProximaError(.malformedData, "response APDU of \(bytes.count) bytes has no status word")
        }
        data = Array(bytes[..<(bytes.count - 2)])
        status = StatusWord(bytes[bytes.count - 2], bytes[bytes.count - 1])
    }

    public var bytes: [UInt8] { data + [status.sw1, status.sw2] }

    /// Length and status only: response data may carry card data, so it is never printed.
    public var description: String { "\(data.count) bytes, SW \(status)" }
}

extension Sequence where Element == UInt8 {
    /// Upper-case hex without separators, e.g. `9000`.
    public var hexString: String { Array(self).hexString }
}

extension Array where Element == UInt8 {
    /// Upper-case hex without separators, e.g. `9000`: written straight into the string's storage (card data is
    /// formatted on every read, and the generic `Sequence` path cost more than the HPKE seal).
    public var hexString: String { withUnsafeBufferPointer { String(hexOf: $0) } }

    /// Appends the upper-case hex digits of `value`, two per byte.
    public mutating func appendHex(_ value: [UInt8]) {
        let start = count
        append(contentsOf: repeatElement(0, count: 2 * value.count))
        withUnsafeMutableBufferPointer { out in value.withUnsafeBufferPointer { writeHex($0, into: out, at: start) } }
    }
}

extension ArraySlice where Element == UInt8 {
    /// Upper-case hex without separators, e.g. `9000`.
    public var hexString: String { withUnsafeBufferPointer { String(hexOf: $0) } }
}

extension String {
    /// Upper-case hex of `bytes`, written straight into the string's storage.
    fileprivate init(hexOf bytes: UnsafeBufferPointer<UInt8>) {
        self.init(unsafeUninitializedCapacity: 2 * bytes.count) { out in
            writeHex(bytes, into: out, at: 0)
            return 2 * bytes.count
        }
    }
}

/// Writes the two upper-case hex digits of each of `bytes` into `out` from `start` (room checked by the caller).
private func writeHex(_ bytes: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>, at start: Int) {
    for (i, byte) in bytes.enumerated() {
        out[start + 2 * i] = hexDigit(byte >> 4)
        out[start + 2 * i + 1] = hexDigit(byte & 0x0F)
    }
}

/// The ASCII code of the upper-case hexadecimal digit of a nibble (0…15).
@inline(__always) private func hexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") - 10 + nibble
}

extension Array where Element == UInt8 {
    /// Parses hex (upper or lower case; spaces and colons ignored). Returns `nil` on any other character or an
    /// odd digit count.
    public init?(hex: String) {
        var out: [UInt8] = []
        out.reserveCapacity(hex.utf8.count / 2)
        var high: UInt8? = nil
        for c in hex.utf8 {
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): v = c - UInt8(ascii: "A") + 10
            case UInt8(ascii: " "), UInt8(ascii: ":"): continue
            default: return nil
            }
            if let h = high {
                out.append(h << 4 | v)
                high = nil
            } else {
                high = v
            }
        }
        guard high == nil else { return nil }
        self = out
    }
}
