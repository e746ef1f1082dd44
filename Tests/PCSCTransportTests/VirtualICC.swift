import ProximaCardEmulator
import ProximaCore

/// A card on a vpcd reader slot for the live tests: the emulator's ``VPCDCardHost`` (vpcd framing, TCP_NODELAY
/// and TCP_QUICKACK) hosting a card that answers from a closure. Every command is recorded, and class `FF`
/// commands reach the closure too, so a test sees exactly what the transport sent. Creating it inserts the card;
/// ``remove()`` takes it out of the field (pcscd notices on its next poll, ~400 ms).
final class VirtualICC: Sendable {
    private let host: VPCDCardHost

    init(
        port: UInt16,
        atr: [UInt8],
        faults: VPCDCardHost.Faults = VPCDCardHost.Faults(),
        answer: @escaping @Sendable ([UInt8]) -> [UInt8]
    ) throws {
        host = VPCDCardHost(
            card: ClosureCard(atr: atr, answer: answer),
            endpoint: VPCDCardHost.Endpoint(port: port),
            options: VPCDCardHost.Options(answersReaderCommands: false, recordsCommands: true, faults: faults)
        )
        try host.insert()
    }

    /// Every command APDU the card received, in order.
    var received: [[UInt8]] { host.recordedCommands }

    func remove() async { await host.remove() }
}

/// A virtual card whose answers come from a closure.
private struct ClosureCard: VirtualCard {
    let name = "live-test card"
    let atr: [UInt8]
    let ats: [UInt8] = []
    let uid: [UInt8] = []
    let technology = CardTechnology.iso14443A
    let answer: @Sendable ([UInt8]) -> [UInt8]

    mutating func respond(to command: [UInt8]) -> [UInt8] { answer(command) }
}
