import CCIDReaderMock
import CCIDTransport
import Foundation
import PaymentCapability
import Proxima
import ProximaCardEmulator
import ProximaCore
import ProximaKernel
import Synchronization
import Testing

/// Whether this process runs under `umockdev-wrapper` (libumockdev-preload), which the libusb tests need:
/// `scripts/umockdev-tests.sh` (run by `make test`) starts them so.
let underUmockdev = ProcessInfo.processInfo.environment["LD_PRELOAD"]?.contains("umockdev") == true

/// The package's `Config` folder, found from this file's path.
let configDirectory: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Config").path

/// The virtual card behind one emulated reader; the C mock calls `respond` on umockdev's ioctl thread.
final class MockCard: Sendable {
    private let card: Mutex<any VirtualCard>
    init(_ card: any VirtualCard) { self.card = Mutex(card) }

    static let callback: ccid_mock_card_fn = { context, apdu, length, response, capacity in
        guard let context, let apdu, let response else { return 0 }
        let card = Unmanaged<MockCard>.fromOpaque(context).takeUnretainedValue()
        let answer = card.card.withLock { $0.respond(to: Array(UnsafeBufferPointer(start: apdu, count: length))) }
        let count = min(answer.count, capacity)
        answer.withUnsafeBufferPointer { response.update(from: $0.baseAddress!, count: count) }
        return count
    }
}

/// A umockdev testbed with `count` CCID readers, each with its own copy of a payment card in its field.
final class MockReaders: @unchecked Sendable {
    // The mock is only driven by the test that made it; the cards sit behind their own locks.
    let mock: OpaquePointer
    let cards: [MockCard]

    init(count: Int, card file: String = "pay-visa-qvsdc.json") throws {
        mock = ccid_mock_new()
        cards = try (0..<count).map { _ in
            MockCard(try CardProfiles.load(contentsOf: configDirectory + "/cards/" + file))
        }
        for (index, card) in cards.enumerated() {
            let added = ccid_mock_add_reader(
                mock,
                Int32(index + 1),
                MockCard.callback,
                Unmanaged.passUnretained(card).toOpaque(),
                1
            )
            guard added == 0 else { throw ProximaError(.pluginFailed, "ccid_mock_add_reader \(index + 1) failed") }
        }
    }

    deinit { ccid_mock_free(mock) }

    func apdus(_ reader: Int) -> Int { Int(ccid_mock_apdu_count(mock, Int32(reader))) }
}

let selectPPSE = try! CommandAPDU(
    cla: 0x00,
    ins: 0xA4,
    p1: 0x04,
    p2: 0x00,
    data: Array("2PAY.SYS.DDF01".utf8),
    expectedLength: 256
)

func ccidTransport(timeout: Duration = .seconds(2), pollPeriod: Duration = .milliseconds(20)) -> CCIDTransport {
    CCIDTransport(
        id: "ccid",
        configuration: CCIDConfiguration(
            devices: [CCIDConfiguration.DeviceID(vendor: 0x1209, product: 0xCC1D)],
            pollPeriod: pollPeriod,
            transferTimeout: timeout,
            rescanPeriod: .milliseconds(100)
        )
    )
}

/// A transport's events so far.
final class EventBox: Sendable {
    private let mutex = Mutex<[ReaderEvent]>([])
    func withLock<R: Sendable>(_ body: (inout [ReaderEvent]) -> R) -> R { mutex.withLock { body(&$0) } }
}

