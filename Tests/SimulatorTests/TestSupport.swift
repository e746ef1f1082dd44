import Foundation
import ProximaCardEmulator
import ProximaCore
import SimulatorTransport
import Testing

let selectPPSE: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x0E] + Array("2PAY.SYS.DDF01".utf8) + [0x00]

func selectPPSECommand() throws -> CommandAPDU {
    try CommandAPDU(bytes: selectPPSE)
}

/// A card answering SELECT PPSE with a 10-byte FCI, told apart from its siblings by `uid`.
func testCard(_ number: UInt8, ppseAnswer: [UInt8]? = nil) -> ScriptedCard {
    ScriptedCard(
        name: "test card \(number)",
        uid: [0x08, 0x00, 0x00, number],
        exchanges: [
            .init(
                command: selectPPSE,
                response: ppseAnswer ?? [0x6F, 0x08, 0x84, 0x06, 0x32, 0x50, 0x41, 0x59, 0x2E, number, 0x90, 0x00]
            )
        ]
    )
}

/// A transport with one reader `sim-0` on a manual clock, exchanges without air time.
func makeTransport(
    cards: [ScriptedCard] = [testCard(1), testCard(2), testCard(3)],
    arrival: SimulatorConfiguration.Arrival = .immediate,
    repeats: Bool = true,
    extendedLength: Bool = true,
    faults: SimulatorConfiguration.Faults = .init(),
    airTime: Bool = false,
    clock: ManualClock = ManualClock(),
    reportsCardPresence: Bool = true
) -> SimulatorTransport {
    let configuration = SimulatorConfiguration(
        airTime: airTime,
        readers: [
            .init(
                id: "sim-0",
                extendedLength: extendedLength,
                cards: cards,
                arrival: arrival,
                repeats: repeats,
                faults: faults
            )
        ]
    )
    return SimulatorTransport(
        id: "simulator",
        configuration: configuration,
        time: SimulatorTime(clock),
        reportsCardPresence: reportsCardPresence
    )
}

/// The error `body` throws, as a `ProximaError`.
func proximaError<T>(_ body: () async throws -> T) async -> ProximaError? {
    do {
        _ = try await body()
        return nil
    } catch let error as ProximaError {
        return error
    } catch {
        Issue.record("expected a ProximaError, got \(error)")
        return nil
    }
}
