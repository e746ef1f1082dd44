import Foundation
import LibNFCTransport
import PaymentCapability
import ProximaCardEmulator
import ProximaCore
import ProximaKernel
import Synchronization
import Testing

/// libnfc's real `pn532_uart` driver against the PN532 emulator on a pseudo-terminal: Proxima's libnfc transport
/// and Debian's `nfc-list` both see the emulated board and its card.
@Suite("libnfc transport through pn532_uart and the PN532 emulator", .serialized, .timeLimit(.minutes(1)))
struct LibNFCLiveTests {
    @Test("nfc-list (libnfc-bin) finds the emulated PN532 and the card's UID and ATS")
    func nfcList() throws {
        let tool = "/usr/bin/nfc-list"
        try #require(FileManager.default.isExecutableFile(atPath: tool), "install libnfc-bin")
        let host = try startedHost(try loadCard("pay-visa-qvsdc.json"))
        defer { host.stop() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        var environment = ProcessInfo.processInfo.environment
        environment["LIBNFC_DEVICE"] = host.connstring
        environment["LIBNFC_LOG_LEVEL"] = "0"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(text.contains("1 ISO14443A passive target(s) found"), "\(text)")
        #expect(text.contains("UID (NFCID3): 08  c1  d2  e3"), "\(text)")
        #expect(text.contains("SAK (SEL_RES): 20"), "\(text)")
        #expect(text.contains("ATS: 78  80  70  02"), "\(text)")
        #expect(!text.contains("ISO14443B"), "a Type A card only: \(text)")
    }

    @Test("discovery: the reader appears, the card is found with its UID, ATS, pseudo-ATR and technology")
    func discovery() async throws {
        let host = try startedHost(try loadCard("pay-visa-qvsdc.json"))
        defer { host.stop() }
        let nfc = transport(for: [host])
        let reader = nfc.readerID(forConnstring: host.connstring)
        #expect(nfc.declaredReaders?.map(\.id) == [reader])
        try await withTransport(nfc) { log in
            try await log.wait(for: "card present") { $0 == .cardPresent(reader) }
            #expect(
                log.events.first
                    == .appeared(
                        ReaderInfo(id: reader, name: host.connstring, transport: "nfc", supportsExtendedLength: false)
                    )
            )
            let channel = try await nfc.openChannel(to: reader)
            #expect(channel.uid == [0x08, 0xC1, 0xD2, 0xE3])
            #expect(channel.ats == [0x05, 0x78, 0x80, 0x70, 0x02])
            // The ATS 05 78 80 70 02 is TL, T0, TA, TB, TC: no historical bytes, so the pseudo-ATR has none.
            #expect(channel.atr == [0x3B, 0x80, 0x80, 0x01, 0x01])
            #expect(channel.technology == .iso14443A)
            #expect(channel.supportsExtendedLength == false)
            let response = try await channel.transmit(selectPPSE)
            #expect(response.status == .success)
            #expect(response.data.first == 0x6F)
            await channel.close()
        }
        #expect(host.apduCount == 1)
    }

    @Test("a task preferring the channel's executor (as the kernel runs a tap) calls libnfc without a hop; others hop")
    func transmitOnDeviceThread() async throws {
        let host = try startedHost(try loadCard("pay-visa-qvsdc.json"))
        defer { host.stop() }
        let nfc = transport(for: [host])
        let reader = nfc.readerID(forConnstring: host.connstring)
        try await withTransport(nfc) { log in
            try await log.wait(for: "card present") { $0 == .cardPresent(reader) }
            let channel = try await nfc.openChannel(to: reader)
            #expect(channel.preferredTaskExecutor != nil)
            #expect(try await channel.transmit(selectPPSE).status == .success)
            let statuses = try await withTaskExecutorPreference(channel.preferredTaskExecutor) {
                var statuses: [StatusWord] = []
                for _ in 0..<3 { statuses.append(try await channel.transmit(selectPPSE).status) }
                return statuses
            }
            #expect(statuses == [.success, .success, .success])
            #expect(channel.transmitPaths.direct == 3)
            #expect(channel.transmitPaths.hopped == 1)
            await channel.close()
        }
        #expect(host.apduCount == 4)
    }

