internal import ProximaCore

/// One ISO/IEC 7816-3 T=1 block (§11.3): prologue `NAD PCB LEN`, `LEN` information bytes, epilogue (the LRC, one
/// byte: the exclusive-or of every byte before it, §11.4.4). Pure Swift, so the codec is tested byte by byte.
///
/// `PCB` (§11.3.2.2) says what the block is: an I-block `0 N(S) M 00000` carries (part of) an APDU, an R-block
/// `100 N(R) 00ee` acknowledges or asks for a repeat, an S-block `11 r 00ttt` is a supervisory request (`r` 0) or
/// response (`r` 1): RESYNCH, IFS, ABORT, WTX.
public struct T1Block: Hashable, Sendable, CustomStringConvertible {
    /// The largest information field of a block (`LEN` FF is reserved).
    public static let maximumInformationLength = 254

    /// What an R-block reports (bits 2..1 of its PCB).
    public enum ReceiveStatus: UInt8, Hashable, Sendable {
        /// No error: an acknowledgement (of a chained I-block).
        case ok = 0
        /// The last block had a wrong EDC or a parity error.
        case checksumError = 1
        /// The last block was otherwise wrong (bad PCB, bad length, unexpected).
        case otherError = 2
    }

    /// The S-block functions (bits 5..1 of its PCB).
    public enum Supervisory: UInt8, Hashable, Sendable {
        case resynchronise = 0x00
        /// The information field size: one byte, 1…254.
        case informationFieldSize = 0x01
        case abort = 0x02
        /// Waiting time extension: one byte, the BWT multiplier.
        case waitingTimeExtension = 0x03
    }

    public enum Kind: Hashable, Sendable {
        /// An I-block: send sequence number N(S) (0 or 1), `more` set when the APDU continues in the next I-block.
        case information(sequence: UInt8, more: Bool)
        /// An R-block: N(R), the sequence number of the I-block expected next.
        case receiveReady(sequence: UInt8, status: ReceiveStatus)
        case supervisory(Supervisory, response: Bool)
    }

    public var nad: UInt8
    public var kind: Kind
    public var information: [UInt8]

    public init(nad: UInt8 = 0, kind: Kind, information: [UInt8] = []) {
        self.nad = nad
        self.kind = kind
        self.information = information
    }

    /// The protocol control byte.
    public var pcb: UInt8 {
        switch kind {
        case .information(let sequence, let more): (sequence & 1) << 6 | (more ? 0x20 : 0)
        case .receiveReady(let sequence, let status): 0x80 | (sequence & 1) << 4 | status.rawValue
        case .supervisory(let function, let response): 0xC0 | (response ? 0x20 : 0) | function.rawValue
        }
    }

    /// The block on the wire, LRC last.
    public var bytes: [UInt8] {
        var block: [UInt8] = [nad, pcb, UInt8(truncatingIfNeeded: information.count)]
        block.reserveCapacity(information.count + 4)
        block += information
        block.append(Self.longitudinalRedundancyCheck(block[...]))
        return block
    }

    /// The exclusive-or of `bytes` (§11.4.4).
    public static func longitudinalRedundancyCheck(_ bytes: ArraySlice<UInt8>) -> UInt8 {
        var check: UInt8 = 0
        for byte in bytes { check ^= byte }
        return check
    }

    /// Parses one block with an LRC epilogue, totally.
    ///
    /// - Throws: ``T1BlockError`` saying what is wrong: too short, `LEN` FF or disagreeing with the bytes, the LRC,
    ///   a PCB no block has (an R-block with reserved bits, an S-block function that does not exist), or an S-block
    ///   whose information field does not fit its function.
    public init(bytes: [UInt8]) throws(T1BlockError) {
        guard bytes.count >= 4 else { throw .malformed("T=1 block of \(bytes.count) bytes, shorter than 4") }
        let length = Int(bytes[2])
        guard length <= Self.maximumInformationLength else { throw .malformed("T=1 block with LEN FF (reserved)") }
        guard bytes.count == 3 + length + 1 else {
            throw .malformed("T=1 block announces \(length) information bytes but carries \(bytes.count - 4)")
        }
        guard Self.longitudinalRedundancyCheck(bytes[..<(bytes.count - 1)]) == bytes[bytes.count - 1] else {
            throw .checksum
        }
        nad = bytes[0]
        information = Array(bytes[3..<(3 + length)])
        let pcb = bytes[1]
        switch pcb >> 6 {
        case 0, 1:
            guard pcb & 0x1F == 0 else { throw .malformed("I-block PCB with reserved bits set") }
            kind = .information(sequence: pcb >> 6 & 1, more: pcb & 0x20 != 0)
        case 2:
            guard pcb & 0x2C == 0, let status = ReceiveStatus(rawValue: pcb & 0x03) else {
                throw .malformed("R-block PCB with reserved bits set")
            }
            guard length == 0 else { throw .malformed("R-block with an information field") }
            kind = .receiveReady(sequence: pcb >> 4 & 1, status: status)
        default:
            guard let function = Supervisory(rawValue: pcb & 0x1F) else {
                throw .malformed("S-block of unknown function")
            }
            let expected = function == .informationFieldSize || function == .waitingTimeExtension ? 1 : 0
            guard length == expected else {
                throw .malformed("S-block with \(length) information bytes, \(expected) expected")
            }
            if function == .informationFieldSize, information[0] == 0 || information[0] == 0xFF {
                throw .malformed("S(IFS) with the reserved size \(information[0])")
            }
            kind = .supervisory(function, response: pcb & 0x20 != 0)
        }
    }

