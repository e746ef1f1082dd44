public import ProximaCore
internal import Synchronization

/// An in-process transport whose readers and cards are simulated: for tests, benchmarks, the demo and
/// integrators without hardware.
///
/// Each configured reader is one actor that owns its queue of ``ProximaCardEmulator/VirtualCard``s and the
/// current card presence. `connect(to:options:)` waits for the next card per the reader's arrival pattern
/// (counted from the call), emits `.cardPresent` and returns a channel; the channel's `close()` ends the
/// presence (`.cardRemoved`) and the next connect takes the next card. A reader's `ReaderID` is its configured
/// `id`. Built for a kernel (`reportsCardPresence` false: it does not read them), the card events are not made.
///
/// **Exchanges.** A transmit is one hop into the reader actor and publishes no event. With `airTime` on, it
/// then sleeps on the time source for ``AirTimeModel/exchangeTime(commandBytes:responseBytes:)``. An
/// extended-length APDU on a reader without extended length throws `unsupported` before reaching the card.
/// After the presence ended (closed, or a later connect), transmit throws `transmitFailed`.
///
/// **Faults** (``SimulatorConfiguration/Faults``, applied to every presence, exchanges counted from 1):
/// - `removeAfterExchanges: N`: exchange N+1 throws `cardRemoved` and emits `.cardRemoved`; later transmits on
///   that channel throw `cardRemoved` again; the next connect gets the next card.
/// - `muteAfterExchanges: N`: exchange N+1 and every later one sleep `muteTimeout`, then throw `cardTimeout`.
/// - `corruptResponseAt: N`: the N-th response with data keeps its first ⌊n/2⌋ data bytes (at least one),
///   the last of them XOR FF, and its status word, so a BER-TLV parse fails while the status says success; a
///   response with no data becomes its SW1 byte alone and the transmit throws `malformedData`.
/// - `vanishAfterExchanges: N`: exchange N+1 throws `readerVanished` and emits `.vanished` (no `.cardRemoved`);
///   connects throw `readerVanished` until, `reappearAfter` later on the time source, `run()` emits
///   `.appeared` again. Reappearing needs `run()` to be running.
///
/// **Events** are buffered `.bufferingNewest(4096)`: events come per reader and card presence, never per
/// APDU, so the kernel (which reads continuously) never falls that far behind, while a host that never reads
/// them (a benchmark) does not grow without bound.
public final class SimulatorTransport: Transport {
    public let id: String
    public let configuration: SimulatorConfiguration
    public let declaredReaders: [ReaderInfo]?
    public let events: AsyncStream<ReaderEvent>
    private let eventContinuation: AsyncStream<ReaderEvent>.Continuation
    private let reappearRequests: AsyncStream<ReappearRequest>
    private let reappearContinuation: AsyncStream<ReappearRequest>.Continuation
    private let readers: [SimulatedReader]
    private let readersByID: [ReaderID: SimulatedReader]
    private let time: SimulatorTime
    private let started = Atomic<Bool>(false)

    /// Events kept for a slow reader of ``events``.
    public static let eventBufferSize = 4096

    /// - Parameters:
    ///   - id: the plugin id from the manifest (`ReaderInfo.transport`).
    ///   - configuration: readers, cards, timing and faults.
    ///   - time: where arrival delays, air time and fault timeouts are slept; tests pass a manual clock.
    ///   - reportsCardPresence: whether to emit `.cardPresent` and `.cardRemoved` (`PluginContext`'s hint: a kernel
    ///     does not read them, and each one would wake its event loop twice a tap).
    public init(
        id: String,
        configuration: SimulatorConfiguration,
        time: SimulatorTime = .continuous,
        reportsCardPresence: Bool = true
    ) {
        self.id = id
        self.configuration = configuration
        self.time = time
        let (events, eventContinuation) = AsyncStream.makeStream(
            of: ReaderEvent.self,
            bufferingPolicy: .bufferingNewest(Self.eventBufferSize)
        )
        let (reappearRequests, reappearContinuation) = AsyncStream.makeStream(of: ReappearRequest.self)
        self.events = events
        self.eventContinuation = eventContinuation
        self.reappearRequests = reappearRequests
        self.reappearContinuation = reappearContinuation
        let airTime = configuration.airTime ? configuration.airTimeModel : nil
        let infos = configuration.readers.map { reader in
            ReaderInfo(
                id: ReaderID(reader.id),
                name: reader.name,
                transport: id,
                supportsExtendedLength: reader.extendedLength
            )
        }
        declaredReaders = infos
        let readers = zip(infos, configuration.readers).map { info, reader in
            SimulatedReader(
                info: info,
                configuration: reader,
                airTime: airTime,
                time: time,
                events: eventContinuation,
                reportsCardPresence: reportsCardPresence,
                reappearRequests: reappearContinuation
            )
        }
        self.readers = readers
        readersByID = Dictionary(readers.map { ($0.info.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Reports every reader (`.appeared`), then brings vanished readers back on time until cancelled; finishes
    /// ``events`` when it returns.
    ///
    /// - Throws: `ProximaError.pluginFailed` when called a second time.
    public func run() async throws {
        guard started.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
            throw ProximaError(.pluginFailed, "simulator transport \"\(id)\": run() was called twice")
        }
        defer {
            reappearContinuation.finish()
            eventContinuation.finish()
        }
        for reader in readers { await reader.announce() }
        let time = self.time
        // The loop ends when this task is cancelled (the stream's iterator then returns nil); the group then
        // cancels the pending reappearances.
        await withDiscardingTaskGroup { group in
            for await request in reappearRequests {
                group.addTask {
                    do {
                        try await time.sleepUntil(request.instant)
                    } catch {
                        return
                    }
                    await request.reader.reappear()
                }
            }
        }
    }

    /// Waits for the next card on `reader` (per its arrival pattern, counted from this call) and connects.
    ///
    /// A connect while an earlier channel of the reader is still open ends that presence first.
    /// - Throws: `ProximaError` `noSuchReader`, `readerVanished`, or `cancelled` when the task is cancelled
    ///   while waiting (also the only way out when the queue has no more cards and `repeats` is off).
    public func connect(to reader: ReaderID, options: ConnectOptions) async throws -> any CardChannel {
        guard let simulated = readersByID[reader] else {
            throw ProximaError(
                .noSuchReader,
                "simulator transport \"\(id)\" has no reader \"\(reader)\"",
                reader: reader
            )
        }
        return try await simulated.connect()
    }
}
