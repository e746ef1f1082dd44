public import ProximaCore

/// USB CCID bulk messages (USB Device Class: Smart Card CCID, Rev 1.1, §6), as pure Swift: no libusb here, so the
/// framing is tested byte by byte.
///
/// Every message has a 10-byte header, little-endian: `bMessageType dwLength(4) bSlot bSeq` and three bytes whose
/// meaning depends on the type, then `dwLength` bytes of data.
public enum CCID {
    /// The header length of every bulk message.
    public static let headerLength = 10

    /// PC_to_RDR message types (§6.1).
    public enum Command: UInt8, Hashable, Sendable {
        case setParameters = 0x61
        case iccPowerOn = 0x62
        case iccPowerOff = 0x63
        case getSlotStatus = 0x65
        case escape = 0x6B
        case getParameters = 0x6C
        case resetParameters = 0x6D
        case xfrBlock = 0x6F
        case abort = 0x72

        /// The RDR_to_PC message type that answers this command (§6.2).
        public var responseType: UInt8 {
            switch self {
            case .iccPowerOn, .xfrBlock: 0x80
            case .iccPowerOff, .getSlotStatus, .abort: 0x81
            case .setParameters, .getParameters, .resetParameters: 0x82
            case .escape: 0x83
            }
        }
    }

    /// `wLevelParameter` of XfrBlock and `bChainParameter` of DataBlock at the extended APDU level (§6.1.4, §6.2.1).
    public enum Chain: UInt16, Hashable, Sendable {
        /// The data begins and ends the APDU.
        case complete = 0x0000
        /// The data begins an APDU that continues.
        case begins = 0x0001
        /// The data continues and ends the APDU.
        case ends = 0x0002
        /// The data continues the APDU, and more follows.
        case continues = 0x0003
        /// No data: the host asks for the next part of the response.
        case nextResponsePart = 0x0010
    }

    /// One PC_to_RDR message on the wire.
    public static func command(
        _ type: Command,
        slot: UInt8,
        sequence: UInt8,
        parameters: (UInt8, UInt8, UInt8) = (0, 0, 0),
        data: [UInt8] = []
    ) -> [UInt8] {
        let length = UInt32(truncatingIfNeeded: data.count)
        var message: [UInt8] = [
            type.rawValue, UInt8(truncatingIfNeeded: length), UInt8(truncatingIfNeeded: length >> 8),
            UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 24), slot, sequence,
            parameters.0, parameters.1, parameters.2,
        ]
        message.append(contentsOf: data)
        return message
    }

    /// PC_to_RDR_XfrBlock with `bBWI` 0 and `wLevelParameter` `chain`.
    public static func xfrBlock(slot: UInt8, sequence: UInt8, data: [UInt8], chain: Chain = .complete) -> [UInt8] {
        command(
            .xfrBlock,
            slot: slot,
            sequence: sequence,
            parameters: (0, UInt8(truncatingIfNeeded: chain.rawValue), UInt8(truncatingIfNeeded: chain.rawValue >> 8)),
            data: data
        )
    }
}

/// `bmICCStatus`, bits 1..0 of `bStatus` (§6.2.6).
public enum CCIDCardState: UInt8, Hashable, Sendable {
    /// A card is present and active (powered).
    case active = 0
    /// A card is present but not powered.
    case inactive = 1
    /// No card.
    case absent = 2
    /// Reserved for future use (a reader that sends it is broken).
    case reserved = 3
}

