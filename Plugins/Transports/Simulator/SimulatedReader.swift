internal import ProximaCardEmulator
internal import ProximaCore

/// A request, from a reader that vanished, to appear again at `instant` (on the simulator's time source).
struct ReappearRequest: Sendable {
    let reader: SimulatedReader
    let instant: Duration
}

/// What one exchange came to, decided inside the reader actor; the channel then sleeps outside it.
enum ExchangeOutcome: Sendable {
    /// The card's raw answer (possibly corrupted by a fault).
    case response([UInt8])
    /// The card is mute: wait this long, then time out.
    case mute(Duration)
    case failure(ProximaError)
}

/// One simulated reader: owns its card queue, the current card presence and the fault counters.
///
/// All state lives in this actor; a transmit is one hop into ``exchange(_:generation:)``. A presence is named
/// by its `generation`, so a channel whose presence ended (closed, superseded by a later connect) can never
/// reach the next card.
actor SimulatedReader {
    /// How the current card presence stands.
    private enum PresenceState {
        /// No card: never connected, closed, or superseded.
        case none
        case active
        /// Past `muteAfterExchanges`: every exchange times out.
        case mute
        /// Taken away by `removeAfterExchanges`.
        case removed
        /// Ended by `vanishAfterExchanges`.
        case vanished
    }

    nonisolated let info: ReaderInfo
    private let cards: [any VirtualCard]
    private let repeats: Bool
    private let faults: SimulatorConfiguration.Faults
    private let time: SimulatorTime
    private let airTime: AirTimeModel?
    private let events: AsyncStream<ReaderEvent>.Continuation
    private let reportsCardPresence: Bool
    private let reappearRequests: AsyncStream<ReappearRequest>.Continuation

    private var arrivals: ArrivalSampler
    private var nextCard = 0
    private var vanished = false
    private var generation: UInt64 = 0
    private var state = PresenceState.none
    private var card: (any VirtualCard)?
    private var exchangeCount = 0

    init(
        info: ReaderInfo,
        configuration: SimulatorConfiguration.Reader,
        airTime: AirTimeModel?,
        time: SimulatorTime,
        events: AsyncStream<ReaderEvent>.Continuation,
        reportsCardPresence: Bool,
        reappearRequests: AsyncStream<ReappearRequest>.Continuation
    ) {
        self.info = info
        cards = configuration.cards
        repeats = configuration.repeats
        faults = configuration.faults
        self.time = time
        self.airTime = airTime
        self.events = events
        self.reportsCardPresence = reportsCardPresence
        self.reappearRequests = reappearRequests
        arrivals = ArrivalSampler(configuration.arrival)
    }

    private var id: ReaderID { info.id }

    // MARK: Reader presence

    /// Reports the reader at start, unless it is vanished (it then appears when it comes back).
    func announce() {
        if !vanished { events.yield(.appeared(info)) }
    }

    /// Brings a vanished reader back.
    func reappear() {
        guard vanished else { return }
        vanished = false
        events.yield(.appeared(info))
    }

    // MARK: Card presence

    /// Waits for the next card of the queue per the arrival pattern, counted from this call, and connects.
    func connect() async throws -> SimulatorChannel {
        guard !vanished else { throw ProximaError(.readerVanished, "the simulated reader is gone", reader: id) }
        endPresence()
        if !repeats && nextCard >= cards.count {
            // The queue is used up: like a reader with no card in its field, wait until the caller gives up.
            await Self.suspendUntilCancelled()
            throw ProximaError(.cancelled, "waiting for a card was cancelled (the card queue is used up)", reader: id)
        }
        let delay = arrivals.nextDelay()
        if delay > .zero {
            let start = time.now()
            do {
                try await time.sleepUntil(start + delay)
            } catch {
                throw ProximaError(.cancelled, "waiting for a card was cancelled", reader: id)
            }
        } else if Task.isCancelled {
            throw ProximaError(.cancelled, "waiting for a card was cancelled", reader: id)
        }
        // The actor may have run other calls while this one slept.
        guard !vanished else { throw ProximaError(.readerVanished, "the simulated reader is gone", reader: id) }
        guard repeats || nextCard < cards.count else {
            throw ProximaError(.cancelled, "the card queue was used up by a concurrent connect", reader: id)
        }
        endPresence()
        let next = cards[nextCard]
        nextCard += 1
        if repeats && nextCard == cards.count { nextCard = 0 }
        generation &+= 1
        card = next
        state = .active
        exchangeCount = 0
        if reportsCardPresence { events.yield(.cardPresent(id)) }
        return SimulatorChannel(
            reader: info,
            card: next,
            owner: self,
            generation: generation,
            airTime: airTime,
            time: time
        )
    }

    /// Ends the presence of `generation` when it is the current one (a channel's `close()`).
    func close(generation closing: UInt64) {
        guard closing == generation else { return }
        endPresence()
    }

    /// Ends the current presence; a card still in the field leaves it (`.cardRemoved`).
    private func endPresence() {
        switch state {
        case .active, .mute: if reportsCardPresence { events.yield(.cardRemoved(id)) }
        case .none, .removed, .vanished: break
        }
        state = .none
        card = nil
    }

    /// One command to the current card, with the faults applied. Exchanges are counted per presence from 1.
    func exchange(_ command: [UInt8], generation presence: UInt64) -> ExchangeOutcome {
        guard presence == generation else { return .failure(closedError) }
        switch state {
        case .none: return .failure(closedError)
        case .removed: return .failure(ProximaError(.cardRemoved, "the card left the field", reader: id))
        case .vanished: return .failure(ProximaError(.readerVanished, "the simulated reader is gone", reader: id))
        case .mute:
            exchangeCount += 1
            return .mute(faults.muteTimeout)
        case .active: break
        }
        let earlier = exchangeCount
        exchangeCount += 1
        if let n = faults.vanishAfterExchanges, earlier == n {
            state = .vanished
            card = nil
            vanished = true
            events.yield(.vanished(id))
            reappearRequests.yield(ReappearRequest(reader: self, instant: time.now() + faults.reappearAfter))
            return .failure(ProximaError(.readerVanished, "the simulated reader vanished (injected fault)", reader: id))
        }
        if let n = faults.removeAfterExchanges, earlier == n {
            state = .removed
            card = nil
            if reportsCardPresence { events.yield(.cardRemoved(id)) }
            return .failure(ProximaError(.cardRemoved, "the card left the field (injected fault)", reader: id))
        }
        if let n = faults.muteAfterExchanges, earlier >= n {
            state = .mute
            return .mute(faults.muteTimeout)
        }
        guard var response = card?.respond(to: command) else { return .failure(closedError) }
        if faults.corruptResponseAt == exchangeCount { response = Self.corrupt(response) }
        return .response(response)
    }

    private var closedError: ProximaError {
        ProximaError(.transmitFailed, "channel closed: its card presence has ended; connect again", reader: id)
    }

    /// The `corruptResponseAt` rule: a response with data keeps its first ⌊n/2⌋ data bytes (at least 1), the
    /// last kept byte inverted (XOR FF), and its status word, so a BER-TLV parse of it fails while the status
    /// says success. A response without data (status word only) shrinks to its SW1 alone, which is no response
    /// APDU at all: the transmit throws `malformedData`.
    static func corrupt(_ response: [UInt8]) -> [UInt8] {
        let n = response.count
        guard n > 2 else { return Array(response.prefix(1)) }
        let keep = max(1, (n - 2) / 2)
        var out = Array(response[..<keep])
        out[keep - 1] ^= 0xFF
        out.append(response[n - 2])
        out.append(response[n - 1])
        return out
    }

    /// Suspends until the calling task is cancelled, without polling.
    private static func suspendUntilCancelled() async {
        let (stream, continuation) = AsyncStream<Never>.makeStream()
        for await _ in stream {}
        withExtendedLifetime(continuation) {}
    }
}

