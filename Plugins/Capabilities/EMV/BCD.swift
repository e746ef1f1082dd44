internal import ProximaCore

/// Binary-coded decimal of EMV numeric (`n`) data elements (EMV Book 3 §4.3).
package enum BCD {
    /// `value` as `digits` decimal digits, two per byte, right-aligned with leading zeros; `nil` when it is
    /// negative or needs more digits. `digits` is even.
    package static func numeric(_ value: Int64, digits: Int) -> [UInt8]? {
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
    package static func digits(_ bytes: [UInt8]) -> String? {
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
    package static func value(_ byte: UInt8) -> Int? {
        let high = byte >> 4
        let low = byte & 0x0F
        guard high <= 9, low <= 9 else { return nil }
        return Int(high) * 10 + Int(low)
    }
}
