public import ProximaCore
internal import Synchronization

/// A connection to the card in one slot of a USB CCID reader: APDUs as PC_to_RDR_XfrBlock (``CCIDSlotExchange``),
/// on the reader's queue. Valid for one card presence.
public final class CCIDCardChannel: CardChannel {
    public let reader: ReaderID
    public let atr: [UInt8]
    public let ats: [UInt8] = []
    public let uid: [UInt8] = []
    public let technology: CardTechnology
    public let maximumCommandLength: Int
    public let supportsExtendedLength: Bool

    private let device: CCIDDevice
    private let slot: Int
    private let generation: UInt64
    private let closed = Atomic<Bool>(false)

    init(device: CCIDDevice, slot: Int, card: CCIDCard) {
        self.device = device
        self.slot = slot
        reader = device.slotReaders[slot]
        generation = card.generation
        atr = card.atr
        technology = PseudoATRTechnology.technology(forATR: card.atr)
        supportsExtendedLength = device.descriptor.exchangeLevel == .extendedAPDU
        maximumCommandLength =
            switch device.descriptor.exchangeLevel {
            case .extendedAPDU: 65_544
            // T=1 chains an APDU over as many blocks as it needs.
            case .tpdu: 261
            case .shortAPDU, .character: min(261, device.descriptor.maximumMessageLength - CCID.headerLength)
            }
    }

    deinit {
        if !closed.load(ordering: .relaxed) { device.release(slot: slot) }
    }

    public func transmit(_ command: CommandAPDU) async throws -> ResponseAPDU {
        guard !closed.load(ordering: .relaxed) else {
            throw ProximaError(.invalidArgument, "the channel to \(reader) is closed", reader: reader)
        }
        let bytes = command.bytes
        guard bytes.count <= maximumCommandLength else {
            throw ProximaError(
                .unsupported,
                "\(reader) takes at most \(maximumCommandLength)-byte APDUs; send \(command) with transceive",
                reader: reader
            )
        }
        return try await device.transmit(bytes, slot: slot, generation: generation)
    }

    public func close() async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        device.release(slot: slot)
    }
}

/// A contactless reader's PC/SC Part 3 pseudo-ATR `3B 8n 80 01 …` says ISO 14443; anything else is a contact card.
enum PseudoATRTechnology {
    static func technology(forATR atr: [UInt8]) -> CardTechnology {
        guard atr.count >= 4 else { return .unknown }
        if atr[0] == 0x3B, atr[1] & 0xF0 == 0x80, atr[2] == 0x80, atr[3] == 0x01 {
            return atr[1] & 0x0F == 8 ? .iso14443B : .iso14443A
        }
        return .contact
    }
}
