import CCIDReaderMock
import CCIDTransport
import Foundation
import ProximaCardEmulator
import ProximaCore
import Testing

/// A reader shaped by `options` (slots, dwFeatures, ATR) with nothing in it yet.
func addReader(_ readers: MockReaders, index: Int, slots: Int = 1, features: UInt32 = 0, atr: [UInt8] = []) throws {
    let added = atr.withUnsafeBufferPointer { atr in
        var options = ccid_mock_reader_options(
            slots: Int32(slots),
            features: features,
            atr: atr.isEmpty ? nil : atr.baseAddress,
            atr_length: atr.count
        )
        return ccid_mock_add_reader_with(readers.mock, Int32(index), &options)
    }
    guard added == 0 else { throw ProximaError(.pluginFailed, "ccid_mock_add_reader_with \(index) failed") }
}

func stats(_ readers: MockReaders, _ index: Int, slot: Int = 0) -> ccid_mock_slot_stats {
    ccid_mock_stats(readers.mock, Int32(index), Int32(slot))
}

/// Waits (at most 5 s) until `condition` holds: for the mock's counters, which have no event to wait on.
func waitUntil(_ what: String, _ condition: () -> Bool) async throws {
    let clock = ContinuousClock()
    let end = clock.now + .seconds(5)
    while !condition() {
        guard clock.now < end else { throw ProximaError(.deadlineExceeded, "no \(what) within 5 s") }
        try await Task.sleep(for: .milliseconds(5))
    }
}

extension CCIDUmockdevTests {
    static let twoSlots = (
        ReaderID("ccid/1209:cc1d 1-1 slot 0"),
        ReaderID("ccid/1209:cc1d 1-1 slot 1")
    )

    @Test(
        "an XfrBlock that times out is aborted: the ABORT request, then PC_to_RDR_Abort with its bSeq; the next APDU works"
    )
    func abortOnTimeout() async throws {
        let readers = try MockReaders(count: 1)
        let transport = ccidTransport(timeout: .milliseconds(300))
        try await withRunning(transport) { events in
            try await events.waitForAppeared()
            let channel = try await transport.openChannel(to: Self.reader1)
            ccid_mock_hold_next_answer(readers.mock, 1, 0)
            do {
                _ = try await channel.transmit(selectPPSE)
                Issue.record("expected cardTimeout")
            } catch let error as ProximaError {
                #expect(error.code == .cardTimeout)
                #expect(error.reason.contains("PC_to_RDR_Abort"))
            }
            let counts = stats(readers, 1)
            #expect(counts.control_aborts == 1)
            #expect(counts.bulk_aborts == 1)
            #expect(counts.matched_aborts == 1, "PC_to_RDR_Abort carries the bSeq the ABORT request named")
            // The aborted command's CMD_ABORTED answer was skipped as stale: the next APDU's bSeq lines up.
            #expect(try await channel.transmit(selectPPSE).status == .success)
            await channel.close()
        }
    }

    @Test("a cancelled APDU is aborted (ABORT request from another thread, then PC_to_RDR_Abort) and throws cancelled")
    func abortOnCancel() async throws {
        let readers = try MockReaders(count: 1)
        // A timeout far beyond the test's limits: only the cancellation can end the held exchange in time.
        let transport = ccidTransport(timeout: .seconds(600))
        try await withRunning(transport) { events in
            try await events.waitForAppeared()
            let channel = try await transport.openChannel(to: Self.reader1)
            ccid_mock_hold_next_answer(readers.mock, 1, 0)
            let before = stats(readers, 1).apdus
            let pending = Task { await errorCode { try await channel.transmit(selectPPSE) } }
            try await waitUntil("held XfrBlock") { stats(readers, 1).holding == 1 }
            pending.cancel()
            #expect(await pending.value == .cancelled)
            let counts = stats(readers, 1)
            #expect(counts.control_aborts == 1)
            #expect(counts.bulk_aborts == 1)
            #expect(counts.matched_aborts == 1)
            #expect(counts.apdus == before, "the held command never reached the card")
            #expect(try await channel.transmit(selectPPSE).status == .success)
            await channel.close()
        }
    }

