/// The deterministic CBOR encoder (RFC 8949 §4.2.1, "core deterministic encoding").
///
/// Heads use the shortest argument; strings, arrays and maps have definite lengths; map entries are sorted by the
/// bytewise lexicographic order of their encoded keys; floats take the shortest of half, single and double
/// precision that keeps the value (NaN becomes `F97E00`). Two equal values therefore always encode to the same
/// bytes, which is what Sig_structure, MAC_structure and the ISO/IEC 18013-5 transcripts need.
public enum CBOREncoder {
    /// The deterministic encoding of `value`.
    public static func encode(_ value: CBORValue) -> [UInt8] {
        var out: [UInt8] = []
        append(value, to: &out)
        return out
    }

    /// Appends the deterministic encoding of `value` to `out`.
    public static func append(_ value: CBORValue, to out: inout [UInt8]) {
        switch value {
        case .unsigned(let n): appendHead(0, n, to: &out)
        case .negative(let n): appendHead(1, n, to: &out)
        case .byteString(let bytes):
            appendHead(2, UInt64(bytes.count), to: &out)
            out += bytes
        case .textString(let text):
            let utf8 = Array(text.utf8)
            appendHead(3, UInt64(utf8.count), to: &out)
            out += utf8
        case .array(let items):
            appendHead(4, UInt64(items.count), to: &out)
            for item in items { append(item, to: &out) }
        case .map(let entries):
            appendHead(5, UInt64(entries.count), to: &out)
            let encoded = entries.map { (key: encode($0.key), value: $0.value) }
            for entry in encoded.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
                out += entry.key
                append(entry.value, to: &out)
            }
        case .tagged(let tag, let content):
            appendHead(6, tag, to: &out)
            append(content, to: &out)
        case .boolean(let flag): out.append(flag ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        case .undefined: out.append(0xF7)
        case .simple(let simple):
            if simple < 24 {
                out.append(0xE0 | simple)
            } else {
                out += [0xF8, simple]
            }
        case .float(let double): appendFloat(double, to: &out)
        }
    }

    /// A head (RFC 8949 §3) with the shortest argument encoding.
    public static func appendHead(_ major: UInt8, _ argument: UInt64, to out: inout [UInt8]) {
        let type = major << 5
        switch argument {
        case 0..<24: out.append(type | UInt8(argument))
        case 24...0xFF: out += [type | 24, UInt8(argument)]
        case 0x100...0xFFFF: out += [type | 25] + bigEndian(argument, width: 2)
        case 0x1_0000...0xFFFF_FFFF: out += [type | 26] + bigEndian(argument, width: 4)
        default: out += [type | 27] + bigEndian(argument, width: 8)
        }
    }

    private static func bigEndian(_ value: UInt64, width: Int) -> [UInt8] {
        (0..<width).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * (width - 1 - $0))) }
    }

    private static func appendFloat(_ value: Double, to out: inout [UInt8]) {
        if let half = Float16Bits.exactBits(value) {
            out += [0xF9] + bigEndian(UInt64(half), width: 2)
        } else if let single = Float(exactly: value) {
            out += [0xFA] + bigEndian(UInt64(single.bitPattern), width: 4)
        } else {
            out += [0xFB] + bigEndian(value.bitPattern, width: 8)
        }
    }
}

extension CBORValue {
    /// The deterministic encoding of this value (``CBOREncoder/encode(_:)``).
    public var encoded: [UInt8] { CBOREncoder.encode(self) }
}
