import ProximaCardEmulator
import ProximaCore
import Testing

@testable import SimulatorTransport

@Suite struct SimulatorTransportTests {
    @Test func cardQueueCyclesInOrderWithRepeat() async throws {
        let transport = makeTransport()
        var events = transport.events.makeAsyncIterator()
        var uids: [UInt8] = []
        for _ in 0..<7 {
            let channel = try await transport.connect(to: "sim-0", options: ConnectOptions())
            uids.append(channel.uid[3])
            #expect(await events.next() == .cardPresent("sim-0"))
            await channel.close()
            #expect(await events.next() == .cardRemoved("sim-0"))
        }
        #expect(uids == [1, 2, 3, 1, 2, 3, 1])
    }

    /// Built for a kernel (`PluginContext.reportsCardPresence` false): taps and a pulled card make no card events,
    /// reader events still come.
    @Test func withoutCardPresenceEventsOnlyReaderEventsCome() async throws {
        let transport = makeTransport(faults: .init(removeAfterExchanges: 1), reportsCardPresence: false)
        for _ in 0..<3 {
            let channel = try await transport.connect(to: "sim-0", options: ConnectOptions())
            _ = try await channel.transmit(try CommandAPDU(cla: 0x00, ins: 0xA4, p1: 0x04, p2: 0x00, data: [0xA0]))
            let pulled = await proximaError {
                try await channel.transmit(try CommandAPDU(cla: 0x00, ins: 0xA4, p1: 0x04, p2: 0x00, data: [0xA0]))
            }
            #expect(pulled?.code == .cardRemoved)
            await channel.close()
        }
        let running = Task { try await transport.run() }
        var events = transport.events.makeAsyncIterator()
        #expect(await events.next() == .appeared(try #require(transport.declaredReaders?.first)))
        running.cancel()
        _ = try? await running.value
        #expect(await events.next() == nil, "no card event was buffered before the reader's")
    }

    @Test func usedUpQueueWaitsUntilCancelled() async throws {
        let transport = makeTransport(cards: [testCard(1), testCard(2)], repeats: false)
        for number: UInt8 in [1, 2] {
            let channel = try await transport.connect(to: "sim-0", options: ConnectOptions())
            #expect(channel.uid.last == number)
            await channel.close()
        }
        let waiting = Task { try await transport.connect(to: "sim-0", options: ConnectOptions()) }
        waiting.cancel()
        let error = await proximaError { try await waiting.value }
        #expect(error?.code == .cancelled)
    }