    @Test("an ISO 14443-B card is found by Type B polling, its PUPI as UID")
    func typeBCard() async throws {
        let card = ScriptedCard(
            name: "type B test card",
            technology: .iso14443B,
            uid: [0x1A, 0x2B, 0x3C, 0x4D],
            exchanges: [ScriptedCard.Exchange(command: [0x00, 0xA4], match: .prefix, response: [0x90, 0x00])]
        )
        let host = try startedHost(card)
        defer { host.stop() }
        let nfc = transport(for: [host])
        let reader = nfc.readerID(forConnstring: host.connstring)
        try await withTransport(nfc) { log in
            let channel = try await nfc.openChannel(to: reader)
            #expect(channel.technology == .iso14443B)
            #expect(channel.uid == [0x1A, 0x2B, 0x3C, 0x4D])
            #expect(channel.ats.isEmpty)
            #expect(try await channel.transmit(selectPPSE).status == .success)
            await channel.close()
        }
    }

    @Test("payment reads through the kernel on two PN532 boards, one lane each")
    func paymentRead() async throws {
        let visa = try startedHost(try loadCard("pay-visa-qvsdc.json"))
        let mastercard = try startedHost(try loadCard("pay-mastercard-mchip.json"))
        defer {
            visa.stop()
            mastercard.stop()
        }
        let manifest = try libnfcManifest([visa.connstring, mastercard.connstring])
        let reads = try await withKernel(manifest, readers: 2) { kernel in
            async let first = readPayment(kernel, lane: "lane-0")
            async let second = readPayment(kernel, lane: "lane-1")
            return try await [first, second]
        }
        #expect(reads[0].reader == ReaderID("nfc/" + visa.connstring))
        #expect(reads[0].outcome.status == .onlineRequest)
        #expect(reads[0].outcome.selectedApplicationIdentifier?.hexString == "A0000000031010")
        #expect(reads[0].outcome.lastFourDigits == "0119")
        #expect(reads[0].outcome.cardData[0x9F26]?.count == 8)
        #expect(reads[0].outcome.cardData[0x9F36] == [0, 1])
        #expect(reads[1].reader == ReaderID("nfc/" + mastercard.connstring))
        #expect(reads[1].outcome.selectedApplicationIdentifier?.hexString == "A0000000041010")
        #expect(reads[1].outcome.lastFourDigits == "0012")
        #expect(reads[1].outcome.cardData[0x9F36] == [0, 0x2A])
        #expect(visa.apduCount >= 4)
    }

    @Test("a card pulled in the middle of a read ends it with cardRemoved, and the next card is read")
    func cardPulledMidRead() async throws {
        let card = try loadCard("pay-visa-qvsdc.json")
        let host = try startedHost(card)
        defer { host.stop() }
        host.removeCard(afterAPDUs: 2)
        let manifest = try libnfcManifest([host.connstring])
        try await withKernel(manifest, readers: 1) { kernel in
            let code = await errorCode { try await readPayment(kernel, lane: "lane-0") }
            #expect(code == .cardRemoved)
            #expect(host.apduCount == 2)
            #expect(!host.hasCard)
            host.insert(card)
            let read = try await readPayment(kernel, lane: "lane-0")
            #expect(read.outcome.lastFourDigits == "0119")
        }
    }

    @Test("the emulator killed: the reader is faulted, and recovered when the board comes back on the same port")
    func emulatorKilledAndBack() async throws {
        let host = try startedHost(try loadCard("pay-visa-qvsdc.json"))
        defer { host.stop() }
        let nfc = transport(for: [host])
        let reader = nfc.readerID(forConnstring: host.connstring)
        try await withTransport(nfc) { log in
            try await log.wait(for: "card present") { $0 == .cardPresent(reader) }
            host.stop()
            try await log.wait(for: "fault") {
                if case .fault(reader, _) = $0 { return true }
                return false
            }
            let faultIndex = log.count
            // While faulted, a connect fails at once instead of waiting.
            let code = await errorCode { try await nfc.openChannel(to: reader) }
            #expect(code == .readerFaulted)
            try host.start()
            try await log.wait(from: faultIndex - 1, for: "recovered") { $0 == .recovered(reader) }
            let channel = try await nfc.openChannel(to: reader)
            #expect(try await channel.transmit(selectPPSE).status == .success)
            await channel.close()
            let faults = log.events.filter {
                if case .fault = $0 { return true }
                return false
            }
            #expect(faults.count == 1, "one fault report for one outage: \(faults)")
        }
    }

    @Test(
        "a corrupted answer from the board fails that APDU with transmitFailed; the next APDU works",
        arguments: [
            PN532CardHost.Fault.badDataChecksum, .badLengthChecksum, .corruptFrame, .errorFrame,
        ]
    )
    func corruptedFrame(fault: PN532CardHost.Fault) async throws {
        let host = try startedHost(try loadCard("pay-visa-qvsdc.json"))
        defer { host.stop() }
        let nfc = transport(for: [host])
        let reader = nfc.readerID(forConnstring: host.connstring)
        try await withTransport(nfc) { log in
            let channel = try await nfc.openChannel(to: reader)
            host.inject(fault)
            let code = await errorCode { try await channel.transmit(selectPPSE) }
            #expect(code == .transmitFailed)
            #expect(try await channel.transmit(selectPPSE).status == .success)
            await channel.close()
            #expect(!log.events.contains { if case .fault = $0 { return true } else { return false } })
        }
    }

