/// One frame of the PN532's host link (PN532 User Manual §6.2.1; libnfc `pn53x_build_frame`,
/// `pn532_uart_receive`), as it travels over HSU (the UART).
///
/// ```
/// normal       00 00 FF LEN LCS TFI PD0 … PDn DCS 00          LEN = 1 + n + 1 (TFI and PD), LCS = -LEN
/// extended     00 00 FF FF FF LENm LENl LCS TFI PD0 … DCS 00  (more than 254 bytes of TFI and PD)
/// ACK          00 00 FF 00 FF 00
/// NACK         00 00 FF FF 00 00
/// error        00 00 FF 01 FF 7F 81 00                       (application-level error: syntax error)
/// ```
/// `DCS = -(TFI + ΣPD)`. TFI is `D4` from host to PN532 and `D5` back; a response's first PD byte is the command
/// code plus one.
public enum PN532Frame: Hashable, Sendable {
    /// The receiver took the frame and is working on it.
    case ack
    /// Please send the last frame again.
    case nack
    /// The PN532 could not make sense of the frame (its application-level error frame).
    case error
    /// An information frame: TFI followed by the packet data.
    case information([UInt8])

    /// Frame identifier of a frame from host to PN532.
    public static let hostToPN532: UInt8 = 0xD4
    /// Frame identifier of a frame from PN532 to host.
    public static let pn532ToHost: UInt8 = 0xD5
    /// The most TFI and PD bytes a normal frame carries; more need an extended frame.
    public static let maximumNormalLength = 254
    /// The most TFI and PD bytes the decoder accepts in an extended frame: the PN532's 265-byte buffer (TFI, a
    /// command code, a target number and 262 data bytes) with room to spare.
    public static let maximumExtendedLength = 300

    /// The frame on the wire, preamble and postamble included.
    public var bytes: [UInt8] {
        switch self {
        case .ack: return [0x00, 0x00, 0xFF, 0x00, 0xFF, 0x00]
        case .nack: return [0x00, 0x00, 0xFF, 0xFF, 0x00, 0x00]
        case .error: return [0x00, 0x00, 0xFF, 0x01, 0xFF, 0x7F, 0x81, 0x00]
        case .information(let payload): return Self.encode(payload)
        }
    }

    /// An information frame around `payload` (TFI and PD), normal or extended by its length.
    static func encode(_ payload: [UInt8]) -> [UInt8] {
        var frame: [UInt8] = [0x00, 0x00, 0xFF]
        frame.reserveCapacity(payload.count + 11)
        if payload.count <= maximumNormalLength {
            let length = UInt8(payload.count)
            frame.append(length)
            frame.append(0 &- length)
        } else {
            let high = UInt8(truncatingIfNeeded: payload.count >> 8)
            let low = UInt8(truncatingIfNeeded: payload.count)
            frame.append(contentsOf: [0xFF, 0xFF, high, low, 0 &- (high &+ low)])
        }
        var sum: UInt8 = 0
        for byte in payload { sum &+= byte }
        frame.append(contentsOf: payload)
        frame.append(0 &- sum)
        frame.append(0x00)
        return frame
    }
}

/// Splits a byte stream from a PN532 host link into frames, whatever arrives.
///
/// Bytes are fed with ``append(_:)`` in any chunks; ``next()`` returns each complete frame, or a description of
/// bytes it had to throw away (a bad length or data checksum, an oversized extended frame), and `nil` when it
/// needs more bytes. Anything before a start code `00 FF` is skipped: preamble zeros, the HSU wake-up bytes `55`,
/// the postamble of the frame before, line noise. Total and bounded: no input traps, and at most
/// ``maximumBufferedBytes`` are kept while waiting for the rest of a frame.
public struct PN532FrameDecoder: Sendable {
    /// What ``next()`` found.
    public enum Item: Hashable, Sendable {
        case frame(PN532Frame)
        /// Bytes dropped because they do not form a frame; the text says why (never the bytes).
        case discarded(String)
    }

    /// Longest extended frame plus its header and trailer.
    public static let maximumBufferedBytes = PN532Frame.maximumExtendedLength + 16

    private var buffer: [UInt8] = []
    private var start = 0

    public init() {}

    /// Adds bytes that arrived.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Bytes held that do not yet form a frame.
    public var pendingCount: Int { buffer.count - start }

    /// The next frame, or what was thrown away, or `nil` when more bytes are needed.
    public mutating func next() -> Item? {
        while true {
            // Find a start code.
            var index = start
            while index + 1 < buffer.count, !(buffer[index] == 0x00 && buffer[index + 1] == 0xFF) { index += 1 }
            guard index + 1 < buffer.count else {
                // Keep a trailing 00, it may begin a start code.
                start = buffer.last == 0x00 ? buffer.count - 1 : buffer.count
                return nil
            }
            start = index
            let header = index + 2
            guard header + 1 < buffer.count else { return nil }
            let length = buffer[header]
            let lengthChecksum = buffer[header + 1]
            if length == 0x00 && lengthChecksum == 0xFF { return consume(through: header + 1, .ack) }
            if length == 0xFF && lengthChecksum == 0x00 { return consume(through: header + 1, .nack) }
            let payloadStart: Int
            let payloadLength: Int
            if length == 0xFF && lengthChecksum == 0xFF {
                guard header + 4 < buffer.count else { return nil }
                let high = buffer[header + 2]
                let low = buffer[header + 3]
                guard high &+ low &+ buffer[header + 4] == 0 else {
                    return discard(through: header + 1, "extended frame with a bad length checksum")
                }
                payloadLength = Int(high) << 8 | Int(low)
                guard payloadLength > 0, payloadLength <= PN532Frame.maximumExtendedLength else {
                    return discard(
                        through: header + 1,
                        "extended frame of \(payloadLength) bytes (at most \(PN532Frame.maximumExtendedLength))"
                    )
                }
                payloadStart = header + 5
            } else {
                guard length &+ lengthChecksum == 0, length > 0 else {
                    return discard(through: header + 1, "frame with a bad length checksum")
                }
                payloadLength = Int(length)
                payloadStart = header + 2
            }
            let checksumIndex = payloadStart + payloadLength
            guard checksumIndex < buffer.count else { return nil }
            var sum: UInt8 = buffer[checksumIndex]
            for byte in buffer[payloadStart..<checksumIndex] { sum &+= byte }
            guard sum == 0 else { return discard(through: checksumIndex, "frame with a bad data checksum") }
            let payload = Array(buffer[payloadStart..<checksumIndex])
            if payload == [0x7F] { return consume(through: checksumIndex, .error) }
            return consume(through: checksumIndex, .information(payload))
        }
    }

    private mutating func consume(through last: Int, _ frame: PN532Frame) -> Item {
        start = last + 1
        return .frame(frame)
    }

    private mutating func discard(through last: Int, _ reason: String) -> Item {
        start = last + 1
        return .discarded(reason)
    }
}
