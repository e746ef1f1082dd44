public import ProximaCore
internal import Synchronization

/// A `CardChannel` to a virtual card held in-process, as a reader with the card in its field would give, with no
/// I/O: for capability tests and for benchmarks that need a reference without a transport.
///
/// Like a short-APDU reader (261-byte commands, no extended length), so capabilities chain as they would on most
/// hardware. It can record every exchange. `Sendable`: the card and the record sit behind one `Mutex`.
public final class InProcessCardChannel: CardChannel {
    public let reader: ReaderID
    public let atr: [UInt8]
    public let ats: [UInt8]
    public let uid: [UInt8]
    public let technology: CardTechnology
    public let maximumCommandLength = 261
    public let supportsExtendedLength = false

    private struct State {
        var card: any VirtualCard
        var commands: [[UInt8]] = []
        var responses: [[UInt8]] = []
    }
    private let state: Mutex<State>
    private let records: Bool

    /// - Parameters:
    ///   - card: the card in the field; the channel works on its own copy.
    ///   - reader: the reader id the channel reports.
    ///   - recordsExchanges: whether ``commands`` and ``responses`` keep every exchange (off for benchmarks).
    public init(card: any VirtualCard, reader: ReaderID = "in-process", recordsExchanges: Bool = true) {
        self.reader = reader
        atr = card.atr
        ats = card.ats
        uid = card.uid
        technology = card.technology
        records = recordsExchanges
        state = Mutex(State(card: card))
    }

    public func transmit(_ command: CommandAPDU) async throws -> ResponseAPDU {
        let records = records
        let bytes = state.withLock { state in
            let answer = state.card.respond(to: command.bytes)
            if records {
                state.commands.append(command.bytes)
                state.responses.append(answer)
            }
            return answer
        }
        return try ResponseAPDU(bytes: bytes)
    }

    public func close() async {}

    /// Every command sent, as bytes (empty unless recording).
    public var commands: [[UInt8]] { state.withLock { $0.commands } }
    /// Every answer, as bytes: data and status word (empty unless recording).
    public var responses: [[UInt8]] { state.withLock { $0.responses } }
}