    @Test("a 2-slot reader is two readers; NotifySlotChange's bits name the slot, and only that slot is asked")
    func twoSlotReader() async throws {
        let readers = try MockReaders(count: 0)
        try addReader(readers, index: 1, slots: 2)
        let cards = try (0..<2).map { _ in
            MockCard(try CardProfiles.load(contentsOf: configDirectory + "/cards/pay-visa-qvsdc.json"))
        }
        for (slot, card) in cards.enumerated() {
            ccid_mock_set_slot_card(
                readers.mock,
                1,
                Int32(slot),
                MockCard.callback,
                Unmanaged.passUnretained(card).toOpaque(),
                slot == 0 ? 1 : 0
            )
        }
        let (slot0, slot1) = Self.twoSlots
        let transport = ccidTransport(pollPeriod: .seconds(600))
        try await withRunning(transport) { events in
            try await events.wait(for: "card in slot 0") { $0 == .cardPresent(slot0) }
            let appeared = events.withLock {
                $0.compactMap { if case .appeared(let info) = $0 { info.id } else { nil } }
            }
            #expect(appeared == [slot0, slot1])
            let slot0Asked = stats(readers, 1, slot: 0).slot_status
            ccid_mock_set_slot_present(readers.mock, 1, 1, 1)
            try await events.wait(for: "card in slot 1") { $0 == .cardPresent(slot1) }
            #expect(stats(readers, 1, slot: 0).slot_status == slot0Asked, "slot 0's bit did not change")
            async let first = transport.openChannel(to: slot0)
            async let second = transport.openChannel(to: slot1)
            let channels = try await [first, second]
            try await withThrowingTaskGroup(of: StatusWord.self) { group in
                for channel in channels { group.addTask { try await channel.transmit(selectPPSE).status } }
                for try await status in group { #expect(status == .success) }
            }
            for channel in channels { await channel.close() }
            #expect(stats(readers, 1, slot: 0).apdus == 1)
            #expect(stats(readers, 1, slot: 1).apdus == 1)
            ccid_mock_set_slot_present(readers.mock, 1, 0, 0)
            try await events.wait(for: "removal from slot 0") { $0 == .cardRemoved(slot0) }
            #expect(!events.withLock { $0.contains(.cardRemoved(slot1)) })
            let channel = try await transport.openChannel(to: slot1)
            #expect(try await channel.transmit(selectPPSE).status == .success)
            await channel.close()
        }
        withExtendedLifetime(cards) {}
    }

    @Test(
        "a TPDU-level reader: host-side T=1 with IFS negotiation, chaining both ways, WTX and a bad LRC, through libusb"
    )
    func tpduReader() async throws {
        let readers = try MockReaders(count: 0)
        // T=1 offered, TA3 = 16: the card's IFSC, so the host chains SELECT PPSE (20 bytes) over two I-blocks.
        try addReader(readers, index: 1, features: 0x0001_00BA, atr: [0x3B, 0x80, 0x80, 0x11, 0x10, 0x01])
        let profile = configDirectory + "/cards/pay-visa-qvsdc.json"
        let card = T1Card(try CardProfiles.load(contentsOf: profile))
        ccid_mock_set_slot_card(readers.mock, 1, 0, T1Card.callback, Unmanaged.passUnretained(card).toOpaque(), 1)
        let transport = ccidTransport()
        try await withRunning(transport) { events in
            var reference = try CardProfiles.load(contentsOf: profile)
            try await events.waitForAppeared()
            let channel = try await transport.openChannel(to: Self.reader1)
            #expect(channel.atr == [0x3B, 0x80, 0x80, 0x11, 0x10, 0x01])
            #expect(stats(readers, 1).set_parameters == 1)
            #expect(card.blocksReceived == ["S(informationFieldSize request)"])
            let expected = reference.respond(to: selectPPSE.bytes)
            let response = try await channel.transmit(selectPPSE)
            #expect(response.data + [response.status.sw1, response.status.sw2] == expected)
            #expect(expected.count > 24, "the response is chained by the card")
            #expect(
                Array(card.blocksReceived.dropFirst(1).prefix(2)) == ["I(0, M, 16 bytes)", "I(1, 4 bytes)"],
                "the command is chained at the IFSC"
            )
            card.extendWaitingTimeBeforeNext()
            card.corruptNextInformationBlock()
            let before = card.blocksReceived.count
            let again = try await channel.transmit(selectPPSE)
            #expect(again.data + [again.status.sw1, again.status.sw2] == reference.respond(to: selectPPSE.bytes))
            let shapes = Array(card.blocksReceived.dropFirst(before))
            #expect(shapes.contains("S(waitingTimeExtension response)"))
            #expect(shapes.contains("R(1, checksumError)") || shapes.contains("R(0, checksumError)"))
            await channel.close()
        }
        withExtendedLifetime(card) {}
    }