/// `bError` of a failed RDR_to_PC message (§6.2.6, table 6.2-2), with a named member per code.
public struct CCIDSlotError: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `CMD_NOT_SUPPORTED` (00): the command is not supported.
    public static let commandNotSupported = CCIDSlotError(rawValue: 0x00)
    /// `CMD_ABORTED` (FF): the host aborted the command.
    public static let commandAborted = CCIDSlotError(rawValue: 0xFF)
    /// `ICC_MUTE` (FE): the card does not answer (or left).
    public static let iccMute = CCIDSlotError(rawValue: 0xFE)
    /// `XFR_PARITY_ERROR` (FD).
    public static let transferParityError = CCIDSlotError(rawValue: 0xFD)
    /// `XFR_OVERRUN` (FC).
    public static let transferOverrun = CCIDSlotError(rawValue: 0xFC)
    /// `HW_ERROR` (FB): the reader's hardware failed.
    public static let hardwareError = CCIDSlotError(rawValue: 0xFB)
    /// `BAD_ATR_TS` (F8).
    public static let badATRTS = CCIDSlotError(rawValue: 0xF8)
    /// `BAD_ATR_TCK` (F7).
    public static let badATRTCK = CCIDSlotError(rawValue: 0xF7)
    /// `ICC_PROTOCOL_NOT_SUPPORTED` (F6).
    public static let iccProtocolNotSupported = CCIDSlotError(rawValue: 0xF6)
    /// `ICC_CLASS_NOT_SUPPORTED` (F5).
    public static let iccClassNotSupported = CCIDSlotError(rawValue: 0xF5)
    /// `PROCEDURE_BYTE_CONFLICT` (F4).
    public static let procedureByteConflict = CCIDSlotError(rawValue: 0xF4)
    /// `DEACTIVATED_PROTOCOL` (F3).
    public static let deactivatedProtocol = CCIDSlotError(rawValue: 0xF3)
    /// `BUSY_WITH_AUTO_SEQUENCE` (F2): the reader is busy activating the card by itself.
    public static let busyWithAutoSequence = CCIDSlotError(rawValue: 0xF2)
    /// `PIN_TIMEOUT` (F0).
    public static let pinTimeout = CCIDSlotError(rawValue: 0xF0)
    /// `PIN_CANCELLED` (EF).
    public static let pinCancelled = CCIDSlotError(rawValue: 0xEF)
    /// `CMD_SLOT_BUSY` (E0): another command runs on the slot.
    public static let commandSlotBusy = CCIDSlotError(rawValue: 0xE0)

    private static let names: [UInt8: String] = [
        0x00: "CMD_NOT_SUPPORTED", 0xFF: "CMD_ABORTED", 0xFE: "ICC_MUTE", 0xFD: "XFR_PARITY_ERROR",
        0xFC: "XFR_OVERRUN", 0xFB: "HW_ERROR", 0xF8: "BAD_ATR_TS", 0xF7: "BAD_ATR_TCK",
        0xF6: "ICC_PROTOCOL_NOT_SUPPORTED", 0xF5: "ICC_CLASS_NOT_SUPPORTED", 0xF4: "PROCEDURE_BYTE_CONFLICT",
        0xF3: "DEACTIVATED_PROTOCOL", 0xF2: "BUSY_WITH_AUTO_SEQUENCE", 0xF0: "PIN_TIMEOUT", 0xEF: "PIN_CANCELLED",
        0xE0: "CMD_SLOT_BUSY",
    ]

    public var description: String {
        let hex = String(rawValue, radix: 16, uppercase: true)
        let code = rawValue < 0x10 ? "0" + hex : hex
        if let name = Self.names[rawValue] { return "\(name) (\(code))" }
        if rawValue >= 0x01 && rawValue <= 0x7F { return "bad parameter at offset \(rawValue) (\(code))" }
        return "reserved error \(code)"
    }

    /// The kernel's code for a command that failed with this error.
    public var errorCode: ProximaError.Code {
        switch self {
        case .iccMute: .cardTimeout
        case .commandSlotBusy, .busyWithAutoSequence: .readerBusy
        case .hardwareError: .readerFaulted
        case .commandAborted: .cancelled
        case .commandNotSupported, .iccProtocolNotSupported, .iccClassNotSupported: .unsupported
        default: .transmitFailed
        }
    }
}

/// An RDR_to_PC bulk-IN message (§6.2), parsed totally: any byte string either parses or is refused with a reason.
public struct CCIDResponse: Hashable, Sendable {
    public var messageType: UInt8
    public var slot: UInt8
    public var sequence: UInt8
    /// `bStatus`.
    public var status: UInt8
    /// `bError`: the error code when the command failed, the BWT multiplier with a time extension.
    public var error: UInt8
    /// `bChainParameter` (DataBlock), `bClockStatus` (SlotStatus), `bProtocolNum` (Parameters).
    public var parameter: UInt8
    public var data: [UInt8]

    /// What `bmCommandStatus` (bits 7..6 of `bStatus`) says.
    public enum Outcome: Hashable, Sendable {
        case processed
        case failed(CCIDSlotError)
        /// The reader needs more time: wait for the next message with the same `bSeq`. `multiplier` is `bError`.
        case timeExtension(multiplier: UInt8)
        /// bmCommandStatus 3, reserved.
        case reserved
    }

    public var cardState: CCIDCardState { CCIDCardState(rawValue: status & 0x03) ?? .reserved }

    public var outcome: Outcome {
        switch status >> 6 {
        case 0: .processed
        case 1: .failed(CCIDSlotError(rawValue: error))
        case 2: .timeExtension(multiplier: error)
        default: .reserved
        }
    }

    /// The chain parameter of a DataBlock, `nil` for an unknown value.
    public var chain: CCID.Chain? { CCID.Chain(rawValue: UInt16(parameter)) }