/// A connection to one simulated card presence.
final class SimulatorChannel: CardChannel {
    let reader: ReaderID
    let atr: [UInt8]
    let ats: [UInt8]
    let uid: [UInt8]
    let technology: CardTechnology
    let maximumCommandLength: Int
    let supportsExtendedLength: Bool
    private let owner: SimulatedReader
    private let generation: UInt64
    private let airTime: AirTimeModel?
    private let time: SimulatorTime

    init(
        reader: ReaderInfo,
        card: any VirtualCard,
        owner: SimulatedReader,
        generation: UInt64,
        airTime: AirTimeModel?,
        time: SimulatorTime
    ) {
        self.reader = reader.id
        atr = card.atr
        ats = card.ats
        uid = card.uid
        technology = card.technology
        supportsExtendedLength = reader.supportsExtendedLength
        maximumCommandLength = reader.supportsExtendedLength ? 65_544 : 261
        self.owner = owner
        self.generation = generation
        self.airTime = airTime
        self.time = time
    }

    func transmit(_ command: CommandAPDU) async throws -> ResponseAPDU {
        if !supportsExtendedLength && command.isExtended {
            throw ProximaError(
                .unsupported,
                "extended-length APDU (\(command)) on a reader without extended length",
                reader: reader
            )
        }
        let bytes = command.bytes
        switch await owner.exchange(bytes, generation: generation) {
        case .response(let response):
            if let airTime {
                try await sleep(for: airTime.exchangeTime(commandBytes: bytes.count, responseBytes: response.count))
            }
            let n = response.count
            guard n >= 2 else {
                throw ProximaError(.malformedData, "response APDU of \(n) bytes has no status word", reader: reader)
            }
            return ResponseAPDU(data: Array(response[..<(n - 2)]), status: StatusWord(response[n - 2], response[n - 1]))
        case .mute(let timeout):
            try await sleep(for: timeout)
            throw ProximaError(
                .cardTimeout,
                "the card did not answer within \(timeout) (injected fault)",
                reader: reader
            )
        case .failure(let error):
            throw error
        }
    }

    func close() async {
        await owner.close(generation: generation)
    }

    private func sleep(for duration: Duration) async throws {
        guard duration > .zero else { return }
        do {
            try await time.sleepUntil(time.now() + duration)
        } catch {
            throw ProximaError(.cancelled, "the exchange was cancelled", reader: reader)
        }
    }
}