    /// The block's shape, never its information bytes (they may be card data): `I(0, M)`, `R(1, ok)`, `S(WTX req)`.
    public var description: String {
        switch kind {
        case .information(let sequence, let more): "I(\(sequence)\(more ? ", M" : ""), \(information.count) bytes)"
        case .receiveReady(let sequence, let status): "R(\(sequence), \(status))"
        case .supervisory(let function, let response): "S(\(function) \(response ? "response" : "request"))"
        }
    }
}

/// Why a T=1 block was refused: a wrong epilogue (answered with an R-block "EDC error") or anything else (an R-block
/// "other error").
public enum T1BlockError: Error, Hashable, Sendable {
    case checksum
    case malformed(String)

    var receiveStatus: T1Block.ReceiveStatus {
        switch self {
        case .checksum: .checksumError
        case .malformed: .otherError
        }
    }

    var reason: String {
        switch self {
        case .checksum: "wrong LRC"
        case .malformed(let reason): reason
        }
    }
}

/// The T=1 parameters an ATR sets (ISO/IEC 7816-3 §8.2.3, §11.4): the card's IFSC (TA of the first group after a
/// TD announcing T=1, i ≥ 3; default 32), the EDC (TC of that group, bit 1: CRC when set) and whether the card offers
/// T=1 at all.
public struct T1Parameters: Hashable, Sendable {
    public var offersT1: Bool
    public var cardInformationFieldSize: Int
    public var usesCRC: Bool
    /// BWI and CWI (TB of that group), default BWI 4, CWI 13.
    public var waitingIntegers: UInt8

    /// Reads the interface bytes of `atr`, totally: a truncated ATR gives the defaults for what is missing.
    public init(atr: [UInt8]) {
        offersT1 = false
        cardInformationFieldSize = 32
        usesCRC = false
        waitingIntegers = 0x4D
        guard atr.count >= 2 else { return }
        var index = 1
        var format = atr[1]
        var group = 1
        var protocolOfGroup: UInt8 = 0
        while index < atr.count {
            // Interface bytes TAi TBi TCi TDi after the format byte (T0 or TDi-1).
            index += 1
            var ta: UInt8?
            var tb: UInt8?
            var tc: UInt8?
            if format & 0x10 != 0, index < atr.count {
                ta = atr[index]
                index += 1
            }
            if format & 0x20 != 0, index < atr.count {
                tb = atr[index]
                index += 1
            }
            if format & 0x40 != 0, index < atr.count {
                tc = atr[index]
                index += 1
            }
            if group >= 3, protocolOfGroup == 1 {
                if let ta, ta != 0, ta != 0xFF { cardInformationFieldSize = Int(ta) }
                if let tb { waitingIntegers = tb }
                if let tc { usesCRC = tc & 0x01 != 0 }
            }
            guard format & 0x80 != 0, index < atr.count else { return }
            format = atr[index]
            protocolOfGroup = format & 0x0F
            if protocolOfGroup == 1 { offersT1 = true }
            group += 1
            // `index` is on TDi; the loop's increment moves past it.
            guard group <= 16 else { return }
        }
    }
}

extension ProximaError {
    static func t1(_ code: Code, _ reason: String, reader: ReaderID?) -> ProximaError {
        ProximaError(code, "T=1: " + reason, reader: reader)
    }
}
