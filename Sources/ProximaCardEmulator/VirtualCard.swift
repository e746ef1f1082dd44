public import ProximaCore

/// A card that lives in software: it answers raw command APDUs with raw response APDUs.
///
/// Bytes in and out (not ``ProximaCore/CommandAPDU``) so that one card can be hosted anywhere a real card's
/// bytes flow: the in-process simulator transport, vpcd (for pcscd), a PN532 emulator (for libnfc) or CCID.
/// A card is a value: a host copies it at the start of each card presence, and `respond(to:)` mutates only that
/// copy, so session state (the selected application, a chain in progress) starts afresh on every tap. State a
/// physical card keeps across taps belongs in a shared reference the copies hold: ``EMVCard``'s transaction
/// counter (ATC) counts on from tap to tap, as a real card's does.
///
/// Implementations must be total: a malformed or unknown command gets a status word such as `6700` (wrong
/// length) or `6D00` (instruction not supported), never a trap.
public protocol VirtualCard: Sendable {
    /// A human name for logs and diagnostics (never card data).
    var name: String { get }
    /// The ATR a PC/SC reader would report (for contactless cards, the PC/SC Part 3 pseudo-ATR).
    var atr: [UInt8] { get }
    /// The ATS of an ISO/IEC 14443-4 Type A card (without CRC), or empty.
    var ats: [UInt8] { get }
    /// The anti-collision identifier (UID / PUPI / IDm).
    var uid: [UInt8] { get }
    var technology: CardTechnology { get }

    /// Answers one command APDU.
    ///
    /// - Parameter command: the command exactly as the reader sent it (header, Lc, data, Le).
    /// - Returns: the response data followed by SW1 SW2.
    mutating func respond(to command: [UInt8]) -> [UInt8]
}

/// Structural checks on raw command bytes that cost no allocation (the simulator's transmit path is measured).
enum CommandBytes {
    /// Whether `bytes` are a well-formed command APDU of ISO/IEC 7816-4 §5.1 (any of the four cases, short or
    /// extended): the same rules as `CommandAPDU(bytes:)`, without building one.
    static func isWellFormed(_ bytes: [UInt8]) -> Bool {
        let n = bytes.count
        if n < 4 { return false }
        if n <= 5 { return true }
        if bytes[4] != 0 {
            let lc = Int(bytes[4])
            return n == 5 + lc || n == 6 + lc
        }
        guard n >= 7 else { return false }
        if n == 7 { return true }
        let lc = Int(bytes[5]) << 8 | Int(bytes[6])
        return lc > 0 && (n == 7 + lc || n == 9 + lc)
    }
}
