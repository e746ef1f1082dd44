internal import CPCSCLite
public import ProximaCore
internal import Synchronization

/// A connection to the card on one PC/SC reader: a card handle on the reader's pcsc-lite context (one per reader,
/// kept across connections; see ``PCSCReaderContext``), and a PC/SC transaction held from connect to ``close()``.
///
/// **Threads.** Every pcsc-lite call of the connection runs on its reader's serial queue, off Swift's cooperative
/// pool: ``transmit(_:)`` is one hop there (``PCSCCardSession``), one `SCardTransmit` with the PCI of the protocol
/// the card negotiated, and the hop back. The answer is read into a `MAX_BUFFER_SIZE_EXTENDED` buffer the connection
/// keeps, and only its data field is copied out. A transmit whose task is cancelled (a tap's deadline) returns at
/// once with `cancelled`, leaving a blocked `SCardTransmit` (a mute card) to finish on the queue; so does ``close()``.
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

    private let session: PCSCCardSession
    private let extendedLength: Atomic<Bool>
    /// `true` until the first extended APDU of an `auto` connection has been sent.
    private let probingExtendedLength: Atomic<Bool>
    private let closed = Atomic<Bool>(false)

    public var supportsExtendedLength: Bool { extendedLength.load(ordering: .relaxed) }

    public var maximumCommandLength: Int {
        supportsExtendedLength ? PCSC.maximumExtendedCommandLength : PCSC.maximumShortCommandLength
    }

    init(
        reader: ReaderID,
        readerName: String,
        opened: PCSCOpenedCard,
        queue: PCSCQueue,
        extendedLength: PCSCConfiguration.ExtendedLength
    ) {
        self.reader = reader
        self.readerName = readerName
        atr = opened.atr
        ats = []
        uid = opened.uid
        technology = PseudoATR.technology(forATR: opened.atr)
        session = PCSCCardSession(opened: opened, readerName: readerName, queue: queue)
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
            response = try await session.transmit(command.bytes)
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
        await session.close()
    }

    private func send(_ bytes: [UInt8]) async throws -> ResponseAPDU {
        do {
            return try await session.transmit(bytes)
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

/// What ``PCSCConnector/open(reader:readerName:shareMode:knownATR:)`` returns: plain values, so they can cross from
/// the queue. `context` is the reader's (``PCSCReaderContext``), not the connection's own.
struct PCSCOpenedCard: Sendable {
    var context: SCARDCONTEXT
    var card: SCARDHANDLE
    var activeProtocol: DWORD
    var atr: [UInt8]
    var uid: [UInt8]
}

/// A pcsc-lite call that failed, and how.
struct PCSCStepFailure: Error, Sendable {
    var step: String
    var status: PCSCStatus
}

/// Opening and closing connections; blocking, so only ever called on a reader's queue.
enum PCSCConnector {
    /// On the reader's context (established now if needed; a dead one is replaced and `SCardConnect` tried once
    /// more), `SCardConnect` (T=0 or T=1), `SCardBeginTransaction`, GET DATA `FF CA 00 00 00` for the UID, then the
    /// ATR: `knownATR()`, the one the monitor read from pcscd's reader state for the card it waited for, when the
    /// monitor has seen no other card since (checked last, so that a swap pcscd reported meanwhile is seen);
    /// otherwise `SCardStatus`.
    static func open(
        reader: PCSCReaderContext,
        readerName: String,
        shareMode: DWORD,
        knownATR: () -> [UInt8]?
    ) -> Result<PCSCOpenedCard, PCSCStepFailure> {
        var retried = false
        while true {
            let context: SCARDCONTEXT
            switch reader.establish() {
            case .success(let established): context = established
            case .failure(let status): return .failure(PCSCStepFailure(step: "SCardEstablishContext", status: status))
            }
            var card = SCARDHANDLE(0)
            var activeProtocol = DWORD(0)
            var status = PCSCStatus(
                SCardConnect(context, readerName, shareMode, PCSC.protocolT0 | PCSC.protocolT1, &card, &activeProtocol)
            )
            if status.meansStaleContext {
                // pcscd restarted since the context was established: once more on a new one.
                reader.discard(context)
                if !retried {
                    retried = true
                    continue
                }
            }
            guard status.isSuccess else { return .failure(PCSCStepFailure(step: "SCardConnect", status: status)) }
            status = PCSCStatus(SCardBeginTransaction(card))
            guard status.isSuccess else {
                _ = SCardDisconnect(card, PCSC.leaveCard)
                if status.meansStaleContext { reader.discard(context) }
                return .failure(PCSCStepFailure(step: "SCardBeginTransaction", status: status))
            }
            var opened = PCSCOpenedCard(context: context, card: card, activeProtocol: activeProtocol, atr: [], uid: [])
            opened.uid = readUID(card: card, activeProtocol: activeProtocol)
            if let atr = knownATR() {
                opened.atr = atr
                return .success(opened)
            }
            switch cardStatus(card) {
            case .success(let atr):
                opened.atr = atr
                return .success(opened)
            case .failure(let status):
                close(opened)
                return .failure(PCSCStepFailure(step: "SCardStatus", status: status))
            }
        }
    }

    /// Ends the transaction and disconnects, leaving the card as it is; errors are moot. The reader's context is
    /// kept for its next connection.
    static func close(_ opened: PCSCOpenedCard) {
        _ = SCardEndTransaction(opened.card, PCSC.leaveCard)
        _ = SCardDisconnect(opened.card, PCSC.leaveCard)
    }

    /// `SCardStatus`: the ATR, or the status that says why there is none.
    static func cardStatus(_ card: SCARDHANDLE) -> Result<[UInt8], PCSCStatus> {
        var name = [CChar](repeating: 0, count: 512)
        var nameLength = DWORD(name.count)
        var readerState = DWORD(0)
        var activeProtocol = DWORD(0)
        var atr = [UInt8](repeating: 0, count: Int(MAX_ATR_SIZE))
        var atrLength = DWORD(atr.count)
        let status = PCSCStatus(
            SCardStatus(card, &name, &nameLength, &readerState, &activeProtocol, &atr, &atrLength)
        )
        guard status.isSuccess else { return .failure(status) }
        return .success(Array(atr.prefix(Int(min(atrLength, DWORD(atr.count))))))
    }

    /// PC/SC Part 3 §3.2.2.1.3 GET DATA with P1 `00`: the card's UID (or PUPI, IDm), `[]` when refused.
    private static func readUID(card: SCARDHANDLE, activeProtocol: DWORD) -> [UInt8] {
        let command: [UInt8] = [0xFF, 0xCA, 0x00, 0x00, 0x00]
        var answer = [UInt8](repeating: 0, count: 258)
        var length = DWORD(answer.count)
        let status = PCSCStatus(
            SCardTransmit(card, pci(for: activeProtocol), command, DWORD(command.count), nil, &answer, &length)
        )
        let count = Int(min(length, DWORD(answer.count)))
        guard status.isSuccess, count >= 2, answer[count - 2] == 0x90, answer[count - 1] == 0x00 else { return [] }
        return Array(answer[..<(count - 2)])
    }

    /// The send PCI of the negotiated protocol.
    static func pci(for activeProtocol: DWORD) -> UnsafePointer<SCARD_IO_REQUEST> {
        switch activeProtocol {
        case PCSC.protocolT0: cpcsc_pci_t0()
        case PCSC.protocolRaw: cpcsc_pci_raw()
        default: cpcsc_pci_t1()
        }
    }
}

/// The pcsc-lite state of one connection. Every pcsc-lite call runs on the reader's serial queue; the state sits
/// behind a mutex that only code on that queue takes (so it is never contended).
///
/// ``transmit(_:)`` can be abandoned: when the calling task is cancelled (a tap's deadline), it returns at once with
/// `cancelled` while the blocked `SCardTransmit` (a mute card: pcsc-lite cannot interrupt it) finishes on the queue.
/// ``close()`` waits for the queue unless cancelled too; the queue runs it after whatever is still in flight, and
/// the next connection on the reader queues behind it.
final class PCSCCardSession: Sendable {
    /// How long a transmit that failed, or came back without a status word, waits for pcscd to report the card
    /// gone: readers without card events (vpcd, serial readers) are polled every 400 ms (`PCSCLITE_STATUS_POLL_RATE`).
    static let removalGrace = 600

    private let queue: PCSCQueue
    private let opened: PCSCOpenedCard
    private let readerName: String
    /// Taken only on the queue.
    private let receiveBuffer: Mutex<[UInt8]>
    private let isOpen = Atomic<Bool>(true)

    init(opened: PCSCOpenedCard, readerName: String, queue: PCSCQueue) {
        self.queue = queue
        self.opened = opened
        self.readerName = readerName
        receiveBuffer = Mutex([UInt8](repeating: 0, count: PCSC.maximumBufferSizeExtended))
    }

    deinit {
        // A channel dropped without close(): release the connection on its queue, never on the caller's thread.
        guard isOpen.load(ordering: .relaxed) else { return }
        let opened = opened
        queue.queue.async { PCSCConnector.close(opened) }
    }

    /// One `SCardTransmit`, on the reader's queue.
    ///
    /// - Throws: the ``PCSCStatus`` of a failed call (`SCARD_W_REMOVED_CARD` when pcscd reports the card gone within
    ///   ``removalGrace`` ms after a failure or an answer without status word); `ProximaError.malformedData` for an
    ///   answer shorter than a status word from a card still present; `ProximaError.cancelled` when the calling task
    ///   was cancelled first.
    func transmit(_ command: [UInt8]) async throws -> ResponseAPDU {
        let outcome = await queue.perform { [self] in
            Result { try transmitBlocking(command) }
        } abandoned: { _ in
        }
        guard let outcome else { throw ProximaError(.cancelled, "cancelled while the card was answering") }
        return try outcome.get()
    }

    private func transmitBlocking(_ command: [UInt8]) throws -> ResponseAPDU {
        let card = opened.card
        let pci = PCSCConnector.pci(for: opened.activeProtocol)
        guard isOpen.load(ordering: .relaxed) else { throw PCSCStatus.invalidHandle }
        let (status, received, response) = receiveBuffer.withLock { buffer -> (PCSCStatus, Int, ResponseAPDU?) in
            var received = DWORD(buffer.count)
            let status = command.withUnsafeBufferPointer { send in
                buffer.withUnsafeMutableBufferPointer { receive in
                    PCSCStatus(
                        SCardTransmit(
                            card,
                            pci,
                            send.baseAddress,
                            DWORD(send.count),
                            nil,
                            receive.baseAddress,
                            &received
                        )
                    )
                }
            }
            let count = Int(min(received, DWORD(buffer.count)))
            guard status.isSuccess, count >= 2 else { return (status, count, nil) }
            // The data field is the only copy out of the buffer.
            let response = ResponseAPDU(
                data: Array(buffer[..<(count - 2)]),
                status: StatusWord(buffer[count - 2], buffer[count - 1])
            )
            return (status, count, response)
        }
        guard status.isSuccess else {
            if status.errorCode == .transmitFailed, cardLeft() { throw PCSCStatus.removedCard }
            throw status
        }
        guard let response else {
            // vpcd answers the command in flight with 0 bytes, as a success, when the card leaves.
            if cardLeft() { throw PCSCStatus.removedCard }
            throw ProximaError(.malformedData, "the card answered with \(received) bytes, no status word")
        }
        return response
    }

    /// Whether the card left the reader, waiting up to ``removalGrace`` ms for pcscd to notice.
    private func cardLeft() -> Bool {
        if case .failure(.removedCard) = PCSCConnector.cardStatus(opened.card) { return true }
        return readerName.withCString { name in
            var reader = SCARD_READERSTATE()
            reader.szReader = name
            reader.dwCurrentState = PCSC.statePresent
            let status = PCSCStatus(SCardGetStatusChange(opened.context, DWORD(Self.removalGrace), &reader, 1))
            return status.isSuccess && reader.dwEventState & PCSC.statePresent == 0
        }
    }

    /// `SCardEndTransaction` and `SCardDisconnect`, both leaving the card as it is (the reader's context stays); on
    /// the reader's queue, after whatever is in flight there. Waits for it unless the calling task is cancelled (a
    /// tap past its deadline must not wait for a mute card): the close then still happens, later.
    func close() async {
        guard isOpen.exchange(false, ordering: .relaxed) else { return }
        let opened = opened
        let queue = queue.queue
        let handoff = Handoff<Bool>()
        await withTaskCancellationHandler {
            _ = await withCheckedContinuation { (continuation: CheckedContinuation<Bool?, Never>) in
                // Enqueued whether or not the task was cancelled already (install then resumes at once).
                _ = handoff.install(continuation)
                queue.async {
                    PCSCConnector.close(opened)
                    _ = handoff.deliver(true)
                }
            }
        } onCancel: {
            handoff.cancel()
        }
    }
}
