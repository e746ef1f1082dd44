public import ProximaCore

/// The error the EMV payment capability throws when a card's answers cannot be used, or when the request itself
/// cannot be encoded into EMV data.
///
/// Like ``ProximaCore/ProximaError``, it carries a stable ``code`` that callers compare and a human ``reason``; it
/// adds the APDU ``step`` that failed (`SELECT PPSE`, `GET PROCESSING OPTIONS`, `READ RECORD SFI 2 record 3`,
/// `GENERATE AC`). Messages name tags, offsets and lengths, never values: no PAN or track data is ever part of one.
///
/// Transport failures (card removed, reader vanished, time-out, cancellation) are not wrapped: they stay
/// `ProximaError`s with their own codes, their reason prefixed with the step.
public struct PaymentError: Error, Hashable, Sendable, CustomStringConvertible {
    public let code: Code
    /// The APDU exchange or processing step that failed, such as `READ RECORD SFI 2 record 3`.
    public let step: String
    /// What was wrong, e.g. `TLV length at offset 12 exceeds data (needs 40, has 7)`.
    public let reason: String
    /// The reader of the tap, when known.
    public let reader: ReaderID?

    public init(_ code: Code, step: String, _ reason: String, reader: ReaderID? = nil) {
        self.code = code
        self.step = step
        self.reason = reason
        self.reader = reader
    }

    /// A copy that names `reader`, keeping one already set.
    public func at(reader: ReaderID) -> PaymentError {
        PaymentError(code, step: step, reason, reader: self.reader ?? reader)
    }

    public var description: String {
        let location = reader.map { " [reader \($0)]" } ?? ""
        return "\(code)\(location): \(step): \(reason)"
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// A stable error code. Compare codes, never reasons.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String, Hashable, Sendable {
            case cardReadFailed, invalidTransaction
        }
        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }
        public var description: String { backing.rawValue }

        /// The card answered something that cannot be used: a malformed or truncated answer, a length that lies,
        /// a missing mandatory data object, an unexpected status word, an invalid AFL. Tap again or use another
        /// card; the ``PaymentError/step`` and ``PaymentError/reason`` say where.
        public static let cardReadFailed = Code(.cardReadFailed)
        /// The transaction cannot be expressed in EMV data: an amount beyond 12 digits or negative, a currency or
        /// country code beyond 3 digits, an impossible date. The API layer validates first; this is the backstop.
        public static let invalidTransaction = Code(.invalidTransaction)
    }
}

extension PaymentError: ClassifiedError {
    /// `malformedData` for an unusable card answer, `invalidArgument` for a transaction EMV cannot express.
    public var kernelCode: ProximaError.Code { code == .cardReadFailed ? .malformedData : .invalidArgument }
}

/// Card-answer parsing: each failure names the step, as `PaymentError.cardReadFailed`.
enum CardAnswer {
    /// Decodes BER-TLV from a card answer, turning a decoding error into `cardReadFailed` at `step`.
    static func decodeAll(_ bytes: [UInt8], step: String) throws -> [TLV] {
        do {
            return try TLV.decodeAll(bytes, maximumDepth: 8, maximumSize: 4096)
        } catch let error as ProximaError {
            throw PaymentError(.cardReadFailed, step: step, error.reason)
        }
    }

    /// Decodes exactly one template with one of `tags` from a card answer (padding around it allowed).
    static func template(_ bytes: [UInt8], step: String, expecting tags: [TLVTag], what: String) throws -> TLV {
        let objects = try decodeAll(bytes, step: step)
        guard let first = objects.first else {
            throw PaymentError(.cardReadFailed, step: step, "\(what) is empty (\(bytes.count) bytes of padding)")
        }
        guard tags.contains(first.tag) else {
            let expected = tags.map(\.description).joined(separator: " or ")
            throw PaymentError(
                .cardReadFailed,
                step: step,
                "\(what): template \(expected) expected, found \(first.tag)"
            )
        }
        guard objects.count == 1 else {
            throw PaymentError(
                .cardReadFailed,
                step: step,
                "\(what): \(objects.count - 1) data objects follow the \(first.tag) template"
            )
        }
        return first
    }

    static func failure(_ step: String, _ reason: String) -> PaymentError {
        PaymentError(.cardReadFailed, step: step, reason)
    }
}

/// Binary-coded decimal of EMV numeric (`n`) data elements (EMV Book 3 §4.3).
enum BCD {
    /// `value` as `digits` decimal digits, two per byte, right-aligned with leading zeros; `nil` when it is
    /// negative or needs more digits. `digits` is even.
    static func numeric(_ value: Int64, digits: Int) -> [UInt8]? {
        guard value >= 0 else { return nil }
        var remaining = value
        var out = [UInt8](repeating: 0, count: digits / 2)
        for index in stride(from: out.count - 1, through: 0, by: -1) {
            let low = UInt8(remaining % 10)
            remaining /= 10
            let high = UInt8(remaining % 10)
            remaining /= 10
            out[index] = high << 4 | low
        }
        return remaining == 0 ? out : nil
    }

    /// The decimal digits of BCD bytes, or `nil` if a nibble is above 9.
    static func digits(_ bytes: [UInt8]) -> String? {
        var text = ""
        for byte in bytes {
            for nibble in [byte >> 4, byte & 0x0F] {
                guard nibble <= 9 else { return nil }
                text.append(Character(Unicode.Scalar(0x30 + nibble)))
            }
        }
        return text
    }

    /// The value of a BCD byte (`0x28` → 28), or `nil` if a nibble is above 9.
    static func value(_ byte: UInt8) -> Int? {
        let high = byte >> 4
        let low = byte & 0x0F
        guard high <= 9, low <= 9 else { return nil }
        return Int(high) * 10 + Int(low)
    }
}
