/// A data object list (DOL, EMV Book 3 §5.4): tags and lengths, without values, by which a card asks the terminal
/// for data in a command (PDOL for GET PROCESSING OPTIONS, CDOL1/CDOL2 for GENERATE AC, DDOL, TDOL).
///
/// The terminal answers with the values alone, concatenated in list order and each sized exactly as requested:
/// see ``fill(with:formats:)``.
public struct DataObjectList: Hashable, Sendable, CustomStringConvertible {
    /// One requested data object.
    public struct Entry: Hashable, Sendable, CustomStringConvertible {
        public var tag: TLVTag
        /// The number of value bytes the card expects.
        public var length: Int

        public init(tag: TLVTag, length: Int) {
            self.tag = tag
            self.length = length
        }

        public var description: String { "\(tag) \(length)" }
    }

    /// How a value is padded or truncated to the requested length (EMV Book 3 §4.3 data element formats).
    public enum Format: Hashable, Sendable {
        /// Numeric (`n`): BCD digits right-aligned; padded with leading `00`, truncated on the left.
        case numeric
        /// Compressed numeric (`cn`): BCD digits left-aligned; padded with trailing `FF`, truncated on the right.
        case compressedNumeric
        /// Any other format (`b`, `an`, `ans`): padded with trailing `00`, truncated on the right.
        case other
    }

    /// The requested objects, in order.
    public var entries: [Entry]

    /// The default bound on the total requested value length; DOL data always fits one short command.
    public static let defaultMaximumTotalLength = 65_536

    /// Formats of the terminal data objects cards commonly request (EMV Book 3 Annex A). Tags not listed are
    /// filled with the ``Format/other`` rule.
    public static let standardFormats: [TLVTag: Format] = [
        0x9F02: .numeric,  // Amount, Authorised (n 12)
        0x9F03: .numeric,  // Amount, Other (n 12)
        0x5F2A: .numeric,  // Transaction Currency Code (n 3)
        0x5F36: .numeric,  // Transaction Currency Exponent (n 1)
        0x9F1A: .numeric,  // Terminal Country Code (n 3)
        0x9A: .numeric,  // Transaction Date (n 6, YYMMDD)
        0x9C: .numeric,  // Transaction Type (n 2)
        0x9F21: .numeric,  // Transaction Time (n 6, HHMMSS)
        0x9F35: .numeric,  // Terminal Type (n 2)
        0x9F15: .numeric,  // Merchant Category Code (n 4)
        0x9F41: .numeric,  // Transaction Sequence Counter (n 4-8)
        0x9F39: .numeric,  // Point-of-Service Entry Mode (n 2)
        0x9F01: .numeric,  // Acquirer Identifier (n 6-11)
        0x9F3C: .numeric,  // Transaction Reference Currency Code (n 3)
        0x9F3D: .numeric,  // Transaction Reference Currency Exponent (n 1)
        0x5A: .compressedNumeric,  // Application PAN (cn up to 19)
    ]

    public init(entries: [Entry]) {
        self.entries = entries
    }

    /// Parses a DOL as a card sends it (the value of tag `9F38`, `8C`, `8D`, …): tag, length, tag, length, …
    ///
    /// Lengths are read as BER-TLV lengths (a single byte below `80` in practice); there is no padding in a DOL.
    ///
    /// - Parameters:
    ///   - bytes: the DOL.
    ///   - maximumTotalLength: the largest accepted sum of requested lengths, so that filling stays bounded.
    /// - Throws: `ProximaError.malformedData` naming the offset for a `00`/`FF` tag byte, a truncated tag or length,
    ///   an indefinite or over-long length field, or a total over `maximumTotalLength`; also for input over
    ///   ``TLV/defaultMaximumSize`` bytes.
    public init(bytes: [UInt8], maximumTotalLength: Int = defaultMaximumTotalLength) throws {
        guard bytes.count <= TLV.defaultMaximumSize else {
            throw ProximaError(
                .malformedData,
                "DOL of \(bytes.count) bytes exceeds the maximum of \(TLV.defaultMaximumSize)"
            )
        }
        var entries: [Entry] = []
        var total = 0
        var offset = 0
        while offset < bytes.count {
            guard !BER.isPadding(bytes[offset]) else {
                throw ProximaError(
                    .malformedData,
                    "DOL tag at offset \(offset) starts with \([bytes[offset]].hexString)"
                )
            }
            let (tag, lengthOffset) = try BER.readTag(bytes, at: offset, end: bytes.count, what: "DOL")
            let (length, next) = try BER.readLength(bytes, at: lengthOffset, end: bytes.count, what: "DOL")
            // Both are at most `maximumTotalLength` here, so the sum cannot overflow.
            guard length <= maximumTotalLength - total else {
                throw ProximaError(
                    .malformedData,
                    "DOL entry \(tag) at offset \(offset) asks for \(length) bytes; the list would exceed "
                        + "\(maximumTotalLength)"
                )
            }
            total += length
            entries.append(Entry(tag: tag, length: length))
            offset = next
        }
        self.entries = entries
    }

    /// The DOL's own encoding: each tag followed by its length.
    public var bytes: [UInt8] {
        entries.flatMap { $0.tag.bytes + BER.encodeLength($0.length) }
    }

    /// The length of the data ``fill(with:formats:)`` builds.
    public var totalLength: Int { entries.reduce(0) { $0 + max(0, $1.length) } }

    /// Builds the command data for this list by the rules of EMV Book 3 §5.4.
    ///
    /// Each entry contributes exactly its length:
    /// - a tag absent from `values`, or a constructed tag, gives zeros (rules a, b, e);
    /// - a longer value is truncated: on the left for ``Format/numeric``, on the right otherwise (rule c);
    /// - a shorter value is padded: leading `00` for ``Format/numeric``, trailing `FF` for
    ///   ``Format/compressedNumeric``, trailing `00` otherwise (rule d).
    ///
    /// - Parameters:
    ///   - values: the terminal's data objects by tag (amounts, dates, terminal data, unpredictable number).
    ///   - formats: the format of each tag; tags not present use ``Format/other``.
    /// - Returns: the concatenated values, ``totalLength`` bytes.
    public func fill(with values: [TLVTag: [UInt8]], formats: [TLVTag: Format] = standardFormats) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(totalLength)
        for entry in entries {
            guard entry.length > 0 else { continue }
            guard let value = values[entry.tag], !entry.tag.isConstructed else {
                out.append(contentsOf: repeatElement(0x00, count: entry.length))
                continue
            }
            out.append(contentsOf: Self.fit(value, to: entry.length, format: formats[entry.tag] ?? .other))
        }
        return out
    }

    /// `value` padded or truncated to exactly `length` bytes by `format`.
    static func fit(_ value: [UInt8], to length: Int, format: Format) -> [UInt8] {
        if value.count >= length {
            return format == .numeric ? Array(value.suffix(length)) : Array(value.prefix(length))
        }
        let padding = length - value.count
        switch format {
        case .numeric: return Array(repeating: 0x00, count: padding) + value
        case .compressedNumeric: return value + Array(repeating: 0xFF, count: padding)
        case .other: return value + Array(repeating: 0x00, count: padding)
        }
    }

    /// Tags and lengths, such as `9F66 4, 9F02 6`.
    public var description: String { entries.map(\.description).joined(separator: ", ") }
}
