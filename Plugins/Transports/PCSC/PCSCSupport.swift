internal import CPCSCLite
internal import ProximaCore
internal import Synchronization

/// Reading pcsc-lite's multi-strings: names separated by NUL, the list ended by an empty name (a double NUL),
/// as `SCardListReaders` returns them (`Reader A\0Reader B\0\0`).
///
/// The bytes come from another process, so the parser is total: it stops at the first empty name or at the end
/// of the buffer, drops a last name that has no NUL (a truncated buffer), skips names that are not UTF-8 or longer
/// than ``maximumNameLength`` bytes (pcsc-lite refuses those in `SCardConnect`), keeps the first of duplicate
/// names, and returns at most ``maximumNames`` names.
enum PCSCMultiString {
    /// pcsc-lite's `MAX_READERNAME`.
    static let maximumNameLength = 128
    /// Four times pcsc-lite's `PCSCLITE_MAX_READERS_CONTEXTS` (16).
    static let maximumNames = 64

    static func parse(_ bytes: some Collection<UInt8>) -> [String] {
        var names: [String] = []
        var seen: Set<String> = []
        var start = bytes.startIndex
        while start != bytes.endIndex, names.count < maximumNames {
            guard let end = bytes[start...].firstIndex(of: 0) else { break }
            let field = bytes[start..<end]
            if field.isEmpty { break }
            start = bytes.index(after: end)
            guard field.count <= maximumNameLength, let name = String(validating: field, as: UTF8.self) else {
                continue
            }
            if seen.insert(name).inserted { names.append(name) }
        }
        return names
    }
}

/// What a PC/SC ATR says about the card's RF technology (PC/SC Part 3, §3.1.3.2.3, "ATR for contactless
/// cards": readers build a pseudo-ATR `3B 8n 80 01 <n historical bytes> TCK`).
enum PseudoATR {
    /// The PC/SC workgroup's registered application provider identifier, in storage-card pseudo-ATRs.
    private static let pcscRID: [UInt8] = [0xA0, 0x00, 0x00, 0x03, 0x06]

    /// - Storage cards (historical bytes `80 4F 0C A0 00 00 03 06 SS NN NN …`): the standard byte SS tells
    ///   ISO/IEC 14443 A (`01`–`03`), B (`05`–`07`) or FeliCa (`11`); other standards (ISO/IEC 15693, …) are
    ///   `.unknown`.
    /// - ISO/IEC 14443-4 cards: a Type B pseudo-ATR carries exactly 8 historical bytes (ATQB application data,
    ///   protocol info, then MBLI in the high nibble of a byte whose low nibble is 0); 8 historical bytes whose
    ///   protocol-type nibble has only bit 1 and whose last byte ends in 0 are taken for Type B. Anything else is
    ///   Type A (the ATS historical bytes). This is a heuristic: a Type A card whose ATS happens to have that
    ///   shape is reported as Type B.
    /// - Any other ATR that starts with `3B` or `3F` is a contact card; anything else is `.unknown`.
    static func technology(forATR atr: [UInt8]) -> CardTechnology {
        guard let first = atr.first else { return .unknown }
        guard first == 0x3B || first == 0x3F else { return .unknown }
        guard atr.count >= 4, first == 0x3B, atr[1] & 0xF0 == 0x80, atr[2] == 0x80, atr[3] == 0x01 else {
            return .contact
        }
        let count = Int(atr[1] & 0x0F)
        guard atr.count >= 4 + count else { return .unknown }
        let historical = Array(atr[4..<(4 + count)])
        if historical.count >= 9, historical[0] == 0x80, historical[1] == 0x4F, Array(historical[3..<8]) == pcscRID {
            switch historical[8] {
            case 0x01...0x03: return .iso14443A
            case 0x05...0x07: return .iso14443B
            case 0x11: return .felica
            default: return .unknown
            }
        }
        if historical.count == 8, historical[5] & 0x0E == 0, historical[7] & 0x0F == 0 {
            return .iso14443B
        }
        return .iso14443A
    }
}

