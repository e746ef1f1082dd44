import ExternalTransport
import Foundation
import PaymentCapability
import ProximaCardEmulator
import ProximaCore
import ProximaKernel
import Testing

/// Payment reads through the whole External path: kernel → External transport → pipes → the sample Python driver
/// `Examples/Drivers/python/vpcd_reader_driver.py` → TCP (vpcd protocol) → `VPCDCardHost` → virtual EMV card.
@Suite("External transport: payment reads through the sample vpcd driver", .serialized, .timeLimit(.minutes(3)))
struct ExternalPaymentTests {
    static let vpcdDriver = packageRoot + "/Examples/Drivers/python/vpcd_reader_driver.py"

    static func purchase() -> EMVTransaction {
        EMVTransaction(
            amountAuthorised: 2999,
            currencyCode: 840,
            date: TransactionDate(year: 2026, month: 3, day: 14, hour: 9, minute: 26, second: 53)
        )
    }

    /// The port the driver's reader listens on, from its name (`Proxima vpcd reader 127.0.0.1:40123`).
    static func port(of reader: ReaderID, in kernel: Kernel) async -> UInt16? {
        guard let name = await kernel.snapshot().readers.first(where: { $0.info.id == reader })?.info.name,
            let text = name.split(separator: ":").last
        else { return nil }
        return UInt16(text)
    }

    @Test("a Visa qVSDC card and a Mastercard M/Chip card are read through the driver; the simulator serves alongside")
    func readsPaymentCards() async throws {
        let captured = Captured()
        let registry = try registry(capturing: captured)
        let text = """
            { "schemaVersion": 1,
              "plugins": [
                { "id": "sim", "type": "simulator", "config": { "airTime": false, "readers": [
                  { "id": "sim-1", "cards": ["cards/identity-visa-like.json"], "arrival": { "pattern": "immediate" } } ] } },
                { "id": "vpcd", "type": "external", "load": "process", "config": {
                  "command": \(quoted(Self.vpcdDriver)), "args": ["--port", "0"] } } ],
              "lanes": [ { "id": "sim", "readers": ["sim-1"] },
                         { "id": "ext", "readerNames": ["Proxima vpcd reader *"] } ] }
            """
        let manifest = try Manifest.parse(Array(text.utf8), baseDirectory: configDirectory, registry: registry)
        let reader: ReaderID = "vpcd/0"
        let outcomes = try await withKernel(manifest, registry: registry) { kernel in
            try await waitUntil("the driver's reader is idle", on: kernel) {
                await state(of: reader, in: kernel) == .idle
            }
            #expect(await kernel.snapshot().readers.first { $0.info.id == reader }?.info.transport == "vpcd")
            let port = try #require(await Self.port(of: reader, in: kernel))
            var outcomes: [EMVOutcome] = []
            for file in ["pay-visa-qvsdc.json", "pay-mastercard-mchip.json"] {
                let card = try CardProfiles.load(contentsOf: configDirectory + "/cards/" + file)
                let host = VPCDCardHost(card: card, endpoint: .init(port: port))
                try host.insert()
                let outcome = try await kernel.tap(lane: "ext", options: TapOptions(timeout: .seconds(20))) {
                    channel,
                    context in
                    #expect(channel.uid.count == card.uid.count && !channel.uid.isEmpty)
                    return try await EMVPaymentCapability().run(Self.purchase(), on: channel, context: context)
                }
                outcomes.append(outcome)
                #expect(host.presenceCount == 1)
                #expect(host.commandsAnswered >= 5, "\(host.commandsAnswered) APDUs")
                await host.remove()
                #expect(try await selectOnSimulator(kernel) == .success)
            }
            return outcomes
        }
        #expect(outcomes.map(\.status) == [.onlineRequest, .onlineRequest])
        #expect(outcomes.map { $0.selectedApplicationIdentifier?.hexString } == ["A0000000031010", "A0000000041010"])
        #expect(outcomes.map(\.lastFourDigits) == ["0119", "0012"])
        #expect(outcomes.map { $0.cardData[0x9F26]?.count } == [8, 8])
        #expect(outcomes.map { $0.cardData[0x9F36] } == [[0, 1], [0, 0x2A]])
        #expect(captured.log.contains { $0.contains("driver vpcd-reader 1.0 started") })
        Leaks.expectNone(from: captured.transport)
    }

    @Test("a card pulled in the middle of a read ends the tap with cardRemoved; the next card is read")
    func cardPulledMidRead() async throws {
        let captured = Captured()
        let registry = try registry(capturing: captured)
        let text = """
            { "schemaVersion": 1,
              "plugins": [ { "id": "vpcd", "type": "external", "config": {
                  "command": \(quoted(Self.vpcdDriver)), "args": ["--port", "0"] } } ],
              "lanes": [ { "id": "ext", "readerNames": ["Proxima vpcd reader *"] } ] }
            """
        let manifest = try Manifest.parse(Array(text.utf8), baseDirectory: configDirectory, registry: registry)
        let reader: ReaderID = "vpcd/0"
        try await withKernel(manifest, registry: registry) { kernel in
            try await waitUntil("the driver's reader is idle", on: kernel) {
                await state(of: reader, in: kernel) == .idle
            }
            let port = try #require(await Self.port(of: reader, in: kernel))
            let card = try CardProfiles.load(contentsOf: configDirectory + "/cards/pay-visa-qvsdc.json")
            let pulled = VPCDCardHost(
                card: card,
                endpoint: .init(port: port),
                options: .init(faults: .init(removeAfterCommands: 3))
            )
            try pulled.insert()
            let code = await errorCode {
                try await kernel.tap(lane: "ext", options: TapOptions(timeout: .seconds(20))) { channel, context in
                    try await EMVPaymentCapability().run(Self.purchase(), on: channel, context: context)
                }
            }
            #expect(code == .cardRemoved)
            await pulled.remove()

            let host = VPCDCardHost(card: card, endpoint: .init(port: port))
            try host.insert()
            let outcome = try await kernel.tap(lane: "ext", options: TapOptions(timeout: .seconds(20))) {
                channel,
                context in
                try await EMVPaymentCapability().run(Self.purchase(), on: channel, context: context)
            }
            #expect(outcome.status == .onlineRequest)
            #expect(outcome.lastFourDigits == "0119")
            await host.remove()
        }
        // The driver itself never failed: the card did.
        #expect(captured.transport?.diagnostics.faults == [])
        #expect(captured.transport?.diagnostics.sessions == 1)
    }
}
