import ProximaCardEmulator
import ProximaCore
import Testing

@testable import SimulatorTransport

@Suite struct FaultInjectionTests {
    let connect = ConnectOptions()

    @Test func removeAfterExchangesTakesTheCardAway() async throws {
        let transport = makeTransport(faults: .init(removeAfterExchanges: 2))
        var events = transport.events.makeAsyncIterator()
        let channel = try await transport.connect(to: "sim-0", options: connect)
        #expect(await events.next() == .cardPresent("sim-0"))
        for _ in 0..<2 { #expect(try await channel.transmit(selectPPSECommand()).status == .success) }
        let error = await proximaError { try await channel.transmit(selectPPSECommand()) }
        #expect(error?.code == .cardRemoved)
        #expect(error?.reader == "sim-0")
        #expect(await events.next() == .cardRemoved("sim-0"))
        #expect(await proximaError { try await channel.transmit(selectPPSECommand()) }?.code == .cardRemoved)
        await channel.close()  // No second .cardRemoved.
        let next = try await transport.connect(to: "sim-0", options: connect)
        #expect(await events.next() == .cardPresent("sim-0"))
        #expect(next.uid.last == 2)
        // Faults apply to every presence: the next card is also taken after two exchanges.
        for _ in 0..<2 { #expect(try await next.transmit(selectPPSECommand()).status == .success) }
        #expect(await proximaError { try await next.transmit(selectPPSECommand()) }?.code == .cardRemoved)
    }

    @Test func removeAfterZeroExchangesFailsTheFirst() async throws {
        let transport = makeTransport(faults: .init(removeAfterExchanges: 0))
        let channel = try await transport.connect(to: "sim-0", options: connect)
        #expect(await proximaError { try await channel.transmit(selectPPSECommand()) }?.code == .cardRemoved)
    }

    @Test func muteCardTimesOutAfterTheMuteTimeout() async throws {
        let clock = ManualClock()
        let transport = makeTransport(
            faults: .init(muteAfterExchanges: 1, muteTimeout: .milliseconds(300)),
            clock: clock
        )
        var events = transport.events.makeAsyncIterator()
        let channel = try await transport.connect(to: "sim-0", options: connect)
        #expect(await events.next() == .cardPresent("sim-0"))
        #expect(try await channel.transmit(selectPPSECommand()).status == .success)
        for round in 1...2 {
            let start = clock.now
            let muted = Task { try await channel.transmit(selectPPSECommand()) }
            await clock.waitForSleepers(1)
            #expect(clock.pendingDeadlines == [start.advanced(by: .milliseconds(300))], "round \(round)")
            clock.advance(by: .milliseconds(300))
            let error = await proximaError { try await muted.value }
            #expect(error?.code == .cardTimeout)
        }
        await channel.close()
        #expect(await events.next() == .cardRemoved("sim-0"))
        let next = try await transport.connect(to: "sim-0", options: connect)
        #expect(next.uid.last == 2)
        #expect(try await next.transmit(selectPPSECommand()).status == .success)
    }

    @Test func corruptResponseTruncatesAndFlipsTheData() async throws {
        let transport = makeTransport(faults: .init(corruptResponseAt: 2))
        let channel = try await transport.connect(to: "sim-0", options: connect)
        let good: [UInt8] = [0x6F, 0x08, 0x84, 0x06, 0x32, 0x50, 0x41, 0x59, 0x2E, 0x01]
        #expect(try await channel.transmit(selectPPSECommand()) == ResponseAPDU(data: good, status: .success))
        // 10 data bytes → the first 5, the fifth XOR FF, status word kept.
        let corrupted = try await channel.transmit(selectPPSECommand())
        #expect(corrupted == ResponseAPDU(data: [0x6F, 0x08, 0x84, 0x06, 0x32 ^ 0xFF], status: .success))
        #expect(try await channel.transmit(selectPPSECommand()).data == good)
    }

    @Test func corruptStatusOnlyResponseIsMalformed() async throws {
        let transport = makeTransport(
            cards: [testCard(1, ppseAnswer: [0x6A, 0x82])],
            faults: .init(corruptResponseAt: 1)
        )
        let channel = try await transport.connect(to: "sim-0", options: connect)
        let error = await proximaError { try await channel.transmit(selectPPSECommand()) }
        #expect(error?.code == .malformedData)
        #expect(try await channel.transmit(selectPPSECommand()).status == .fileNotFound)
    }

    @Test func corruptionRule() {
        #expect(SimulatedReader.corrupt([0x90, 0x00]) == [0x90])
        #expect(SimulatedReader.corrupt([0xAA, 0x90, 0x00]) == [0x55, 0x90, 0x00])
        #expect(SimulatedReader.corrupt([0x01, 0x02, 0x03, 0x62, 0x83]) == [0xFE, 0x62, 0x83])
        #expect(SimulatedReader.corrupt([]) == [])
    }

    @Test func vanishedReaderComesBackAfterReappearDelay() async throws {
        let clock = ManualClock()
        let transport = makeTransport(
            faults: .init(vanishAfterExchanges: 1, reappearAfter: .milliseconds(1500)),
            clock: clock
        )
        let info = try #require(transport.declaredReaders?.first)
        var events = transport.events.makeAsyncIterator()
        let running = Task { try await transport.run() }
        #expect(await events.next() == .appeared(info))

        let channel = try await transport.connect(to: "sim-0", options: connect)
        #expect(await events.next() == .cardPresent("sim-0"))
        #expect(try await channel.transmit(selectPPSECommand()).status == .success)
        clock.advance(by: .milliseconds(200))
        let error = await proximaError { try await channel.transmit(selectPPSECommand()) }
        #expect(error?.code == .readerVanished)
        #expect(error?.reader == "sim-0")
        #expect(await events.next() == .vanished("sim-0"))
        #expect(
            await proximaError { try await transport.connect(to: "sim-0", options: connect) }?.code == .readerVanished
        )
        #expect(await proximaError { try await channel.transmit(selectPPSECommand()) }?.code == .readerVanished)

        await clock.waitForSleepers(1)
        #expect(clock.pendingDeadlines.map(\.offset) == [.milliseconds(1700)])
        clock.advance(by: .milliseconds(1500))
        #expect(await events.next() == .appeared(info))

        await channel.close()  // The presence already ended: no event.
        let next = try await transport.connect(to: "sim-0", options: connect)
        #expect(await events.next() == .cardPresent("sim-0"))
        #expect(next.uid.last == 2)
        #expect(try await next.transmit(selectPPSECommand()).status == .success)

        running.cancel()
        try await running.value
        #expect(await events.next() == nil)
    }

    @Test func vanishWinsOverRemoveAtTheSameExchange() async throws {
        let transport = makeTransport(faults: .init(removeAfterExchanges: 0, vanishAfterExchanges: 0))
        let channel = try await transport.connect(to: "sim-0", options: connect)
        #expect(await proximaError { try await channel.transmit(selectPPSECommand()) }?.code == .readerVanished)
    }
}