extension EventBox {
    /// Waits (at most 5 s) until an event matching `predicate` has been seen.
    func wait(for what: String, _ predicate: @escaping @Sendable (ReaderEvent) -> Bool) async throws {
        let clock = ContinuousClock()
        let end = clock.now + .seconds(5)
        while !withLock({ $0.contains(where: predicate) }) {
            guard clock.now < end else { throw ProximaError(.deadlineExceeded, "no \(what) within 5 s") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits (at most 5 s) until `condition` holds for the events so far.
    func waitUntil(_ what: String, _ condition: @escaping @Sendable ([ReaderEvent]) -> Bool) async throws {
        let clock = ContinuousClock()
        let end = clock.now + .seconds(5)
        while !condition(withLock { $0 }) {
            guard clock.now < end else { throw ProximaError(.deadlineExceeded, "no \(what) within 5 s") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    func waitForAppeared() async throws {
        try await wait(for: "reader") { if case .appeared = $0 { true } else { false } }
    }
}

/// Runs `body` while `transport` runs, with its events collected.
func withRunning<T: Sendable>(
    _ transport: CCIDTransport,
    _ body: @Sendable (EventBox) async throws -> T
) async throws -> T {
    let events = EventBox()
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            try await transport.run()
            return nil
        }
        group.addTask {
            for await event in transport.events { events.withLock { $0.append(event) } }
            return nil
        }
        let result = try await body(events)
        group.cancelAll()
        return result
    }
}

func errorCode<Value>(_ operation: () async throws -> Value) async -> ProximaError.Code? {
    do {
        _ = try await operation()
        return nil
    } catch let error as ProximaError {
        return error.code
    } catch let error as any ClassifiedError {
        return error.kernelCode
    } catch {
        return nil
    }
}

/// libusb's real usbfs backend against CCID readers emulated under umockdev (`Tests/CCIDReaderMock`).
@Suite(
    "CCID transport through libusb under umockdev",
    .serialized,
    .enabled(if: underUmockdev),
    .timeLimit(.minutes(1))
)
struct CCIDUmockdevTests {
    static let reader1 = ReaderID("ccid/1209:cc1d 1-1 slot 0")

    @Test("discovery: one reader per slot appears, the card is powered and answers APDUs")
    func discovery() async throws {
        let readers = try MockReaders(count: 1)
        let transport = ccidTransport()
        try await withRunning(transport) { events in
            try await events.waitForAppeared()
            let channel = try await transport.openChannel(to: Self.reader1)
            #expect(channel.atr == [0x3B, 0x80, 0x80, 0x01, 0x01])
            #expect(channel.technology == .iso14443A)
            #expect(channel.supportsExtendedLength)
            let response = try await channel.transmit(selectPPSE)
            #expect(response.status == .success)
            #expect(response.data.first == 0x6F)
            await channel.close()
            let seen = events.withLock { $0 }
            #expect(
                seen.first.map { if case .appeared(let info) = $0 { info.name } else { "" } } == "1209:cc1d 1-1 slot 0"
            )
            #expect(seen.contains(.cardPresent(Self.reader1)))
        }
        #expect(readers.apdus(1) == 1)
    }

    @Test("time extensions ×5 are waited through; a stale bSeq is skipped, four of them fail the APDU")
    func timeExtensionAndSequence() async throws {
        let readers = try MockReaders(count: 1)
        let transport = ccidTransport()
        try await withRunning(transport) { events in
            try await events.waitForAppeared()
            let channel = try await transport.openChannel(to: Self.reader1)
            ccid_mock_time_extensions(readers.mock, 1, 5)
            #expect(try await channel.transmit(selectPPSE).status == .success)
            ccid_mock_wrong_sequence(readers.mock, 1, 1)
            #expect(try await channel.transmit(selectPPSE).status == .success)
            ccid_mock_wrong_sequence(readers.mock, 1, 4)
            #expect(await errorCode { try await channel.transmit(selectPPSE) } == .transmitFailed)
            await channel.close()
        }
    }

    @Test("a slot error (ICC_MUTE) fails the APDU with cardTimeout naming bError; the next APDU works")
    func slotError() async throws {
        let readers = try MockReaders(count: 1)
        let transport = ccidTransport()
        try await withRunning(transport) { events in
            try await events.waitForAppeared()
            let channel = try await transport.openChannel(to: Self.reader1)
            ccid_mock_slot_error(readers.mock, 1, 0xFE)
            do {
                _ = try await channel.transmit(selectPPSE)
                Issue.record("expected ICC_MUTE")
            } catch let error as ProximaError {
                #expect(error.code == .cardTimeout)
                #expect(error.reason.contains("ICC_MUTE (FE)"))
            }
            #expect(try await channel.transmit(selectPPSE).status == .success)
            await channel.close()
        }
    }

    @Test("an interface held by another driver: the reader is faulted, a connect fails with readerBusy")
    func interfaceBusy() async throws {
        let readers = try MockReaders(count: 1)
        ccid_mock_set_busy(readers.mock, 1, 1)
        let transport = ccidTransport()
        try await withRunning(transport) { events in
            try await events.wait(for: "fault") { if case .fault = $0 { true } else { false } }
            let fault = events.withLock { $0.compactMap { if case .fault(_, let reason) = $0 { reason } else { nil } } }
            #expect(fault.first?.contains("LIBUSB_ERROR_BUSY") == true, "\(fault)")
            #expect(await errorCode { try await transport.openChannel(to: Self.reader1) } == .readerBusy)
            ccid_mock_set_busy(readers.mock, 1, 0)
            try await events.wait(for: "recovery") { $0 == .recovered(Self.reader1) }
            let channel = try await transport.openChannel(to: Self.reader1)
            #expect(try await channel.transmit(selectPPSE).status == .success)
            await channel.close()
        }
    }

    @Test("a card taken out and put back: removed, then present again and readable")
    func cardOutAndIn() async throws {
        let readers = try MockReaders(count: 1)
        let transport = ccidTransport()
        try await withRunning(transport) { events in
            try await events.waitForAppeared()
            let first = try await transport.openChannel(to: Self.reader1)
            await first.close()
            ccid_mock_set_card_present(readers.mock, 1, 0)
            try await events.wait(for: "removal") { $0 == .cardRemoved(Self.reader1) }
            #expect(await errorCode { try await first.transmit(selectPPSE) } == .invalidArgument)
            ccid_mock_set_card_present(readers.mock, 1, 1)
            let second = try await transport.openChannel(to: Self.reader1)
            #expect(try await second.transmit(selectPPSE).status == .success)
            await second.close()
            #expect(events.withLock { $0.filter { $0 == .cardPresent(Self.reader1) }.count } == 2)
        }
    }

    @Test("card events come from NotifySlotChange on the interrupt endpoint, without waiting for a poll")
    func notifySlotChange() async throws {
        let readers = try MockReaders(count: 1)
        // A poll period far beyond the test's limits: only the interrupt endpoint can report these changes in time.
        let transport = ccidTransport(pollPeriod: .seconds(600))
        try await withRunning(transport) { events in
            try await events.wait(for: "card present") { $0 == .cardPresent(Self.reader1) }
            ccid_mock_set_card_present(readers.mock, 1, 0)
            try await events.wait(for: "removal") { $0 == .cardRemoved(Self.reader1) }
            ccid_mock_set_card_present(readers.mock, 1, 1)
            let channel = try await transport.openChannel(to: Self.reader1)
            #expect(try await channel.transmit(selectPPSE).status == .success)
            await channel.close()
            #expect(events.withLock { $0.filter { $0 == .cardPresent(Self.reader1) }.count } == 2)
        }
    }

    @Test("a reader unplugged (uevent, ENODEV) is reported vanished; plugged back, it appears again and reads")
    func unplugAndReplug() async throws {
        let readers = try MockReaders(count: 1)
        let transport = ccidTransport()
        try await withRunning(transport) { events in
            try await events.wait(for: "card present") { $0 == .cardPresent(Self.reader1) }
            ccid_mock_unplug(readers.mock, 1)
            try await events.wait(for: "vanished") { $0 == .vanished(Self.reader1) }
            #expect(await errorCode { try await transport.openChannel(to: Self.reader1) } == .readerVanished)
            ccid_mock_replug(readers.mock, 1)
            try await events.waitUntil("second appearance") { seen in
                seen.filter { if case .appeared = $0 { true } else { false } }.count >= 2
            }
            let channel = try await transport.openChannel(to: Self.reader1)
            #expect(try await channel.transmit(selectPPSE).status == .success)
            await channel.close()
        }
    }

    @Test("20 CCID readers in one kernel (past pcscd's 16) each read a payment in parallel, one lane each")
    func twentyReadersInParallel() async throws {
        let count = 20
        let readers = try MockReaders(count: count)
        let lanes = (1...count).map { #"{ "id": "lane-\#($0)", "readerNames": ["1209:cc1d 1-\#($0) slot 0"] }"# }
        let text = """
            { "schemaVersion": 1,
              "plugins": [ { "id": "ccid", "type": "ccid", "config": { "devices": ["1209:cc1d"], "pollPeriodMs": 20 } } ],
              "lanes": [\(lanes.joined(separator: ", "))] }
            """
        let manifest = try Manifest.parse(
            Array(text.utf8),
            baseDirectory: configDirectory,
            registry: BuiltinPlugins.registry
        )
        let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
        let results = try await withThrowingTaskGroup(of: [Int: (EMVOutcome, ReaderID)]?.self) { group in
            group.addTask {
                await kernel.run()
                return nil
            }
            let clock = ContinuousClock()
            let end = clock.now + .seconds(10)
            while await kernel.snapshot().readers.filter({ $0.state == .idle }).count < count, clock.now < end {
                try await Task.sleep(for: .milliseconds(20))
            }
            let reads = try await withThrowingTaskGroup(of: (Int, EMVOutcome, ReaderID).self) { reads in
                for lane in 1...count {
                    reads.addTask {
                        try await kernel.tap(lane: LaneID("lane-\(lane)"), options: TapOptions(timeout: .seconds(20))) {
                            channel,
                            context in
                            let transaction = EMVTransaction(
                                amountAuthorised: 2999,
                                currencyCode: 840,
                                date: TransactionDate(year: 2026, month: 3, day: 14, hour: 9, minute: 26, second: 53)
                            )
                            let outcome = try await EMVPaymentCapability().run(
                                transaction,
                                on: channel,
                                context: context
                            )
                            return (lane, outcome, context.reader)
                        }
                    }
                }
                var results: [Int: (EMVOutcome, ReaderID)] = [:]
                for try await (lane, outcome, reader) in reads { results[lane] = (outcome, reader) }
                return results
            }
            group.cancelAll()
            return reads
        }
        let finished = results
        #expect(finished.count == count)
        for lane in 1...count {
            let (outcome, reader) = try #require(finished[lane])
            #expect(reader == ReaderID("ccid/1209:cc1d 1-\(lane) slot 0"))
            #expect(outcome.status == .onlineRequest)
            #expect(outcome.lastFourDigits == "0119")
            #expect(outcome.cardData[0x9F36] == [0, 1], "each reader has its own card: its first transaction")
            #expect(readers.apdus(lane) >= 4)
        }
    }
}
