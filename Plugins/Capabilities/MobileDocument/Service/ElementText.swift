import ProximaCore

/// An element value as one line of text for an attendant display or the CLI: text as is, booleans, dates
/// (`full-date` and `tdate`), numbers; byte strings by size and kind (`<1234 bytes jpeg>`), never their bytes;
/// arrays and maps (driving_privileges) compactly. Bounded: nesting past 4 levels prints `…`.
package enum ElementText {
    package static func describe(_ value: CBORValue) -> String { describe(value, depth: 0) }

    private static func describe(_ value: CBORValue, depth: Int) -> String {
        guard depth < 4 else { return "…" }
        if let date = value.fullDateValue {
            return "\(pad(date.year, 4))-\(pad(date.month, 2))-\(pad(date.day, 2))"
        }
        if let time = value.dateTimeValue { return time.rfc3339 }
        switch value {
        case .textString(let text): return text
        case .boolean(let flag): return flag ? "true" : "false"
        case .unsigned(let number): return "\(number)"
        case .negative(let number): return number == .max ? "-18446744073709551616" : "-\(number + 1)"
        case .float(let number): return "\(number)"
        case .byteString(let bytes): return "<\(bytes.count) bytes\(kind(of: bytes).map { " \($0)" } ?? "")>"
        case .array(let items): return "[" + items.map { describe($0, depth: depth + 1) }.joined(separator: ", ") + "]"
        case .map(let entries):
            return "{"
                + entries.map { "\(describe($0.key, depth: depth + 1)): \(describe($0.value, depth: depth + 1))" }
                .joined(separator: ", ") + "}"
        case .tagged(_, let inner): return describe(inner, depth: depth + 1)
        case .null: return "null"
        case .undefined: return "undefined"
        case .simple(let number): return "simple(\(number))"
        }
    }

    /// `jpeg` or `jpeg2000` from the magic bytes (ISO/IEC 18013-5 §7.2.2: portrait is JPEG or JPEG 2000).
    package static func kind(of bytes: [UInt8]) -> String? {
        if bytes.starts(with: [0xFF, 0xD8]) { return "jpeg" }
        if bytes.starts(with: [0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50]) || bytes.starts(with: [0xFF, 0x4F, 0xFF, 0x51]) {
            return "jpeg2000"
        }
        return nil
    }

    private static func pad(_ number: Int, _ width: Int) -> String {
        let text = String(number)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
