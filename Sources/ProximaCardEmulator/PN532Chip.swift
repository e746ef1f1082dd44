internal import ProximaCore

/// The command side of an emulated NXP PN532: what it answers to each information frame a host sends, with a
/// virtual card in or out of its field. No I/O (``PN532CardHost`` puts it on a pseudo-terminal), so it can be
/// tested byte by byte.
///
/// It answers what libnfc 1.8's `pn532_uart` driver sends (PN532 User Manual §7): Diagnose (communication test,
/// echoed), GetFirmwareVersion (PN532 v1.6, ISO 14443-A, -B and ISO 18092), ReadRegister / WriteRegister (a
/// register file: what was written is read back, anything else reads 0), SetParameters, SAMConfiguration,
/// PowerDown, RFConfiguration (field off deselects the card), InListPassiveTarget at 106 kbps Type A (`BrTy 00`:
/// SENS_RES, SEL_RES, UID and, for an ISO/IEC 14443-4 card, its ATS) and Type B (`BrTy 03`: ATQB and ATTRIB_RES),
/// InDataExchange (APDUs to the card, with the PN532's MI chaining both ways: at most ``maximumDataLength`` bytes per
/// frame), InCommunicateThru (libnfc's presence check, an ISO-DEP R(NACK)), InSelect, InDeselect, InRelease and
/// InAutoPoll. Any other command, or a frame that is not a host frame, gets the application-level error frame
/// (``Response/errorFrame``), as the chip answers a syntax error.
///
/// Each activation of the card (InListPassiveTarget) starts a fresh session copy of it, as a real card starts
/// afresh when it enters the field.
public struct PN532Chip: Sendable {
    /// What the chip sends back to one information frame.
    public enum Response: Hashable, Sendable {
        /// TFI `D5`, the response code and its data.
        case information([UInt8])
        /// The application-level error frame.
        case errorFrame
    }

    /// The most bytes one InDataExchange frame carries either way (PN532 User Manual §7.3.8: DataOut and DataIn
    /// "0 up to 262 bytes"); longer messages are chained with the MI bit.
    public static let maximumDataLength = 262

    /// PN532 status bytes (User Manual §7.1, table 14) the emulator reports.
    public enum Status {
        public static let ok: UInt8 = 0x00
        /// Time out: the target did not answer.
        public static let timeout: UInt8 = 0x01
        /// The host sent more than the PN532's buffer holds.
        public static let bufferOverflow: UInt8 = 0x09
        /// The command is not acceptable in the current context (no target activated).
        public static let wrongContext: UInt8 = 0x27
        /// The target was released.
        public static let released: UInt8 = 0x29
        /// The "more information" bit of a status byte or target number.
        public static let moreInformation: UInt8 = 0x40
    }

    /// The card in the field, as inserted (each activation copies it); `nil` when the field is empty.
    public private(set) var cardInField: (any VirtualCard)?
    /// The session copy of the activated card; `nil` when no card is activated.
    private var activeCard: (any VirtualCard)?
    private var registers: [UInt16: UInt8] = [:]
    private var fieldOn = true
    /// Command data received with MI set, waiting for the last part.
    private var chainedCommand: [UInt8] = []
    /// Response data not yet sent: the host fetches it with empty InDataExchange frames.
    private var pendingResponse: [UInt8] = []
    /// How many APDUs the card has answered, over all activations.
    public private(set) var apduCount = 0

    public init(card: (any VirtualCard)? = nil) {
        cardInField = card
    }

    /// Puts `card` into the field (replacing any card there); it is activated by the next InListPassiveTarget.
    public mutating func insert(_ card: any VirtualCard) {
        cardInField = card
        deactivate()
    }

    /// Takes the card out of the field: commands to it now time out.
    public mutating func remove() {
        cardInField = nil
        deactivate()
    }

    /// Whether a card is activated (selected by InListPassiveTarget and not released).
    public var isCardActive: Bool { activeCard != nil }

    private mutating func deactivate() {
        activeCard = nil
        chainedCommand = []
        pendingResponse = []
    }