    @Test("a NACK storm: the APDU fails with readerFaulted, the reader is faulted until the storm ends")
    func nackStorm() async throws {
        let host = try startedHost(try loadCard("pay-visa-qvsdc.json"))
        defer { host.stop() }
        let nfc = transport(for: [host])
        let reader = nfc.readerID(forConnstring: host.connstring)
        try await withTransport(nfc) { log in
            let channel = try await nfc.openChannel(to: reader)
            host.inject(.nack, command: nil, times: nil)
            let code = await errorCode { try await channel.transmit(selectPPSE) }
            #expect(code == .readerFaulted)
            try await log.wait(for: "fault") {
                if case .fault(reader, _) = $0 { return true }
                return false
            }
            await channel.close()
            host.clearFaults()
            try await log.wait(for: "recovered") { $0 == .recovered(reader) }
            let next = try await nfc.openChannel(to: reader)
            #expect(try await next.transmit(selectPPSE).status == .success)
            await next.close()
        }
    }

    @Test("a board that stops answering in the middle of an APDU: readerFaulted within the APDU timeout, no hang")
    func muteBoard() async throws {
        let host = try startedHost(try loadCard("pay-visa-qvsdc.json"))
        defer { host.stop() }
        let nfc = transport(for: [host], apduTimeout: .milliseconds(200))
        let reader = nfc.readerID(forConnstring: host.connstring)
        try await withTransport(nfc) { log in
            let channel = try await nfc.openChannel(to: reader)
            host.inject(.mute, command: nil, times: nil)
            let code = await errorCode { try await channel.transmit(selectPPSE) }
            #expect(code == .readerFaulted)
            await channel.close()
            host.clearFaults()
            try await log.wait(for: "recovered") { $0 == .recovered(reader) }
        }
    }

    @Test("waiting for a card on an empty field ends with cancelled when the task is cancelled")
    func cancelledWhileWaiting() async throws {
        let host = try startedHost(nil)
        defer { host.stop() }
        let nfc = transport(for: [host])
        let reader = nfc.readerID(forConnstring: host.connstring)
        try await withTransport(nfc) { log in
            let waiting = Task { await errorCode { try await nfc.openChannel(to: reader) } }
            waiting.cancel()
            #expect(await waiting.value == .cancelled)
            #expect(!log.events.contains(.cardPresent(reader)))
        }
    }

    @Test("the emulator's schedule inserts and removes the card; the transport reports each presence")
    func insertRemoveSchedule() async throws {
        let host = try startedHost(nil)
        defer { host.stop() }
        let nfc = transport(for: [host])
        let reader = nfc.readerID(forConnstring: host.connstring)
        let card = try loadCard("pay-visa-qvsdc.json")
        try await withTransport(nfc) { log in
            try await log.wait(for: "appeared") {
                if case .appeared = $0 { return true }
                return false
            }
            let schedule = VPCDCardHost.Schedule(taps: 2, present: .milliseconds(300), absent: .milliseconds(300))
            await host.run(schedule, card: card, clock: ContinuousClock())
            let removals = Mutex(0)
            try await log.wait(for: "two removals") { event in
                removals.withLock { count in
                    if event == .cardRemoved(reader) { count += 1 }
                    return count >= 2
                }
            }
            let presence = log.events.filter { $0 == .cardPresent(reader) || $0 == .cardRemoved(reader) }
            #expect(
                presence == [.cardPresent(reader), .cardRemoved(reader), .cardPresent(reader), .cardRemoved(reader)]
            )
            #expect(!host.hasCard)
        }
    }

    @Test("a second connect waits while the first channel is open, and gets the card when it closes")
    func secondConnectWaitsForTheFirst() async throws {
        let host = try startedHost(try loadCard("pay-visa-qvsdc.json"))
        defer { host.stop() }
        let nfc = transport(for: [host])
        let reader = nfc.readerID(forConnstring: host.connstring)
        try await withTransport(nfc) { log in
            let first = try await nfc.openChannel(to: reader)
            let second = Task { try await nfc.openChannel(to: reader) }
            #expect(try await first.transmit(selectPPSE).status == .success)
            await first.close()
            let channel = try await second.value
            #expect(try await channel.transmit(selectPPSE).status == .success)
            await channel.close()
            #expect(log.events.filter { $0 == .cardPresent(reader) }.count == 1)
        }
    }
}
