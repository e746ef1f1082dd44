public import ProximaCore
internal import Synchronization

/// A card on a reader of an ``ExternalTransport``: each transmit is one `transmit` request to the driver.
///
/// After ``close()`` (which sends `disconnect`), or once the driver failed, transmits throw: `transmitFailed` and
/// `readerVanished` respectively.
public final class ExternalCardChannel: CardChannel {
    public let reader: ReaderID
    public let atr: [UInt8]
    public let ats: [UInt8]
    public let uid: [UInt8]
    public let technology: CardTechnology
    public let maximumCommandLength: Int
    public let supportsExtendedLength: Bool

    private let driverReader: String
    /// `,"reader":"<driverReader>"` as JSON, written into every `transmit` frame.
    private let readerMember: [UInt8]
    /// How a `transmit` call is named if it hangs.
    private let transmitWhat: String
    private let connection: DriverConnection
    private let closed = Atomic<Bool>(false)

    /// The driver connection's thread: a tap that runs there writes each `transmit` frame from it and is resumed by
    /// the answer inline, after the read that brought it, instead of on the cooperative pool (one thread wake-up per
    /// APDU fewer; see ``LinkExecutor``).
    public var preferredTaskExecutor: (any TaskExecutor)? { connection.executor }

    /// What the connection's thread ran so far, for the benchmarks' hop counts.
    package var linkStatistics: LinkExecutor.Statistics { connection.executor.statistics }

    init(reader: ReaderID, driverReader: String, card: DriverCardInfo, connection: DriverConnection) {
        self.reader = reader
        self.driverReader = driverReader
        readerMember = KernelMessage.encodedReader(driverReader)
        transmitWhat = "transmit on reader \(reader)"
        self.connection = connection
        atr = card.atr
        ats = card.ats
        uid = card.uid
        technology = card.technology
        maximumCommandLength = card.maximumCommandLength
        supportsExtendedLength = card.extendedLength
    }

    /// - Throws: `ProximaError` `transmitFailed` (closed channel, or the driver said so), `unsupported` (an
    ///   extended-length APDU on a short-only reader), `cardRemoved`, `cardTimeout`, `readerVanished` (the driver
    ///   failed or was stopped), `cancelled`.
    public func transmit(_ command: CommandAPDU) async throws -> ResponseAPDU {
        guard !closed.load(ordering: .relaxed) else {
            throw ProximaError(.transmitFailed, "the connection to the card was closed", reader: reader)
        }
        if command.isExtended && !supportsExtendedLength {
            throw ProximaError(.unsupported, "the reader takes no extended-length APDUs", reader: reader)
        }
        let body: JSONValue
        do {
            let apdu = command.bytes
            let readerMember = readerMember
            body = try await connection.call(what: transmitWhat) { id, milliseconds in
                KernelMessage.transmit(
                    id: id,
                    encodedReader: readerMember,
                    apdu: apdu,
                    timeoutMilliseconds: milliseconds
                )
            }
        } catch let error as ProximaError {
            throw error.at(reader: reader)
        }
        guard case .string(let hex)? = body["apdu"], hex.utf8.count <= 2 * 65_538, let bytes = [UInt8](hex: hex),
            bytes.count >= 2
        else {
            let fault = DriverFault(.malformed, "transmit answer: expected \"apdu\" with at least 2 bytes as hex")
            connection.fail(fault)
            throw DriverConnection.vanished(fault, pluginID: connection.pluginID).at(reader: reader)
        }
        return try ResponseAPDU(bytes: bytes)
    }

    /// Sends a reader-specific control command (`control` request; PC/SC's `SCardControl`) and returns its answer.
    ///
    /// - Parameters:
    ///   - code: the control code, as the driver documents it (0…2³²−1).
    ///   - data: the input bytes.
    /// - Throws: as ``transmit(_:)``; `invalidArgument` for a code out of range.
    public func control(code: Int64, data: [UInt8] = []) async throws -> [UInt8] {
        guard (0...Int64(UInt32.max)).contains(code) else {
            throw ProximaError(.invalidArgument, "control code \(code) is out of range 0…4294967295", reader: reader)
        }
        guard !closed.load(ordering: .relaxed) else {
            throw ProximaError(.transmitFailed, "the connection to the card was closed", reader: reader)
        }
        let body: JSONValue
        do {
            body = try await connection.call(
                "control",
                [("reader", .string(driverReader)), ("code", .integer(code)), ("data", .string(data.hexString))],
                what: "control on reader \(reader)"
            )
        } catch let error as ProximaError {
            throw error.at(reader: reader)
        }
        switch body["data"] {
        case nil:
            return []
        case .string(let hex)?:
            if hex.utf8.count <= 2 * 65_536, let bytes = [UInt8](hex: hex) { return bytes }
            fallthrough
        default:
            let fault = DriverFault(.malformed, "control answer: \"data\" is not hex")
            connection.fail(fault)
            throw DriverConnection.vanished(fault, pluginID: connection.pluginID).at(reader: reader)
        }
    }

    /// Sends `disconnect` (the card may stay in the field); errors are ignored, since nothing more is sent on it.
    public func close() async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        _ = try? await connection.call(
            "disconnect",
            [("reader", .string(driverReader))],
            what: "disconnect on reader \(reader)"
        )
    }
}
