internal import CPCSCLite
public import ProximaCore
internal import Synchronization

/// The PC/SC transport: the readers pcscd (pcsc-lite) serves, found at run time.
///
/// **Readers.** ``run()`` watches pcscd (see ``PCSCReaderMonitor``): readers selected by
/// ``PCSCConfiguration/readerNames`` are reported `.appeared` / `.vanished` as pcscd lists them, and cards
/// `.cardPresent` / `.cardRemoved`. A reader's id is ``PCSCConfiguration/readerIDPrefix`` (default: the plugin id
/// and `/`) followed by its PC/SC name. When pcscd is not running, ``run()`` retries every 100 ms, doubling up to
/// 2 s; when it stops while watched, every reader is reported `.vanished` and comes back `.appeared` once pcscd
/// is back, without restarting anything.
///
/// **Threads.** The watch loop blocks in `SCardGetStatusChange` on a queue and pcsc-lite context of its own. Each
/// reader is a ``PCSCReader`` actor on a serial executor of its own (``PCSCReaderExecutor``), on which all pcsc-lite
/// calls of its connections run (connect, transmit, close), on one pcsc-lite context per reader that the actor
/// owns: established lazily by the first connection, reused by the next ones, replaced when pcsc-lite reports it
/// dead (`SCARD_E_NO_SERVICE`, `SCARD_E_SERVICE_STOPPED`, `SCARD_E_INVALID_HANDLE`, `SCARD_F_COMM_ERROR`), and
/// released when the reader vanishes or ``run()`` returns. So no blocking call runs on Swift's cooperative pool,
/// and readers never wait for each other. A channel offers the reader's executor as its
/// ``PCSCCardChannel/preferredTaskExecutor``, so a tap's body runs on the reader's thread too. Nothing calls
/// `SCardCancel` on a reader's context: a connect or transmit whose task is cancelled is abandoned instead (it returns at once; the blocked call finishes on the queue, and what it opened is closed
/// there). Cancelling ``run()`` interrupts the watch loop with `SCardCancel` on the monitor's context, releases
/// it and the readers' contexts, and finishes ``events``.
///
/// **Connecting** (``connect(to:options:)``) waits until the monitor has seen a card on the reader, then opens a
/// ``PCSCCardChannel`` on the reader's executor and context: `SCardConnect` (shared, or exclusive when configured or
/// asked for), `SCardBeginTransaction` for the whole connection, the UID and the ATR (the one the monitor saw with
/// the card, or `SCardStatus` when the monitor has seen another card since). A card that left before
/// `SCardConnect` reached it is waited for again.
public final class PCSCTransport: Transport {
    public let id: String
    public let configuration: PCSCConfiguration
    /// `nil`: PC/SC readers are only known at run time.
    public var declaredReaders: [ReaderInfo]? { nil }
    public let events: AsyncStream<ReaderEvent>

    /// Events kept for a slow reader of ``events``: they come per reader and card presence, never per APDU.
    public static let eventBufferSize = 4096
    /// The first wait before establishing a pcsc-lite context again; it doubles up to ``maximumReconnectDelay``.
    public static let minimumReconnectDelay = Duration.milliseconds(100)
    public static let maximumReconnectDelay = Duration.seconds(2)

    private let eventContinuation: AsyncStream<ReaderEvent>.Continuation
    private let monitor: PCSCReaderMonitor
    private let readers = PCSCReaders()
    private let started = Atomic<Bool>(false)

    /// - Parameters:
    ///   - id: the plugin id from the manifest (`ReaderInfo.transport`, and the default reader id prefix).
    ///   - configuration: which readers, how to share them, extended length.
    public init(id: String, configuration: PCSCConfiguration) {
        self.id = id
        self.configuration = configuration
        let (events, eventContinuation) = AsyncStream.makeStream(
            of: ReaderEvent.self,
            bufferingPolicy: .bufferingNewest(Self.eventBufferSize)
        )
        self.events = events
        self.eventContinuation = eventContinuation
        monitor = PCSCReaderMonitor(
            transportID: id,
            configuration: configuration,
            readerIDPrefix: configuration.readerIDPrefix ?? id + "/",
            events: eventContinuation,
            readerVanished: { [readers] name in readers.release(readerNamed: name) }
        )
    }

