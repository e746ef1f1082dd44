import Synchronization

/// A `CardChannel` that plays a script: each transmitted command must equal the next expected one, byte for
/// byte, and gets the scripted answer. For tests of code that talks to cards, like swift-nio's `EmbeddedChannel`.
///
/// An unexpected command throws `ProximaError.transmitFailed` naming what was expected and what arrived, and is
/// remembered; ``finish()`` then throws, as it does when scripted exchanges were left unused. Call it at the end
/// of every test.
///
/// The channel is `Sendable` because all its mutable state sits behind one `Mutex`.
public final class ScriptedChannel: CardChannel {
    /// One expected exchange.
    public struct Exchange: Hashable, Sendable, CustomStringConvertible {
        /// The exact bytes the command must encode to.
        public var command: [UInt8]
        /// What `transmit` gives back: the card's answer, or a transport error such as `cardRemoved`.
        public var outcome: Outcome

        public enum Outcome: Hashable, Sendable {
            case response(ResponseAPDU)
            case failure(ProximaError)
        }

        public init(command: [UInt8], outcome: Outcome) {
            self.command = command
            self.outcome = outcome
        }

        public var description: String {
            switch outcome {
            case .response(let response): "\(command.hexString) → \(response.bytes.hexString)"
            case .failure(let error): "\(command.hexString) → \(error.code)"
            }
        }
    }

    public let reader: ReaderID
    public let atr: [UInt8]
    public let ats: [UInt8]
    public let uid: [UInt8]
    public let technology: CardTechnology
    public let maximumCommandLength: Int
    public let supportsExtendedLength: Bool

    private struct State {
        var script: [Exchange] = []
        var next = 0
        var transmitted: [CommandAPDU] = []
        var problems: [String] = []
        var closed = false
    }

    private let state = Mutex(State())

    /// - Parameters:
    ///   - supportsExtendedLength: whether the fake reader takes extended APDUs.
    ///   - maximumCommandLength: defaults to 65,544 with extended length (4 + 3 + 65,535 + 2) and 261 without
    ///     (4 + 1 + 255 + 1).
    ///   - script: expected exchanges; more can be added with ``expect(_:respond:)``.
    public init(
        reader: ReaderID = "scripted",
        supportsExtendedLength: Bool = true,
        maximumCommandLength: Int? = nil,
        technology: CardTechnology = .iso14443A,
        atr: [UInt8] = [],
        ats: [UInt8] = [],
        uid: [UInt8] = [],
        script: [Exchange] = []
    ) {
        self.reader = reader
        self.supportsExtendedLength = supportsExtendedLength
        self.maximumCommandLength = maximumCommandLength ?? (supportsExtendedLength ? 65_544 : 261)
        self.technology = technology
        self.atr = atr
        self.ats = ats
        self.uid = uid
        state.withLock { $0.script = script }
    }

    /// Adds an expected command and the answer to it.
    public func expect(_ command: [UInt8], respond response: ResponseAPDU) {
        state.withLock { $0.script.append(Exchange(command: command, outcome: .response(response))) }
    }

    /// Adds an expected command and the answer to it, both as hex (`"00C0000010"`, `"…9000"`).
    ///
    /// - Precondition: both strings are valid hex and the response has at least a status word; scripts are
    ///   written by the test's author.
    public func expect(_ commandHex: String, respond responseHex: String) {
        guard let command = [UInt8](hex: commandHex), let bytes = [UInt8](hex: responseHex),
            let response = try? ResponseAPDU(bytes: bytes)
        else {
            preconditionFailure("scripted exchange \(commandHex) → \(responseHex) is not valid hex APDUs")
        }
        expect(command, respond: response)
    }

    /// Adds an expected command that fails with `error` instead of being answered.
    public func expect(_ command: [UInt8], fail error: ProximaError) {
        state.withLock { $0.script.append(Exchange(command: command, outcome: .failure(error))) }
    }

    /// Every command transmitted so far, in order, including unexpected ones.
    public var transmitted: [CommandAPDU] { state.withLock { $0.transmitted } }

    /// The scripted exchanges not yet used.
    public var remaining: [Exchange] { state.withLock { Array($0.script[$0.next...]) } }

    public func transmit(_ command: CommandAPDU) async throws -> ResponseAPDU {
        let outcome: Result<ResponseAPDU, ProximaError> = state.withLock { state in
            state.transmitted.append(command)
            let bytes = command.bytes
            guard !state.closed else {
                state.problems.append("\(bytes.hexString) sent after close()")
                return .failure(ProximaError(.transmitFailed, "scripted channel is closed", reader: reader))
            }
            guard state.next < state.script.count else {
                state.problems.append("unexpected \(bytes.hexString) after the script ended")
                return .failure(
                    ProximaError(
                        .transmitFailed,
                        "scripted channel got \(bytes.hexString) after its script ended",
                        reader: reader
                    )
                )
            }
            let exchange = state.script[state.next]
            guard exchange.command == bytes else {
                let problem = "expected \(exchange.command.hexString), got \(bytes.hexString)"
                state.problems.append(problem)
                return .failure(ProximaError(.transmitFailed, "scripted channel \(problem)", reader: reader))
            }
            state.next += 1
            switch exchange.outcome {
            case .response(let response): return .success(response)
            case .failure(let error): return .failure(error)
            }
        }
        return try outcome.get()
    }

    public func close() async {
        state.withLock { $0.closed = true }
    }

    /// Checks that the script ran exactly: every exchange used, no unexpected command.
    ///
    /// - Throws: `ProximaError.transmitFailed` listing the unexpected commands and the unused exchanges.
    public func finish() throws {
        let (problems, unused) = state.withLock { ($0.problems, Array($0.script[$0.next...])) }
        var lines = problems
        if !unused.isEmpty {
            lines.append(
                "\(unused.count) scripted exchanges unused: " + unused.map(\.description).joined(separator: "; ")
            )
        }
        guard lines.isEmpty else {
            throw ProximaError(.transmitFailed, "scripted channel: " + lines.joined(separator: "; "), reader: reader)
        }
    }
}
