internal import CPCSCLite
internal import ProximaCore
internal import Synchronization

/// One PC/SC reader's pcsc-lite state, owned by an actor that runs on the reader's ``PCSCReaderExecutor``: the
/// reader's pcsc-lite context, the card handles of its connections, and the buffer answers are read into. Being
/// actor-isolated, none of it can be reached from anywhere but the reader's queue, and the compiler checks that.
///
/// **The context** is established lazily, by the first connection that needs it, and kept: establishing and
/// releasing a context per connection costs pcscd a client thread and several round trips per tap. A context that
/// pcsc-lite reports dead (``PCSCStatus/meansStaleContext``: pcscd stopped or restarted) is released and the next
/// connection establishes a new one; ``releaseContext()`` (the reader vanished, or the transport stopped) releases it
/// after whatever is in flight on the queue. One context per reader keeps readers independent (pcsc-lite serialises
/// the calls of one context), and since the queue is serial and a reader serves one connection at a time, no call
/// on the context ever waits for another one.
///
/// **Blocking.** The methods that call pcsc-lite block; they are reached only through
/// ``withBlockingCall(evenIfCancelled:_:abandoned:)`` and ``submit(_:)``, which put them on the queue as blocks the
/// calling task need not wait for (``PCSCReaderExecutor/perform(evenIfCancelled:_:abandoned:)``), never as actor
/// jobs a task would be stuck in.
actor PCSCReader {
    /// A card connection on the reader.
    private struct Connection {
        var card: SCARDHANDLE
        var activeProtocol: DWORD
    }

    /// How long a transmit that failed, or came back without a status word, waits for pcscd to report the card
    /// gone: readers without card events (vpcd, serial readers) are polled every 400 ms (`PCSCLITE_STATUS_POLL_RATE`).
    static let removalGrace = 600

    /// The reader's PC/SC name.
    nonisolated let name: String
    nonisolated let executor: PCSCReaderExecutor

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private var context: SCARDCONTEXT?
    private var connections: [UInt64: Connection] = [:]
    private var nextConnection: UInt64 = 0
    /// `MAX_BUFFER_SIZE_EXTENDED` bytes, kept for every transmit on the reader; only an answer's data field is copied
    /// out of it.
    private var receiveBuffer = [UInt8](repeating: 0, count: PCSC.maximumBufferSizeExtended)

    init(name: String) {
        self.name = name
        executor = PCSCReaderExecutor(label: "proxima.pcsc.reader.\(name)")
    }

    deinit {
        // Every block on the queue holds a reference, so nothing runs there any more.
        for connection in connections.values { Self.disconnect(connection) }
        if let context { _ = SCardReleaseContext(context) }
    }

    // MARK: Reaching the reader

    /// Runs the blocking `work` isolated to the reader, on its queue; see
    /// ``PCSCReaderExecutor/perform(evenIfCancelled:_:abandoned:)`` for cancellation (`nil`, at once, and `work`'s
    /// value to `abandoned` on the queue).
    nonisolated func withBlockingCall<Value: Sendable>(
        evenIfCancelled: Bool = false,
        _ work: @escaping @Sendable (isolated PCSCReader) -> Value,
        abandoned: @escaping @Sendable (isolated PCSCReader, Value) -> Void = { _, _ in }
    ) async -> Value? {
        await executor.perform(evenIfCancelled: evenIfCancelled) {
            self.assumeIsolated { work($0) }
        } abandoned: { value in
            self.assumeIsolated { abandoned($0, value) }
        }
    }

    /// Runs `work` isolated to the reader, on its queue after whatever is in flight there, without waiting for it.
    nonisolated func submit(_ work: @escaping @Sendable (isolated PCSCReader) -> Void) {
        executor.submit { self.assumeIsolated { work($0) } }
    }

    // MARK: The context

    /// The reader's context, established now if there is none.
    private func establish() -> Result<SCARDCONTEXT, PCSCStatus> {
        if let context { return .success(context) }
        var established = SCARDCONTEXT(0)
        let status = PCSCStatus(SCardEstablishContext(PCSC.scopeSystem, nil, nil, &established))
        guard status.isSuccess else { return .failure(status) }
        context = established
        return .success(established)
    }

    /// Releases `stale` if it is still the reader's context, so the next ``establish()`` makes a new one.
    private func discard(_ stale: SCARDCONTEXT) {
        guard context == stale else { return }
        context = nil
        _ = SCardReleaseContext(stale)
    }

    /// Releases the context (a connection still open on it loses its card handle); the next connection establishes
    /// a new one.
    func releaseContext() {
        guard let released = context else { return }
        context = nil
        connections = [:]
        _ = SCardReleaseContext(released)
    }

    // MARK: Connections

    /// On the reader's context (established now if needed; a dead one is replaced and `SCardConnect` tried once
    /// more), `SCardConnect` (T=0 or T=1), `SCardBeginTransaction`, GET DATA `FF CA 00 00 00` for the UID, then the
    /// ATR: `knownATR()`, the one the monitor read from pcscd's reader state for the card it waited for, when the
    /// monitor has seen no other card since (checked last, so that a swap pcscd reported meanwhile is seen);
    /// otherwise `SCardStatus`.
    func open(shareMode: DWORD, knownATR: () -> [UInt8]?) -> Result<PCSCOpenedCard, PCSCStepFailure> {
        var retried = false
        while true {
            let context: SCARDCONTEXT
            switch establish() {
            case .success(let established): context = established
            case .failure(let status): return .failure(PCSCStepFailure(step: "SCardEstablishContext", status: status))
            }
            var card = SCARDHANDLE(0)
            var activeProtocol = DWORD(0)
            var status = PCSCStatus(
                SCardConnect(context, name, shareMode, PCSC.protocolT0 | PCSC.protocolT1, &card, &activeProtocol)
            )
            if status.meansStaleContext {
                // pcscd restarted since the context was established: once more on a new one.
                discard(context)
                if !retried {
                    retried = true
                    continue
                }
            }
            guard status.isSuccess else { return .failure(PCSCStepFailure(step: "SCardConnect", status: status)) }
            status = PCSCStatus(SCardBeginTransaction(card))
            guard status.isSuccess else {
                _ = SCardDisconnect(card, PCSC.leaveCard)
                if status.meansStaleContext { discard(context) }
                return .failure(PCSCStepFailure(step: "SCardBeginTransaction", status: status))
            }
            let connection = Connection(card: card, activeProtocol: activeProtocol)
            let uid = readUID(connection)
            let atr: [UInt8]
            if let known = knownATR() {
                atr = known
            } else {
                switch Self.cardStatus(card) {
                case .success(let read): atr = read
                case .failure(let status):
                    Self.disconnect(connection)
                    return .failure(PCSCStepFailure(step: "SCardStatus", status: status))
                }
            }
            nextConnection += 1
            connections[nextConnection] = connection
            return .success(PCSCOpenedCard(connection: nextConnection, atr: atr, uid: uid))
        }
    }

    /// Ends the transaction and disconnects, leaving the card as it is; errors are moot. The context is kept for
    /// the reader's next connection.
    func close(_ connection: UInt64) {
        guard let closed = connections.removeValue(forKey: connection) else { return }
        Self.disconnect(closed)
    }

    private static func disconnect(_ connection: Connection) {
        _ = SCardEndTransaction(connection.card, PCSC.leaveCard)
        _ = SCardDisconnect(connection.card, PCSC.leaveCard)
    }

    /// One `SCardTransmit` with the PCI of the protocol the card negotiated.
    ///
    /// - Throws: the ``PCSCStatus`` of a failed call (`SCARD_W_REMOVED_CARD` when pcscd reports the card gone within
    ///   ``removalGrace`` ms after a failure or an answer without status word; `SCARD_E_INVALID_HANDLE` after the
    ///   connection was closed); `ProximaError.malformedData` for an answer shorter than a status word from a card
    ///   still present.
    func transmit(_ command: [UInt8], on connection: UInt64) throws -> ResponseAPDU {
        guard let connection = connections[connection] else { throw PCSCStatus.invalidHandle }
        let pci = Self.pci(for: connection.activeProtocol)
        var received = DWORD(receiveBuffer.count)
        let status = command.withUnsafeBufferPointer { send in
            receiveBuffer.withUnsafeMutableBufferPointer { receive in
                PCSCStatus(
                    SCardTransmit(
                        connection.card,
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
        guard status.isSuccess else {
            if status.errorCode == .transmitFailed, cardLeft(connection) { throw PCSCStatus.removedCard }
            throw status
        }
        let count = Int(min(received, DWORD(receiveBuffer.count)))
        guard count >= 2 else {
            // vpcd answers the command in flight with 0 bytes, as a success, when the card leaves.
            if cardLeft(connection) { throw PCSCStatus.removedCard }
            throw ProximaError(.malformedData, "the card answered with \(count) bytes, no status word")
        }
        // The data field is the only copy out of the buffer.
        return ResponseAPDU(
            data: Array(receiveBuffer[..<(count - 2)]),
            status: StatusWord(receiveBuffer[count - 2], receiveBuffer[count - 1])
        )
    }

    /// Whether the card left the reader, waiting up to ``removalGrace`` ms for pcscd to notice.
    private func cardLeft(_ connection: Connection) -> Bool {
        if case .failure(.removedCard) = Self.cardStatus(connection.card) { return true }
        guard let context else { return false }
        return name.withCString { name in
            var reader = SCARD_READERSTATE()
            reader.szReader = name
            reader.dwCurrentState = PCSC.statePresent
            let status = PCSCStatus(SCardGetStatusChange(context, DWORD(Self.removalGrace), &reader, 1))
            return status.isSuccess && reader.dwEventState & PCSC.statePresent == 0
        }
    }

    /// PC/SC Part 3 §3.2.2.1.3 GET DATA with P1 `00`: the card's UID (or PUPI, IDm), `[]` when refused.
    private func readUID(_ connection: Connection) -> [UInt8] {
        let command: [UInt8] = [0xFF, 0xCA, 0x00, 0x00, 0x00]
        var received = DWORD(receiveBuffer.count)
        let status = receiveBuffer.withUnsafeMutableBufferPointer { receive in
            PCSCStatus(
                SCardTransmit(
                    connection.card,
                    Self.pci(for: connection.activeProtocol),
                    command,
                    DWORD(command.count),
                    nil,
                    receive.baseAddress,
                    &received
                )
            )
        }
        let count = Int(min(received, DWORD(receiveBuffer.count)))
        guard status.isSuccess, count >= 2, receiveBuffer[count - 2] == 0x90, receiveBuffer[count - 1] == 0x00 else {
            return []
        }
        return Array(receiveBuffer[..<(count - 2)])
    }

    /// `SCardStatus`: the ATR, or the status that says why there is none.
    private static func cardStatus(_ card: SCARDHANDLE) -> Result<[UInt8], PCSCStatus> {
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

    /// The send PCI of the negotiated protocol.
    private static func pci(for activeProtocol: DWORD) -> UnsafePointer<SCARD_IO_REQUEST> {
        switch activeProtocol {
        case PCSC.protocolT0: cpcsc_pci_t0()
        case PCSC.protocolRaw: cpcsc_pci_raw()
        default: cpcsc_pci_t1()
        }
    }
}

/// What ``PCSCReader/open(shareMode:knownATR:)`` returns: plain values, so they can cross from the queue. The card
/// handle stays in the reader actor, under `connection`.
struct PCSCOpenedCard: Sendable {
    var connection: UInt64
    var atr: [UInt8]
    var uid: [UInt8]
}

/// A pcsc-lite call that failed, and how.
struct PCSCStepFailure: Error, Sendable {
    var step: String
    var status: PCSCStatus
}

/// The readers' ``PCSCReader`` actors by PC/SC name, made on first use and kept: a reader that comes back after
/// pcscd restarted gets the same queue (and a new context).
final class PCSCReaders: Sendable {
    private let readers = Mutex<[String: PCSCReader]>([:])

    func reader(named name: String) -> PCSCReader {
        readers.withLock { readers in
            if let reader = readers[name] { return reader }
            let reader = PCSCReader(name: name)
            readers[name] = reader
            return reader
        }
    }

    /// Releases the context of the reader called `name`, if it has one (the reader vanished).
    func release(readerNamed name: String) {
        readers.withLock { $0[name] }?.submit { $0.releaseContext() }
    }

    /// Releases every reader's context (the transport stopped).
    func releaseAll() {
        for reader in readers.withLock({ Array($0.values) }) { reader.submit { $0.releaseContext() } }
    }
}
