/// Random (version 4) UUIDs as the lowercase text Proxima puts in envelopes, stores and sessions.
///
/// Foundation's `UUID()` on Linux opens, reads and closes `/dev/urandom` on every call (three system calls per
/// identifier, one identifier per payment read); this takes its 122 random bits from `SystemRandomNumberGenerator`
/// (`getrandom(2)`), the same operating-system CSPRNG, and formats them without Foundation.
public enum RandomUUID {
    /// A new version 4 UUID (RFC 9562 §5.4) in its 36-character lowercase form,
    /// `xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx`.
    public static func lowercasedString() -> String {
        var generator = SystemRandomNumberGenerator()
        return lowercasedString(using: &generator)
    }

    /// ``lowercasedString()`` with the bits of `generator` (tests pass a seeded one).
    public static func lowercasedString<G: RandomNumberGenerator>(using generator: inout G) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        var high = generator.next() as UInt64
        var low = generator.next() as UInt64
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: high)
            bytes[index + 8] = UInt8(truncatingIfNeeded: low)
            high >>= 8
            low >>= 8
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40  // version 4
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // variant 10
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(lowercaseDigits[Int(byte >> 4)])
            text.append(lowercaseDigits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Lowercase, unlike `hexString` (which writes card data in uppercase).
    private static let lowercaseDigits = Array("0123456789abcdef".utf8)
}
