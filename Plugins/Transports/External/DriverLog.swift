/// Turns a driver's standard error into lines for the kernel's log: split at newlines, each line at most
/// ``maximumLineLength`` characters, hex runs longer than 12 digits masked (they could be a PAN, track data or a
/// key), and at most so many lines per second, with a count of what was dropped.
public struct DriverStderrLog: Sendable {
    /// Longer lines are cut, with `…` appended.
    public static let maximumLineLength = 512
    /// Runs of more hex digits than this are masked.
    public static let maximumHexDigits = 12

    private var pending: [UInt8] = []
    private var limiter: RateLimiter
    private var dropped = 0

    /// - Parameter linesPerSecond: the sustained rate; bursts of up to twice as many lines pass.
    public init(linesPerSecond: Double) {
        limiter = RateLimiter(ratePerSecond: linesPerSecond, burst: max(2 * linesPerSecond, 1))
    }

    /// The lines to log for `bytes` arriving at `now`.
    public mutating func consume(_ bytes: some Collection<UInt8>, at now: ContinuousClock.Instant) -> [String] {
        var lines: [String] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                emit(pending, at: now, into: &lines)
                pending.removeAll(keepingCapacity: true)
            } else if pending.count < 4 * Self.maximumLineLength {
                pending.append(byte)
            }
        }
        return lines
    }

    /// The lines to log when standard error closes: a last line without newline, and the count of dropped lines.
    public mutating func finish(at now: ContinuousClock.Instant) -> [String] {
        var lines: [String] = []
        if !pending.isEmpty { emit(pending, at: now, into: &lines) }
        pending = []
        if dropped > 0 {
            lines.append("(\(Self.count(dropped)) more dropped: over the rate limit)")
            dropped = 0
        }
        return lines
    }

    private mutating func emit(_ bytes: [UInt8], at now: ContinuousClock.Instant, into lines: inout [String]) {
        var text = String(decoding: bytes, as: UTF8.self)
        if text.hasSuffix("\r") { text.removeLast() }
        guard limiter.allow(at: now) else {
            dropped += 1
            return
        }
        if dropped > 0 {
            lines.append("(\(Self.count(dropped)) dropped: over the rate limit)")
            dropped = 0
        }
        var masked = Self.mask(text)
        if masked.count > Self.maximumLineLength { masked = String(masked.prefix(Self.maximumLineLength)) + "…" }
        lines.append(masked)
    }

    private static func count(_ lines: Int) -> String { lines == 1 ? "1 line" : "\(lines) lines" }

    /// `line` with every run of more than 12 hex digits replaced by `[N hex digits masked]`. A run is either
    /// contiguous hex digits (`5413330089600010`) or bytes written as pairs of digits with one space, colon or dash
    /// between them (`54 13 33 00 89 60 00 10`). Control characters become `?`.
    public static func mask(_ line: String) -> String {
        let scalars = Array(line.unicodeScalars)
        var out = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            let run = hexRun(in: scalars, from: index)
            if run.digits > maximumHexDigits {
                out.append(contentsOf: "[\(run.digits) hex digits masked]".unicodeScalars)
                index = run.end
            } else if run.end > index {
                out.append(contentsOf: scalars[index..<run.end])
                index = run.end
            } else {
                let scalar = scalars[index]
                out.append(scalar.value < 0x20 || scalar.value == 0x7F ? "?" : scalar)
                index += 1
            }
        }
        return String(out)
    }

    private static func isHex(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "0"..."9", "a"..."f", "A"..."F": true
        default: false
        }
    }

    private static func isSeparator(_ scalar: Unicode.Scalar) -> Bool {
        scalar == " " || scalar == ":" || scalar == "-"
    }

    /// The hex run starting at `start` (empty when `scalars[start]` is not a hex digit): where it ends and how many
    /// digits it holds.
    private static func hexRun(in scalars: [Unicode.Scalar], from start: Int) -> (end: Int, digits: Int) {
        var end = start
        while end < scalars.count, isHex(scalars[end]) { end += 1 }
        var digits = end - start
        guard digits == 2 else { return (end, digits) }
        // Bytes as separated pairs: extend over `SEP XX` while each group is exactly two digits.
        while end + 2 < scalars.count, isSeparator(scalars[end]), isHex(scalars[end + 1]), isHex(scalars[end + 2]),
            end + 3 == scalars.count || !isHex(scalars[end + 3])
        {
            end += 3
            digits += 2
        }
        return (end, digits)
    }
}