    /// Parses one message.
    ///
    /// - Parameter maximumDataLength: the most data bytes accepted (the reader's `dwMaxCCIDMessageLength` less the
    ///   header); a `dwLength` above it is refused, so a hostile length never sizes an allocation.
    /// - Throws: `ProximaError.malformedData` naming what is wrong: shorter than a header, a `dwLength` over the
    ///   limit, or a `dwLength` that disagrees with the bytes received.
    public init(bytes: [UInt8], maximumDataLength: Int = 65_544) throws {
        guard bytes.count >= CCID.headerLength else {
            throw ProximaError(.malformedData, "CCID message of \(bytes.count) bytes, shorter than its 10-byte header")
        }
        let length = Int(bytes[1]) | Int(bytes[2]) << 8 | Int(bytes[3]) << 16 | Int(bytes[4]) << 24
        guard length <= maximumDataLength else {
            throw ProximaError(
                .malformedData,
                "CCID message announces \(length) data bytes, more than the reader's \(maximumDataLength)"
            )
        }
        guard bytes.count - CCID.headerLength == length else {
            throw ProximaError(
                .malformedData,
                "CCID message announces \(length) data bytes but carries \(bytes.count - CCID.headerLength)"
            )
        }
        messageType = bytes[0]
        slot = bytes[5]
        sequence = bytes[6]
        status = bytes[7]
        error = bytes[8]
        parameter = bytes[9]
        data = Array(bytes[CCID.headerLength...])
    }
}

/// RDR_to_PC_NotifySlotChange (`50`) on the interrupt endpoint (§6.3.1): two bits per slot, bit 0 "card present",
/// bit 1 "changed since the last notification", slot 0 in the low bits of the first byte.
public struct CCIDSlotChange: Hashable, Sendable {
    public var present: [Bool]
    public var changed: [Bool]

    /// The message type of NotifySlotChange.
    public static let messageType: UInt8 = 0x50
    /// RDR_to_PC_HardwareError on the interrupt endpoint.
    public static let hardwareErrorType: UInt8 = 0x51

    /// - Parameter slots: the reader's slot count (`bMaxSlotIndex + 1`); bits beyond it are ignored.
    /// - Throws: `ProximaError.malformedData` for a message that is not a NotifySlotChange or is too short for
    ///   `slots`.
    public init(bytes: [UInt8], slots: Int) throws {
        guard bytes.first == Self.messageType else {
            throw ProximaError(.malformedData, "interrupt message is not RDR_to_PC_NotifySlotChange (50)")
        }
        let slots = max(1, min(slots, 256))
        let needed = 1 + (slots * 2 + 7) / 8
        guard bytes.count >= needed else {
            throw ProximaError(
                .malformedData,
                "NotifySlotChange of \(bytes.count) bytes, \(needed) needed for \(slots) slots"
            )
        }
        present = []
        changed = []
        for slot in 0..<slots {
            let bits = bytes[1 + slot / 4] >> UInt8((slot % 4) * 2)
            present.append(bits & 0x01 != 0)
            changed.append(bits & 0x02 != 0)
        }
    }
}

/// The CCID class descriptor (`bDescriptorType` 21, 54 bytes, §5.1): what the host needs of it.
public struct CCIDClassDescriptor: Hashable, Sendable {
    /// How APDUs reach the card (`dwFeatures & 0x00070000`).
    public enum ExchangeLevel: Hashable, Sendable {
        /// The host does the protocol byte by byte: not supported.
        case character
        /// The host frames T=0/T=1 TPDUs.
        case tpdu
        /// One XfrBlock per short APDU.
        case shortAPDU
        /// Short and extended APDUs, chained over XfrBlocks when longer than a message.
        case extendedAPDU
    }

    public var maximumSlotIndex: UInt8
    public var features: UInt32
    public var maximumMessageLength: Int
    public var maximumBusySlots: UInt8

    public var exchangeLevel: ExchangeLevel {
        switch features & 0x0007_0000 {
        case 0x0004_0000: .extendedAPDU
        case 0x0002_0000: .shortAPDU
        case 0x0001_0000: .tpdu
        default: .character
        }
    }

    public var slotCount: Int { Int(maximumSlotIndex) + 1 }

    /// Reads the descriptor from the interface's extra descriptor bytes (it may follow other descriptors).
    ///
    /// - Throws: `ProximaError.malformedData` when no 54-byte descriptor of type 21 is there, or its message length
    ///   is smaller than a header.
    public init(extra bytes: [UInt8]) throws {
        var index = 0
        while index + 1 < bytes.count {
            let length = Int(bytes[index])
            guard length >= 2, index + length <= bytes.count else { break }
            if bytes[index + 1] == 0x21, length >= 54 {
                let descriptor = bytes[index..<(index + length)]
                func word(_ offset: Int) -> UInt32 {
                    let start = descriptor.startIndex + offset
                    return UInt32(descriptor[start]) | UInt32(descriptor[start + 1]) << 8
                        | UInt32(descriptor[start + 2]) << 16 | UInt32(descriptor[start + 3]) << 24
                }
                maximumSlotIndex = descriptor[descriptor.startIndex + 4]
                features = word(40)
                maximumMessageLength = Int(word(44))
                maximumBusySlots = descriptor[descriptor.startIndex + 53]
                guard maximumMessageLength > CCID.headerLength else {
                    throw ProximaError(
                        .malformedData,
                        "CCID class descriptor: dwMaxCCIDMessageLength \(maximumMessageLength) leaves no room for data"
                    )
                }
                return
            }
            index += length
        }
        throw ProximaError(.malformedData, "no CCID class descriptor (type 21, 54 bytes) in the interface descriptors")
    }
}