    /// The id of the reader pcscd calls `name`.
    public func readerID(forReaderNamed name: String) -> ReaderID {
        monitor.readerID(forReaderNamed: name)
    }

    /// Watches pcscd's readers and cards until cancelled, re-establishing its context whenever pcscd is missing or
    /// restarts; finishes ``events`` when it returns.
    ///
    /// - Throws: `ProximaError.pluginFailed` when called a second time, or when `SCardEstablishContext` fails for a
    ///   reason other than pcscd not running (`SCARD_E_NO_SERVICE`, `SCARD_E_SERVICE_STOPPED`,
    ///   `SCARD_F_COMM_ERROR`).
    public func run() async throws {
        guard started.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
            throw ProximaError(.pluginFailed, "PC/SC transport \"\(id)\": run() was called twice")
        }
        defer {
            monitor.shutDown()
            readers.releaseAll()
            eventContinuation.finish()
        }
        let clock = ContinuousClock()
        var delay = Self.minimumReconnectDelay
        while !Task.isCancelled {
            let start = clock.now
            switch await monitor.runSession() {
            case .stopped:
                return
            case .lost:
                // A session that worked for a while starts the backoff over: pcscd was restarted.
                if clock.now - start >= Self.maximumReconnectDelay { delay = Self.minimumReconnectDelay }
            case .notEstablished(let status):
                guard [.noService, .serviceStopped, .communicationError].contains(status) else {
                    throw ProximaError(
                        .pluginFailed,
                        "PC/SC transport \"\(id)\": SCardEstablishContext failed with \(status)"
                    )
                }
            }
            do {
                try await Task.sleep(for: delay)
            } catch {
                return
            }
            delay = min(delay * 2, Self.maximumReconnectDelay)
        }
    }

    public func connect(to reader: ReaderID, options: ConnectOptions) async throws -> any CardChannel {
        try await openChannel(to: reader, options: options)
    }

    /// The reader's executor as a task executor (``PCSCCardChannel/preferredTaskExecutor``): the kernel runs the
    /// whole tap there, so `SCardConnect` and the close are blocks on the queue the tap already runs on.
    public func preferredTaskExecutor(for reader: ReaderID) -> (any TaskExecutor)? {
        monitor.readerName(of: reader).map { readers.reader(named: $0).executor.taskExecutor }
    }

    /// ``connect(to:options:)`` with the concrete channel type.
    ///
    /// - Throws: `ProximaError` `readerVanished` (unknown reader, or it left while waiting), `cancelled`,
    ///   `readerBusy` (`SCARD_E_SHARING_VIOLATION`: another client holds the card exclusively), `cardTimeout` (a mute
    ///   card), or another code mapped from the failing pcsc-lite call (``PCSCStatus/errorCode``).
    public func openChannel(to reader: ReaderID, options: ConnectOptions) async throws -> PCSCCardChannel {
        let shareMode = configuration.exclusive || options.exclusive ? PCSC.shareExclusive : PCSC.shareShared
        var seen: UInt64 = 0
        while true {
            let (name, generation) = try await monitor.waitForCard(on: reader, after: seen)
            let pcscReader = readers.reader(named: name)
            let monitor = monitor
            let outcome = await pcscReader.withBlockingCall { pcscReader in
                pcscReader.open(shareMode: shareMode) { monitor.atr(of: reader, generation: generation) }
            } abandoned: { pcscReader, outcome in
                if case .success(let opened) = outcome { pcscReader.close(opened.connection) }
            }
            switch outcome {
            case nil:
                throw ProximaError(.cancelled, "cancelled while connecting to the card on '\(name)'", reader: reader)
            case .success(let opened):
                return PCSCCardChannel(
                    reader: reader,
                    opened: opened,
                    on: pcscReader,
                    extendedLength: configuration.extendedLength
                )
            case .failure(let failure) where failure.status == .noSmartcard || failure.status == .removedCard:
                // The card left before SCardConnect reached it: wait for the next one.
                seen = generation
            case .failure(let failure):
                throw failure.status.proximaError(step: failure.step, readerName: name, reader: reader)
            }
        }
    }
}