/// Hands a value from a queue to one waiting task, or to nobody when the task was cancelled first.
///
/// Invariant: the continuation is resumed exactly once, by whichever of ``deliver(_:)`` and ``cancel()`` takes
/// it out of the mutex first.
final class Handoff<Value: Sendable>: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<Value?, Never>)
        case cancelled
        case finished
    }

    private let state = Mutex<State>(.idle)

    /// Whether ``cancel()`` came first: the waiting task no longer waits.
    var isCancelled: Bool {
        state.withLock { state in
            if case .cancelled = state { return true }
            return false
        }
    }

    /// Stores the continuation; `false` (after resuming it with `nil`) when ``cancel()`` came first.
    func install(_ continuation: CheckedContinuation<Value?, Never>) -> Bool {
        let cancelled = state.withLock { state -> Bool in
            if case .cancelled = state { return true }
            state = .waiting(continuation)
            return false
        }
        if cancelled { continuation.resume(returning: nil) }
        return !cancelled
    }

    /// Resumes the waiting task with `value`; `false` when it was cancelled and is no longer waiting.
    func deliver(_ value: Value) -> Bool {
        let continuation = state.withLock { state -> CheckedContinuation<Value?, Never>? in
            guard case .waiting(let continuation) = state else { return nil }
            state = .finished
            return continuation
        }
        continuation?.resume(returning: value)
        return continuation != nil
    }

    func cancel() {
        let continuation = state.withLock { state -> CheckedContinuation<Value?, Never>? in
            switch state {
            case .idle:
                state = .cancelled
                return nil
            case .waiting(let continuation):
                state = .cancelled
                return continuation
            case .cancelled, .finished:
                return nil
            }
        }
        continuation?.resume(returning: nil)
    }
}

/// pcsc-lite constants in the types its functions take (`DWORD` is `UInt` on Linux).
enum PCSC {
    /// `\\?PnP?\Notification`: the pseudo-reader whose state changes when readers come or go.
    static let plugAndPlayReaderName = "\\\\?PnP?\\Notification"
    /// pcsc-lite's `PCSCLITE_MAX_READERS_CONTEXTS`: at most this many reader states per `SCardGetStatusChange`.
    static let maximumReaderStates = 16
    /// `MAX_BUFFER_SIZE_EXTENDED` (4 + 3 + 65,536 + 3 + 2): the largest extended APDU or answer.
    static let maximumBufferSizeExtended = Int(cpcsc_max_buffer_size_extended())
    /// The largest extended command APDU: header, `00 Lc Lc`, 65,535 data bytes, `Le Le`.
    static let maximumExtendedCommandLength = 4 + 3 + 65_535 + 2
    /// The largest short command APDU: header, Lc, 255 data bytes, Le.
    static let maximumShortCommandLength = 4 + 1 + 255 + 1

    static let scopeSystem = DWORD(SCARD_SCOPE_SYSTEM)
    static let shareShared = DWORD(SCARD_SHARE_SHARED)
    static let shareExclusive = DWORD(SCARD_SHARE_EXCLUSIVE)
    static let protocolT0 = DWORD(SCARD_PROTOCOL_T0)
    static let protocolT1 = DWORD(SCARD_PROTOCOL_T1)
    static let protocolRaw = DWORD(SCARD_PROTOCOL_RAW)
    static let leaveCard = DWORD(SCARD_LEAVE_CARD)
    static let infinite = DWORD(INFINITE)

    static let stateUnaware = DWORD(SCARD_STATE_UNAWARE)
    static let stateIgnore = DWORD(SCARD_STATE_IGNORE)
    static let stateUnknown = DWORD(SCARD_STATE_UNKNOWN)
    static let stateUnavailable = DWORD(SCARD_STATE_UNAVAILABLE)
    static let statePresent = DWORD(SCARD_STATE_PRESENT)
    static let stateMute = DWORD(SCARD_STATE_MUTE)
}
