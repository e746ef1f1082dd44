/// Base64 (RFC 4648 §4) and base64url (§5) codecs: total, strict decoders for bytes from outside.
public enum Base64 {
    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Standard base64 with `=` padding, as PEM uses.
    public static func encode(_ bytes: [UInt8]) -> String {
        encode(bytes, alphabet: standardAlphabet, padded: true)
    }

    /// base64url without padding, as JWS (RFC 7515 §2) uses.
    public static func urlEncode(_ bytes: [UInt8]) -> String {
        encode(bytes, alphabet: urlAlphabet, padded: false)
    }

    /// Decodes base64url without padding (RFC 7515 §2), strictly: only `A–Z a–z 0–9 - _`, no `=`, no whitespace,
    /// no length of 1 modulo 4, and unused trailing bits zero, so each byte string has exactly one encoding.
    /// - Returns: `nil` when `text` is not such an encoding.
    public static func urlDecode(_ text: some StringProtocol) -> [UInt8]? {
        decode(Array(text.utf8), url: true)
    }

    /// Decodes standard base64 with optional `=` padding, strictly (same rules as ``urlDecode(_:)`` otherwise).
    /// - Returns: `nil` when `text` is not such an encoding.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var characters = Array(text.utf8)
        if characters.count % 4 == 0 {
            var padding = 0
            while padding < 2, characters.last == UInt8(ascii: "=") {
                characters.removeLast()
                padding += 1
            }
        }
        return decode(characters, url: false)
    }

    private static func encode(_ bytes: [UInt8], alphabet: [UInt8], padded: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [
                alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)],
            ]
            index += 3
        }
        let rest = bytes.count - index
        if rest == 1 {
            let n = UInt32(bytes[index]) << 16
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)]]
            if padded { out += Array("==".utf8) }
        } else if rest == 2 {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)]]
            if padded { out += Array("=".utf8) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func value(of character: UInt8, url: Bool) -> UInt32? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): UInt32(character - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): UInt32(character - UInt8(ascii: "a")) + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(character - UInt8(ascii: "0")) + 52
        case UInt8(ascii: "-") where url, UInt8(ascii: "+") where !url: 62
        case UInt8(ascii: "_") where url, UInt8(ascii: "/") where !url: 63
        default: nil
        }
    }

    private static func decode(_ characters: [UInt8], url: Bool) -> [UInt8]? {
        guard characters.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(characters.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in characters {
            guard let v = value(of: character, url: url) else { return nil }
            accumulator = accumulator << 6 | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Leftover bits (2 or 4) must be zero, or two strings would decode to the same bytes.
        guard accumulator == 0 else { return nil }
        return out
    }
}
