internal import CPCSCLite
public import ProximaCore
internal import Synchronization

/// A connection to the card on one PC/SC reader: a card handle on the reader's pcsc-lite context (one per reader,
/// kept across connections), and a PC/SC transaction held from connect to ``close()``. The handle and the context
/// belong to the reader's ``PCSCReader`` actor; the channel only names its connection there.
///
/// **Threads.** Every pcsc-lite call of the connection runs on its reader's serial executor
/// (``PCSCReaderExecutor``), off Swift's cooperative pool: ``transmit(_:)`` is one `SCardTransmit` there, with the
/// PCI of the protocol the card negotiated, read into the reader's `MAX_BUFFER_SIZE_EXTENDED` buffer, of which only
/// the data field is copied out. ``preferredTaskExecutor`` is the same executor's task-executor face: the kernel runs
/// a tap's body on it, so a capability's code runs on the reader's thread and a transmit does not leave it. A
/// transmit whose task is cancelled (a tap's deadline) returns at once with `cancelled`, leaving a blocked
/// `SCardTransmit` (a mute card) to finish on the queue (the task goes on on the global executor meanwhile); so does
/// ``close()``.
///
/// **Extended length** follows ``PCSCConfiguration/extendedLength``. With `auto`, the connection starts out
/// reporting ``supportsExtendedLength`` `true`; when its *first* extended APDU is refused, either with a PC/SC
/// error that says the reader could not take it (`SCARD_E_NOT_TRANSACTED`, `SCARD_E_INSUFFICIENT_BUFFER`,
/// `SCARD_E_INVALID_PARAMETER`, `SCARD_E_INVALID_VALUE`, `SCARD_E_UNSUPPORTED_FEATURE`) or with `6700` (wrong
/// length), the connection turns short-only for good: it sends that command again in short form (Le capped at 256,
/// a data field over 255 bytes as an ISO/IEC 7816-4 command chain) and returns that answer, and from then on
/// reports ``supportsExtendedLength`` `false`, so ``ProximaCore/CardChannel/transceive(_:options:)`` chains and uses
/// GET RESPONSE itself. A later extended APDU sent with ``transmit(_:)`` directly throws `unsupported`, as on a
/// reader configured `never`.
///
/// **Errors** are `ProximaError`s mapped from ``PCSCStatus`` (``PCSCStatus/errorCode``) and name the reader and
/// the pcsc-lite call. A transmit that fails with a status that maps to `transmitFailed` asks `SCardStatus` whether
/// the card was removed meanwhile, and reports `cardRemoved` if so. After ``close()`` transmits throw
/// `transmitFailed`.
public final class PCSCCardChannel: CardChannel {
    public let reader: ReaderID
    /// The reader's PC/SC name.
    public let readerName: String
    public let atr: [UInt8]
    /// Always empty: PC/SC readers do not report the ATS in a portable way.
    public let ats: [UInt8]
    /// From the PC/SC Part 3 pseudo-APDU GET DATA `FF CA 00 00 00`, sent once after connecting; empty when the
    /// reader or card refused it.
    public let uid: [UInt8]
    /// From the (pseudo-)ATR; see ``PseudoATR``.
    public let technology: CardTechnology

    private let connection: PCSCConnection
    private let extendedLength: Atomic<Bool>
    /// `true` until the first extended APDU of an `auto` connection has been sent.
    private let probingExtendedLength: Atomic<Bool>
    private let closed = Atomic<Bool>(false)

    public var supportsExtendedLength: Bool { extendedLength.load(ordering: .relaxed) }

    public var maximumCommandLength: Int {
        supportsExtendedLength ? PCSC.maximumExtendedCommandLength : PCSC.maximumShortCommandLength
    }

    /// The reader's executor as a task executor: a tap's body that prefers it runs on the reader's thread, where
    /// each transmit runs too.
    public var preferredTaskExecutor: (any TaskExecutor)? { connection.reader.executor.taskExecutor }

    /// What the reader's executor ran so far (for the benchmark's hop count and the tests).
    package var executorStatistics: PCSCExecutorStatistics { connection.reader.executor.statistics }

    init(
        reader: ReaderID,
        opened: PCSCOpenedCard,
        on pcscReader: PCSCReader,
        extendedLength: PCSCConfiguration.ExtendedLength
    ) {
        self.reader = reader
        readerName = pcscReader.name
        atr = opened.atr
        ats = []
        uid = opened.uid
        technology = PseudoATR.technology(forATR: opened.atr)
        connection = PCSCConnection(reader: pcscReader, id: opened.connection)
        self.extendedLength = Atomic(extendedLength != .never)
        probingExtendedLength = Atomic(extendedLength == .auto)
    }