    @Test func channelAnswersAndDescribesTheCard() async throws {
        let transport = makeTransport()
        let channel = try await transport.connect(to: "sim-0", options: ConnectOptions())
        #expect(channel.reader == "sim-0")
        #expect(channel.uid == [0x08, 0x00, 0x00, 0x01])
        #expect(channel.atr == ScriptedCard.contactlessPseudoATR)
        #expect(channel.technology == .iso14443A)
        #expect(channel.supportsExtendedLength)
        #expect(channel.maximumCommandLength == 65_544)
        let response = try await channel.transmit(selectPPSECommand())
        #expect(response.status == .success)
        #expect(response.data == [0x6F, 0x08, 0x84, 0x06, 0x32, 0x50, 0x41, 0x59, 0x2E, 0x01])
        let other = try await channel.transmit(CommandAPDU(cla: 0x80, ins: 0xA8, p1: 0, p2: 0, data: [0x83, 0x00]))
        #expect(other == ResponseAPDU(status: .instructionNotSupported))
        // Extended lengths reach the card on an extended-length reader.
        let extended = try await channel.transmit(CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, expectedLength: 1000))
        #expect(extended.status == .instructionNotSupported)
    }

    @Test func shortOnlyReaderRejectsExtendedAPDUs() async throws {
        let transport = makeTransport(extendedLength: false)
        let channel = try await transport.connect(to: "sim-0", options: ConnectOptions())
        #expect(!channel.supportsExtendedLength)
        #expect(channel.maximumCommandLength == 261)
        let error = await proximaError {
            try await channel.transmit(
                CommandAPDU(cla: 0, ins: 0xD6, p1: 0, p2: 0, data: Array(repeating: 0, count: 300))
            )
        }
        #expect(error?.code == .unsupported)
        #expect(error?.reader == "sim-0")
        // The short APDU still goes through.
        #expect(try await channel.transmit(selectPPSECommand()).status == .success)
    }

    @Test func closedChannelFailsToTransmit() async throws {
        let transport = makeTransport()
        let first = try await transport.connect(to: "sim-0", options: ConnectOptions())
        await first.close()
        let error = await proximaError { try await first.transmit(selectPPSECommand()) }
        #expect(error?.code == .transmitFailed)
        // A later presence does not revive an old channel.
        let second = try await transport.connect(to: "sim-0", options: ConnectOptions())
        #expect(await proximaError { try await first.transmit(selectPPSECommand()) }?.code == .transmitFailed)
        #expect(try await second.transmit(selectPPSECommand()).status == .success)
    }

    @Test func connectWhileAChannelIsOpenEndsThatPresence() async throws {
        let transport = makeTransport()
        var events = transport.events.makeAsyncIterator()
        let first = try await transport.connect(to: "sim-0", options: ConnectOptions())
        _ = try await transport.connect(to: "sim-0", options: ConnectOptions())
        #expect(await events.next() == .cardPresent("sim-0"))
        #expect(await events.next() == .cardRemoved("sim-0"))
        #expect(await events.next() == .cardPresent("sim-0"))
        #expect(await proximaError { try await first.transmit(selectPPSECommand()) }?.code == .transmitFailed)
    }

    @Test func unknownReaderIsRejected() async throws {
        let transport = makeTransport()
        let error = await proximaError { try await transport.connect(to: "sim-9", options: ConnectOptions()) }
        #expect(error?.code == .noSuchReader)
    }

    @Test func fixedArrivalWaitsTheIntervalFromConnect() async throws {
        let clock = ManualClock()
        let transport = makeTransport(arrival: .init(pattern: .fixed, interval: .milliseconds(500)), clock: clock)
        clock.advance(by: .seconds(2))
        let connecting = Task { try await transport.connect(to: "sim-0", options: ConnectOptions()) }
        await clock.waitForSleepers(1)
        #expect(clock.pendingDeadlines.map(\.offset) == [.milliseconds(2500)])
        clock.advance(by: .milliseconds(499))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .milliseconds(1))
        let channel = try await connecting.value
        #expect(channel.uid.last == 1)
    }

    @Test func poissonArrivalFollowsTheSeededSampler() async throws {
        let clock = ManualClock()
        let arrival = SimulatorConfiguration.Arrival(pattern: .poisson, interval: .milliseconds(500), seed: 42)
        let transport = makeTransport(arrival: arrival, clock: clock)
        var sampler = ArrivalSampler(arrival)
        for _ in 0..<3 {
            let expected = sampler.nextDelay()
            let start = clock.now
            let connecting = Task { try await transport.connect(to: "sim-0", options: ConnectOptions()) }
            await clock.waitForSleepers(1)
            #expect(clock.pendingDeadlines == [start.advanced(by: expected)])
            clock.advance(by: expected)
            let channel = try await connecting.value
            await channel.close()
        }
    }

    @Test func poissonSamplerIsSeededAndHasTheConfiguredMean() {
        let arrival = SimulatorConfiguration.Arrival(pattern: .poisson, interval: .milliseconds(500), seed: 1)
        var a = ArrivalSampler(arrival)
        var b = ArrivalSampler(arrival)
        var c = ArrivalSampler(.init(pattern: .poisson, interval: .milliseconds(500), seed: 2))
        let first = (0..<20_000).map { _ in a.nextDelay() }
        #expect(first == (0..<20_000).map { _ in b.nextDelay() })
        #expect(first.prefix(10) != (0..<10).map { _ in c.nextDelay() }[...])
        #expect(first.allSatisfy { $0 >= .zero })
        let meanMs = first.reduce(Duration.zero, +) / 20_000 / .milliseconds(1)
        #expect(abs(meanMs - 500) < 15, "mean \(meanMs) ms")
    }

    @Test func cancellingAWaitingConnectThrowsCancelled() async throws {
        let clock = ManualClock()
        let transport = makeTransport(arrival: .init(pattern: .fixed, interval: .seconds(10)), clock: clock)
        var events = transport.events.makeAsyncIterator()
        let connecting = Task { try await transport.connect(to: "sim-0", options: ConnectOptions()) }
        await clock.waitForSleepers(1)
        connecting.cancel()
        let error = await proximaError { try await connecting.value }
        #expect(error?.code == .cancelled)
        #expect(error?.reader == "sim-0")
        #expect(clock.sleeperCount == 0)
        // The card was not taken: the next connect gets card 1 and is the first event.
        let next = Task { try await transport.connect(to: "sim-0", options: ConnectOptions()) }
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(10))
        #expect(try await next.value.uid.last == 1)
        #expect(await events.next() == .cardPresent("sim-0"))
    }

    @Test func airTimeIsSleptOnTheTimeSource() async throws {
        let clock = ManualClock()
        let transport = makeTransport(airTime: true, clock: clock)
        let channel = try await transport.connect(to: "sim-0", options: ConnectOptions())
        let transmitting = Task { try await channel.transmit(selectPPSECommand()) }
        await clock.waitForSleepers(1)
        let expected = AirTimeModel(bitRateKbps: 106, cardProcessing: .milliseconds(1))
            .exchangeTime(commandBytes: selectPPSE.count, responseBytes: 12)
        #expect(clock.pendingDeadlines.map(\.offset) == [expected])
        clock.advance(by: expected)
        #expect(try await transmitting.value.status == .success)
    }

    @Test func runAnnouncesReadersAndFinishesTheStreamWhenCancelled() async throws {
        let configuration = SimulatorConfiguration(
            airTime: false,
            readers: [
                .init(id: "a", cards: [testCard(1)]),
                .init(id: "b", name: "Reader B", extendedLength: false, cards: [testCard(2)]),
            ]
        )
        let transport = SimulatorTransport(id: "sim", configuration: configuration, time: SimulatorTime(ManualClock()))
        let running = Task { try await transport.run() }
        var events = transport.events.makeAsyncIterator()
        #expect(await events.next() == .appeared(ReaderInfo(id: "a", name: "a", transport: "sim")))
        #expect(
            await events.next()
                == .appeared(ReaderInfo(id: "b", name: "Reader B", transport: "sim", supportsExtendedLength: false))
        )
        running.cancel()
        try await running.value
        #expect(await events.next() == nil)
        #expect(await proximaError { try await transport.run() }?.code == .pluginFailed)
    }
}