    @Test("an interface busy because another process holds the device node: readerBusy names that process and its pid")
    func interfaceBusyNamesHolder() async throws {
        let readers = try MockReaders(count: 1)
        ccid_mock_set_busy(readers.mock, 1, 1)
        // The child inherits umockdev's preload, so it opens the test bed's node, as pcscd would open the real one.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/bin/sh")
        holder.arguments = ["-c", "exec 3<>/dev/bus/usb/001/001 && echo ready && exec sleep 600"]
        let output = Pipe()
        holder.standardOutput = output
        try holder.run()
        defer {
            // SIGKILL: under umockdev's preload the child does not die of SIGTERM.
            kill(holder.processIdentifier, SIGKILL)
            holder.waitUntilExit()
        }
        let ready = output.fileHandleForReading.availableData
        #expect(String(decoding: ready, as: UTF8.self).hasPrefix("ready"))
        let named = "sleep (pid \(holder.processIdentifier))"
        let transport = ccidTransport()
        try await withRunning(transport) { events in
            try await events.wait(for: "fault") { if case .fault = $0 { true } else { false } }
            let fault = events.withLock { $0.compactMap { if case .fault(_, let reason) = $0 { reason } else { nil } } }
            #expect(fault.first?.contains("held by \(named)") == true, "\(fault)")
            #expect(fault.first?.contains("/dev/bus/usb/001/001") == true)
            do {
                _ = try await transport.openChannel(to: Self.reader1)
                Issue.record("expected readerBusy")
            } catch let error as ProximaError {
                #expect(error.code == .readerBusy)
                #expect(error.reason.contains(named))
            }
        }
    }

    @Test(
        "hotplug: a reader plugged in after start, and one plugged back in, are found through libusb's hotplug callback"
    )
    func hotplug() async throws {
        let readers = try MockReaders(count: 1)
        let late = MockCard(try CardProfiles.load(contentsOf: configDirectory + "/cards/pay-visa-qvsdc.json"))
        // A rescan period beyond the test's limits: only the hotplug callback can find the readers in time.
        let transport = CCIDTransport(
            id: "ccid",
            configuration: CCIDConfiguration(
                devices: [CCIDConfiguration.DeviceID(vendor: 0x1209, product: 0xCC1D)],
                pollPeriod: .milliseconds(20),
                transferTimeout: .seconds(2),
                rescanPeriod: .seconds(600)
            )
        )
        let reader2 = ReaderID("ccid/1209:cc1d 1-2 slot 0")
        try await withRunning(transport) { events in
            try await events.wait(for: "card present") { $0 == .cardPresent(Self.reader1) }
            #expect(transport.usesHotplug)
            let added = ccid_mock_add_reader(
                readers.mock,
                2,
                MockCard.callback,
                Unmanaged.passUnretained(late).toOpaque(),
                1
            )
            #expect(added == 0)
            ccid_mock_announce(readers.mock, 2)
            try await events.wait(for: "the late reader") { $0 == .cardPresent(reader2) }
            let channel = try await transport.openChannel(to: reader2)
            #expect(try await channel.transmit(selectPPSE).status == .success)
            await channel.close()
            ccid_mock_unplug(readers.mock, 1)
            try await events.wait(for: "vanished") { $0 == .vanished(Self.reader1) }
            ccid_mock_replug(readers.mock, 1)
            try await events.waitUntil("reader 1 again") { seen in
                seen.filter { $0 == .cardPresent(Self.reader1) }.count >= 2
            }
        }
        withExtendedLifetime(late) {}
    }
}
