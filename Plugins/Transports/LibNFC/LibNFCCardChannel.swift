public import ProximaCore
internal import Synchronization

/// A connection to the card in a libnfc device's field: ISO-DEP (ISO/IEC 14443-4) APDUs through
/// `nfc_initiator_transceive_bytes`, on the device's queue, each with the configured timeout.
///
/// A PN53x carries at most 262 bytes per InDataExchange frame and libnfc 1.8 takes at most 264 bytes back, so the
/// channel is short-APDU only (261-byte commands): ``ProximaCore/CardChannel/transceive(_:options:)`` chains longer
/// commands and fetches long answers with GET RESPONSE. Valid for one card presence: once the card has left, every
/// transmit throws `cardRemoved`. ``close()`` hands the device back to its poll loop; the card may stay in the field.
public final class LibNFCCardChannel: CardChannel {
    public let reader: ReaderID
    /// The PC/SC Part 3 pseudo-ATR built from the ATS historical bytes (Type A) or the ATQB (Type B).
    public let atr: [UInt8]
    public let ats: [UInt8]
    public let uid: [UInt8]
    public let technology: CardTechnology
    public let maximumCommandLength = 261
    public let supportsExtendedLength = false
    /// The libnfc connstring of the device.
    public let connstring: String
    /// The device's queue: the kernel runs a tap's body there, so its transmits do not hop between the cooperative
    /// pool and the device's thread.
    public var preferredTaskExecutor: (any TaskExecutor)? { device.taskExecutor }

    /// How many APDUs of this device called libnfc on its own thread (the task preferred its executor) and how many
    /// hopped onto it from elsewhere.
    package var transmitPaths: (direct: Int, hopped: Int) {
        (device.directTransmits.load(ordering: .relaxed), device.hoppedTransmits.load(ordering: .relaxed))
    }

    private let device: LibNFCDevice
    private let generation: UInt64
    private let closed = Atomic<Bool>(false)

    init(device: LibNFCDevice, card: LibNFCCard) {
        self.device = device
        reader = device.reader
        connstring = device.connstring
        generation = card.generation
        atr = card.atr
        ats = card.ats
        uid = card.uid
        technology = card.technology
    }

    deinit {
        if !closed.load(ordering: .relaxed) { device.release() }
    }

    /// - Throws: `ProximaError` `cardRemoved`, `cardTimeout`, `transmitFailed` (a corrupted frame the device
    ///   survived), `readerFaulted` (the device stopped answering), `malformedData` (an answer without a status
    ///   word), `unsupported` (an extended APDU), or `invalidArgument` after ``close()``.
    public func transmit(_ command: CommandAPDU) async throws -> ResponseAPDU {
        guard !closed.load(ordering: .relaxed) else {
            throw ProximaError(.invalidArgument, "the channel to '\(connstring)' is closed", reader: reader)
        }
        let bytes = command.bytes
        guard bytes.count <= maximumCommandLength, !command.isExtended else {
            throw ProximaError(
                .unsupported,
                "libnfc device '\(connstring)' takes short APDUs only; send \(command) with transceive, which chains it",
                reader: reader
            )
        }
        return try await device.transmit(bytes, generation: generation)
    }

    public func close() async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        device.release()
    }
}