    /// Answers one information frame (TFI and PD) from the host.
    public mutating func respond(to frame: [UInt8]) -> Response {
        guard frame.count >= 2, frame[0] == PN532Frame.hostToPN532 else { return .errorFrame }
        let command = frame[1]
        let parameters = frame[2...]
        func answer(_ data: [UInt8] = []) -> Response { .information([PN532Frame.pn532ToHost, command &+ 1] + data) }
        switch command {
        case 0x00:  // Diagnose: every test echoes its parameters (the communication test must).
            return answer(Array(parameters))
        case 0x02:  // GetFirmwareVersion: IC PN532, version 1.6, supports ISO 14443-A, -B and ISO 18092.
            return answer([0x32, 0x01, 0x06, 0x07])
        case 0x06:  // ReadRegister: 2-byte addresses, one byte back each.
            guard parameters.count.isMultiple(of: 2) else { return .errorFrame }
            var values: [UInt8] = []
            var index = parameters.startIndex
            while index + 1 < parameters.endIndex {
                let address = UInt16(parameters[index]) << 8 | UInt16(parameters[index + 1])
                values.append(registers[address] ?? 0)
                index += 2
            }
            return answer(values)
        case 0x08:  // WriteRegister: address (2) and value (1), repeated.
            guard parameters.count % 3 == 0 else { return .errorFrame }
            var index = parameters.startIndex
            while index + 2 < parameters.endIndex {
                let address = UInt16(parameters[index]) << 8 | UInt16(parameters[index + 1])
                registers[address] = parameters[index + 2]
                index += 3
            }
            return answer()
        case 0x12, 0x14:  // SetParameters, SAMConfiguration
            return answer()
        case 0x16:  // PowerDown: the chip sleeps until the next wake-up preamble; the card is released.
            deactivate()
            return answer([Status.ok])
        case 0x32:  // RFConfiguration; item 01 is the RF field (bit 0: on).
            if parameters.count >= 2, parameters[parameters.startIndex] == 0x01 {
                fieldOn = parameters[parameters.startIndex + 1] & 0x01 != 0
                if !fieldOn { deactivate() }
            }
            return answer()
        case 0x4A:  // InListPassiveTarget MaxTg BrTy [InitiatorData]
            guard parameters.count >= 2 else { return .errorFrame }
            return answer(listPassiveTarget(baudRateAndType: parameters[parameters.startIndex + 1]))
        case 0x40:  // InDataExchange Tg DataOut
            guard let target = parameters.first else { return .errorFrame }
            return answer(dataExchange(target: target, data: Array(parameters.dropFirst())))
        case 0x42:  // InCommunicateThru: libnfc's presence check sends an ISO-DEP R(NACK) (B2, or BA 01 with CID).
            // Only an R(NACK) (`1011 x01x`: B2/B3, BA/BB with CID) gets an answer, R(ACK) `A2`; other raw frames
            // (libnfc's probes for ST SRx, ASK CTx, … cards) time out, as they would with an ISO-DEP card.
            guard activeCard != nil, let first = parameters.first, first & 0xF6 == 0xB2 else {
                return answer([Status.timeout])
            }
            return answer([Status.ok, 0xA2])
        case 0x44, 0x52:  // InDeselect, InRelease
            deactivate()
            return answer([Status.ok])
        case 0x54:  // InSelect
            return answer([activeCard != nil ? Status.ok : Status.wrongContext])
        case 0x60:  // InAutoPoll PollNr Period Type1 … : report the card as a passive 106 kbps ISO 14443-4 A/B target.
            guard fieldOn, let card = cardInField else { return answer([0x00]) }
            let isTypeB = card.technology == .iso14443B
            let target = activate(typeB: isTypeB)
            guard !target.isEmpty else { return answer([0x00]) }
            return answer([0x01, isTypeB ? 0x23 : 0x20, UInt8(target.count)] + target)
        default:
            return .errorFrame
        }
    }

    /// NbTg and the target data of InListPassiveTarget (User Manual §7.3.5).
    private mutating func listPassiveTarget(baudRateAndType: UInt8) -> [UInt8] {
        guard fieldOn, let card = cardInField else { return [0x00] }
        let target: [UInt8]
        switch baudRateAndType {
        case 0x00 where card.technology != .iso14443B: target = activate(typeB: false)
        case 0x03 where card.technology == .iso14443B: target = activate(typeB: true)
        default: target = []
        }
        return target.isEmpty ? [0x00] : [0x01] + target
    }

    /// Activates the card in the field and returns its target data, `Tg` first: Type A `SENS_RES(2) SEL_RES
    /// NFCIDLength NFCID1 [ATS]`, Type B `ATQB(12) ATTRIB_RES_Length ATTRIB_RES`.
    private mutating func activate(typeB: Bool) -> [UInt8] {
        guard let card = cardInField else { return [] }
        deactivate()
        activeCard = card
        if typeB {
            // ATQB: 50, PUPI (4), application data (4), protocol info (3: 848 kbps no, max frame 256 bytes, ISO-DEP).
            var pupi = Array(card.uid.prefix(4))
            while pupi.count < 4 { pupi.append(0) }
            return [0x01, 0x50] + pupi + [0x00, 0x00, 0x00, 0x00, 0x00, 0x81, 0x71, 0x01, 0x00]
        }
        var uid = Array(card.uid.prefix(10))
        if uid.isEmpty { uid = [0x08, 0x00, 0x00, 0x00] }
        // SENS_RES byte 2 bits 7-6: UID size (single 4, double 7, triple 10 bytes); bit 2: bit frame anticollision.
        let uidSize: UInt8 = uid.count <= 4 ? 0x00 : uid.count <= 7 ? 0x40 : 0x80
        let isoDEP = !card.ats.isEmpty
        var target: [UInt8] = [0x01, 0x00, uidSize | 0x04, isoDEP ? 0x20 : 0x00, UInt8(uid.count)] + uid
        if isoDEP {
            // The ATS as the card sends it: TL (its own length) first.
            var ats = Array(card.ats.prefix(254))
            ats[0] = UInt8(ats.count)
            target += ats
        }
        return target
    }

    /// Status byte and DataIn of InDataExchange, chaining with MI (User Manual §7.3.8).
    private mutating func dataExchange(target: UInt8, data: [UInt8]) -> [UInt8] {
        guard activeCard != nil, target & 0x3F == 0x01 else {
            return [cardInField == nil ? Status.timeout : Status.wrongContext]
        }
        guard data.count <= Self.maximumDataLength, chainedCommand.count + data.count <= 65_544 else {
            chainedCommand = []
            return [Status.bufferOverflow]
        }
        if target & Status.moreInformation != 0 {
            chainedCommand += data
            return [Status.ok]
        }
        if data.isEmpty && chainedCommand.isEmpty && !pendingResponse.isEmpty {
            return nextResponsePart()
        }
        let command = chainedCommand + data
        chainedCommand = []
        guard var card = activeCard else { return [Status.timeout] }
        pendingResponse = card.respond(to: command)
        activeCard = card
        apduCount += 1
        return nextResponsePart()
    }

    private mutating func nextResponsePart() -> [UInt8] {
        let part = Array(pendingResponse.prefix(Self.maximumDataLength))
        pendingResponse.removeFirst(part.count)
        return [pendingResponse.isEmpty ? Status.ok : Status.moreInformation] + part
    }
}