    public func transmit(_ command: CommandAPDU) async throws -> ResponseAPDU {
        guard !closed.load(ordering: .relaxed) else {
            throw ProximaError(
                .transmitFailed,
                "transmit on '\(readerName)' after the channel was closed",
                reader: reader
            )
        }
        guard command.isExtended else { return try await send(command.bytes) }
        guard supportsExtendedLength else {
            throw ProximaError(
                .unsupported,
                "reader '\(readerName)' takes short APDUs only; send \(command) with transceive, which chains it",
                reader: reader
            )
        }
        // Only the first extended APDU of the connection probes; exchange makes that true for one caller only.
        guard probingExtendedLength.exchange(false, ordering: .relaxed) else { return try await send(command.bytes) }
        let response: ResponseAPDU
        do {
            response = try await connection.transmit(command.bytes)
        } catch let status as PCSCStatus where status.meansExtendedLengthRefused {
            return try await fallBackToShort(command)
        } catch {
            throw mapped(error)
        }
        if response.status == .wrongLength { return try await fallBackToShort(command) }
        return response
    }

    public func close() async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        await connection.close()
    }

    private func send(_ bytes: [UInt8]) async throws -> ResponseAPDU {
        do {
            return try await connection.transmit(bytes)
        } catch {
            throw mapped(error)
        }
    }

    private func mapped(_ error: any Error) -> any Error {
        if let status = error as? PCSCStatus {
            return status.proximaError(step: "SCardTransmit", readerName: readerName, reader: reader)
        }
        if let error = error as? ProximaError { return error.at(reader: reader) }
        return error
    }

    /// Marks the connection short-only and sends `command` again as short APDUs (ISO/IEC 7816-4 §5.1.1.1).
    private func fallBackToShort(_ command: CommandAPDU) async throws -> ResponseAPDU {
        extendedLength.store(false, ordering: .relaxed)
        var command = command
        if let expected = command.expectedLength, expected > CommandAPDU.maxShortExpected {
            command.expectedLength = CommandAPDU.maxShortExpected
        }
        var start = 0
        repeat {
            let end = min(start + CommandAPDU.maxShortData, command.data.count)
            let isLast = end == command.data.count
            let segment = try CommandAPDU(
                cla: isLast ? command.cla : command.cla | 0x10,
                ins: command.ins,
                p1: command.p1,
                p2: command.p2,
                data: Array(command.data[start..<end]),
                expectedLength: isLast ? command.expectedLength : nil
            )
            let response = try await send(segment.bytes)
            if isLast || response.status != .success { return response }
            start = end
        } while true
    }
}

extension PCSCStatus {
    /// Statuses with which a reader refuses an APDU it cannot take (as opposed to a card or link problem).
    var meansExtendedLengthRefused: Bool {
        switch self {
        case .notTransacted, .insufficientBuffer, .invalidParameter, .invalidValue, .unsupportedFeature: true
        default: false
        }
    }

    /// Statuses that say the pcsc-lite context itself is dead (pcscd stopped or restarted, the socket broke, or
    /// pcsc-lite no longer knows the context): it is released and a new one established.
    var meansStaleContext: Bool {
        switch self {
        case .noService, .serviceStopped, .invalidHandle, .communicationError: true
        default: false
        }
    }
}

/// One connection of a ``PCSCReader``: its id there, closed exactly once (by ``close()``, or when dropped).
///
/// ``transmit(_:)`` can be abandoned: when the calling task is cancelled (a tap's deadline), it returns at once with
/// `cancelled` while the blocked `SCardTransmit` (a mute card: pcsc-lite cannot interrupt it) finishes on the queue.
/// ``close()`` waits for the queue unless cancelled too; the queue runs it after whatever is still in flight, and
/// the next connection on the reader queues behind it.
final class PCSCConnection: Sendable {
    let reader: PCSCReader
    let id: UInt64
    private let isOpen = Atomic<Bool>(true)

    init(reader: PCSCReader, id: UInt64) {
        self.reader = reader
        self.id = id
    }

    deinit {
        // A channel dropped without close(): release the connection on its queue, never on the caller's thread.
        guard isOpen.load(ordering: .relaxed) else { return }
        reader.submit { [id] in $0.close(id) }
    }

    /// One `SCardTransmit`, on the reader's queue.
    ///
    /// - Throws: what ``PCSCReader/transmit(_:on:)`` throws; `ProximaError.cancelled` when the calling task was
    ///   cancelled first.
    func transmit(_ command: [UInt8]) async throws -> ResponseAPDU {
        let outcome = await reader.withBlockingCall { [id] reader in
            Result { try reader.transmit(command, on: id) }
        }
        guard let outcome else { throw ProximaError(.cancelled, "cancelled while the card was answering") }
        return try outcome.get()
    }

    /// `SCardEndTransaction` and `SCardDisconnect`, both leaving the card as it is (the reader's context stays); on
    /// the reader's queue, after whatever is in flight there. Waits for it unless the calling task is cancelled (a
    /// tap past its deadline must not wait for a mute card): the close then still happens, later.
    func close() async {
        guard isOpen.exchange(false, ordering: .relaxed) else { return }
        _ = await reader.withBlockingCall(evenIfCancelled: true) { [id] reader in reader.close(id) }
    }
}
