public import ProximaCore

/// The framing of the driver protocol (`Docs/driver-protocol.md`): each message is a 4-byte big-endian length
/// followed by that many bytes of UTF-8 JSON text holding one object.
///
/// The decoder is incremental and total: it takes bytes as a pipe delivers them, in any split, and returns whole
/// frames; a length above the cap or a zero length is an error at once, before any of the payload is buffered, so a
/// hostile length cannot make the kernel allocate.
public enum DriverFrame {
    /// The length prefix, in bytes.
    public static let headerLength = 4
    /// The default cap on a frame's payload: room for an extended-length APDU (65 544 bytes) as hex, with margin.
    public static let defaultMaximumPayload = 1 << 20

    /// The frame carrying `message` as compact JSON.
    public static func encode(_ message: JSONValue) -> [UInt8] {
        encode(payload: Array(message.jsonText.utf8))
    }

    /// The frame carrying `payload` as it is.
    public static func encode(payload: [UInt8]) -> [UInt8] {
        let length = UInt32(truncatingIfNeeded: payload.count)
        var frame: [UInt8] = []
        frame.reserveCapacity(headerLength + payload.count)
        frame.append(UInt8(truncatingIfNeeded: length >> 24))
        frame.append(UInt8(truncatingIfNeeded: length >> 16))
        frame.append(UInt8(truncatingIfNeeded: length >> 8))
        frame.append(UInt8(truncatingIfNeeded: length))
        frame.append(contentsOf: payload)
        return frame
    }

    /// Writes a frame's JSON text straight into the frame, for the messages sent for every APDU (`transmit` and its
    /// answer): the caller appends the same text ``encode(_:)`` would write for the same members in the same order
    /// (literals that need no escaping, decimal integers, upper-case hex, strings already encoded as JSON), without
    /// building a ``JSONValue``, a `String` and two copies of it.
    package struct Writer {
        private var bytes: [UInt8]

        package init(capacity: Int) {
            bytes = [0, 0, 0, 0]
            bytes.reserveCapacity(DriverFrame.headerLength + capacity)
        }

        /// ASCII text copied as it is: only literals that need no JSON escaping.
        package mutating func append(_ text: StaticString) {
            text.withUTF8Buffer { bytes.append(contentsOf: $0) }
        }

        /// Bytes already encoded as JSON (a member's quoted string, computed once).
        package mutating func append(encoded: [UInt8]) { bytes.append(contentsOf: encoded) }

        /// `value` in decimal, as ``JSONValue/jsonText`` writes it (a small string: no allocation).
        package mutating func append(integer value: Int64) { bytes.append(contentsOf: String(value).utf8) }

        /// `data` as upper-case hex digits, as `hexString` writes it.
        package mutating func append(hex data: [UInt8]) {
            for byte in data {
                bytes.append(Self.hexDigit(byte >> 4))
                bytes.append(Self.hexDigit(byte & 0x0F))
            }
        }

        @inline(__always) private static func hexDigit(_ nibble: UInt8) -> UInt8 {
            nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") - 10 + nibble
        }

        /// The frame: the length prefix filled in.
        package consuming func finish() -> [UInt8] {
            let length = UInt32(truncatingIfNeeded: bytes.count - DriverFrame.headerLength)
            bytes[0] = UInt8(truncatingIfNeeded: length >> 24)
            bytes[1] = UInt8(truncatingIfNeeded: length >> 16)
            bytes[2] = UInt8(truncatingIfNeeded: length >> 8)
            bytes[3] = UInt8(truncatingIfNeeded: length)
            return bytes
        }
    }

    /// Why a byte stream is not a valid sequence of frames.
    public enum DecodingError: Error, Hashable, Sendable, CustomStringConvertible {
        /// A length prefix announced more than the cap allows.
        case oversized(length: UInt32, maximum: Int)
        /// A length prefix of zero: no JSON text fits in it.
        case empty
        /// The stream ended inside a frame (`buffered` bytes of it had arrived).
        case truncated(buffered: Int)

        public var description: String {
            switch self {
            case .oversized(let length, let maximum):
                "a frame announces \(length) bytes, more than the \(maximum)-byte limit"
            case .empty: "a frame announces 0 bytes"
            case .truncated(let buffered): "the stream ended inside a frame (\(buffered) bytes of it received)"
            }
        }
    }

    /// Splits a byte stream into frame payloads.
    ///
    /// Feed it with ``append(_:)``, take payloads with ``next()`` until it returns `nil`, and call ``finish()`` at
    /// the end of the stream. After an error every later call throws the same error.
    public struct Decoder: Sendable {
        public let maximumPayload: Int
        private var buffer: [UInt8] = []
        /// Where the unread bytes of ``buffer`` start; compacted when a frame is taken.
        private var start = 0
        private var failure: DecodingError?

        public init(maximumPayload: Int = DriverFrame.defaultMaximumPayload) {
            self.maximumPayload = max(1, maximumPayload)
        }

        /// Bytes received but not yet returned as a payload.
        public var bufferedCount: Int { buffer.count - start }

        public mutating func append(_ bytes: some Collection<UInt8>) {
            buffer.append(contentsOf: bytes)
        }

        /// The next complete payload, or `nil` when more bytes are needed.
        /// - Throws: ``DecodingError`` for an oversized or empty frame.
        public mutating func next() throws(DecodingError) -> [UInt8]? {
            if let failure { throw failure }
            guard bufferedCount >= DriverFrame.headerLength else {
                compact()
                return nil
            }
            let length =
                UInt32(buffer[start]) << 24 | UInt32(buffer[start + 1]) << 16 | UInt32(buffer[start + 2]) << 8
                | UInt32(buffer[start + 3])
            guard length > 0 else { return try fail(.empty) }
            guard UInt64(length) <= UInt64(maximumPayload) else {
                return try fail(.oversized(length: length, maximum: maximumPayload))
            }
            let total = DriverFrame.headerLength + Int(length)
            guard bufferedCount >= total else {
                compact()
                return nil
            }
            let payload = Array(buffer[(start + DriverFrame.headerLength)..<(start + total)])
            start += total
            if start == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                start = 0
            }
            return payload
        }

        /// Checks that the stream did not end inside a frame.
        /// - Throws: ``DecodingError/truncated(buffered:)`` when it did.
        public mutating func finish() throws(DecodingError) {
            if let failure { throw failure }
            guard bufferedCount == 0 else {
                let error = DecodingError.truncated(buffered: bufferedCount)
                failure = error
                throw error
            }
        }

        private mutating func fail<T>(_ error: DecodingError) throws(DecodingError) -> T {
            failure = error
            buffer = []
            start = 0
            throw error
        }

        private mutating func compact() {
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
        }
    }
}
