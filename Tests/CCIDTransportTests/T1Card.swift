import CCIDReaderMock
import CCIDTransport
import ProximaCardEmulator
import ProximaCore
import Synchronization

/// The card's side of T=1 (ISO/IEC 7816-3 §11) around a virtual card, for a TPDU-level reader emulated under
/// umockdev: the C mock hands it each XfrBlock's block and sends back the block it returns. It chains APDUs in,
/// chains responses out in parts of ``responsePart`` bytes, answers S(IFS), S(RESYNCH), and on request corrupts the
/// LRC of its next I-block or asks for a waiting time extension before it.
final class T1Card: Sendable {
    struct State {
        var card: any VirtualCard
        /// N(S) expected on the host's next I-block.
        var expected: UInt8 = 0
        /// N(S) of the card's next I-block.
        var next: UInt8 = 0
        var hostInformationFieldSize = 32
        var command: [UInt8] = []
        var pending: [[UInt8]] = []
        var lastSent: [UInt8] = []
        var stashed: [UInt8]?
        var corruptNext = 0
        var extensionsBeforeNext = 0
        var blocks: [String] = []
    }

    let responsePart: Int
    let state: Mutex<State>

    init(_ card: any VirtualCard, responsePart: Int = 24) {
        self.responsePart = responsePart
        state = Mutex(State(card: card))
    }

    /// The shapes of the blocks the host sent, in order (`I(0, M)`, `R(1, ok)`, …).
    var blocksReceived: [String] { state.withLock { $0.blocks } }

    func corruptNextInformationBlock() { state.withLock { $0.corruptNext = 1 } }
    func extendWaitingTimeBeforeNext() { state.withLock { $0.extensionsBeforeNext = 1 } }

    static let callback: ccid_mock_card_fn = { context, block, length, response, capacity in
        guard let context, let block, let response else { return 0 }
        let card = Unmanaged<T1Card>.fromOpaque(context).takeUnretainedValue()
        let answer = card.receive(Array(UnsafeBufferPointer(start: block, count: length)))
        let count = min(answer.count, capacity)
        answer.withUnsafeBufferPointer { response.update(from: $0.baseAddress!, count: count) }
        return count
    }

    func receive(_ bytes: [UInt8]) -> [UInt8] {
        state.withLock { state in
            guard let block = try? T1Block(bytes: bytes) else {
                state.blocks.append("invalid")
                return T1Block(kind: .receiveReady(sequence: state.expected, status: .otherError)).bytes
            }
            state.blocks.append(block.description)
            switch block.kind {
            case .information(let sequence, let more):
                guard sequence == state.expected else { return state.lastSent }
                state.expected ^= 1
                state.command += block.information
                if more { return T1Block(kind: .receiveReady(sequence: state.expected, status: .ok)).bytes }
                let response = state.card.respond(to: state.command)
                state.command = []
                state.pending = stride(from: 0, to: response.count, by: responsePart).map {
                    Array(response[$0..<min(response.count, $0 + responsePart)])
                }
                return sendPart(&state)
            case .receiveReady(let sequence, _):
                if sequence == state.next, !state.pending.isEmpty { return sendPart(&state) }
                return state.lastSent
            case .supervisory(.waitingTimeExtension, response: true):
                defer { state.stashed = nil }
                return state.stashed ?? state.lastSent
            case .supervisory(.informationFieldSize, response: false):
                state.hostInformationFieldSize = Int(block.information[0])
                return T1Block(
                    kind: .supervisory(.informationFieldSize, response: true),
                    information: block.information
                )
                .bytes
            case .supervisory(.resynchronise, response: false):
                state.expected = 0
                state.next = 0
                state.command = []
                state.pending = []
                return T1Block(kind: .supervisory(.resynchronise, response: true)).bytes
            case .supervisory:
                return T1Block(kind: .receiveReady(sequence: state.expected, status: .otherError)).bytes
            }
        }
    }

    /// The next part of the response as an I-block (after a WTX request, or with a bad LRC, when asked).
    private func sendPart(_ state: inout State) -> [UInt8] {
        let part = state.pending.removeFirst()
        let block = T1Block(kind: .information(sequence: state.next, more: !state.pending.isEmpty), information: part)
        state.next ^= 1
        state.lastSent = block.bytes
        if state.extensionsBeforeNext > 0 {
            state.extensionsBeforeNext -= 1
            state.stashed = block.bytes
            return T1Block(kind: .supervisory(.waitingTimeExtension, response: false), information: [1]).bytes
        }
        if state.corruptNext > 0 {
            state.corruptNext -= 1
            var corrupted = block.bytes
            corrupted[corrupted.count - 1] ^= 0xFF
            return corrupted
        }
        return block.bytes
    }
}
