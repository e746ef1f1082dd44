import Dispatch
public import ProximaCore
import Synchronization

/// A card whose answers come from the fuzzer's bytes: each answer is a length byte, that many data bytes (as
/// far as they go) and a status word. When the bytes run out the card "leaves the field" (`cardRemoved`).
public final class FuzzedChannel: CardChannel {
    public let reader: ReaderID = "fuzz"
    public let atr: [UInt8] = []
    public let ats: [UInt8] = []
    public let uid: [UInt8] = []
    public let technology: CardTechnology = .unknown
    public let maximumCommandLength: Int
    public let supportsExtendedLength: Bool
    private let script: Mutex<(answers: [UInt8], offset: Int, sent: [CommandAPDU])>

    public init(answers: [UInt8], supportsExtendedLength: Bool = true, maximumCommandLength: Int = 65_544) {
        self.supportsExtendedLength = supportsExtendedLength
        self.maximumCommandLength = maximumCommandLength
        script = Mutex((answers, 0, []))
    }

    /// Every command sent so far.
    public var sent: [CommandAPDU] { script.withLock { $0.sent } }

    public func transmit(_ command: CommandAPDU) async throws -> ResponseAPDU {
        try script.withLock { state in
            state.sent.append(command)
            let answers = state.answers
            guard state.offset + 3 <= answers.count else { throw ProximaError(.cardRemoved, "fuzz input ended") }
            let length = Int(answers[state.offset])
            let dataStart = state.offset + 1
            let dataEnd = min(dataStart + length, answers.count - 2)
            let data = Array(answers[dataStart..<dataEnd])
            let status = StatusWord(answers[dataEnd], answers[dataEnd + 1])
            state.offset = dataEnd + 2
            return ResponseAPDU(data: data, status: status)
        }
    }

    public func close() async {}
}

/// Runs an async body to completion from libFuzzer's synchronous entry point.
public func runToCompletion(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        await body()
        done.signal()
    }
    done.wait()
}
