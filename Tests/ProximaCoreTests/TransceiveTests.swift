import ProximaCore
import ProximaTestSupport
import Testing

private func response(_ data: [UInt8], _ status: UInt16) -> ResponseAPDU {
    ResponseAPDU(data: data, status: StatusWord(rawValue: status))
}

@Suite("CardChannel.transceive: GET RESPONSE, 6Cxx and command chaining (ISO/IEC 7816-4)")
struct TransceiveTests {
    private let selectPPSE = bytes("00A404000E 325041592E5359532E4444463031 00")

    @Test("61xx: GET RESPONSE with Le = SW2 collects the data")
    func getResponseOnce() async throws {
        let channel = ScriptedChannel()
        channel.expect(selectPPSE, respond: response([], 0x6110))
        channel.expect(bytes("00C0000010"), respond: response(counting(16), 0x9000))

        let result = try await channel.transceive(CommandAPDU(bytes: selectPPSE))

        #expect(result.data == counting(16))
        #expect(result.status == .success)
        try channel.finish()
    }

    @Test("multi-step 61xx chain concatenates every answer, 6100 asking for 256")
    func getResponseChain() async throws {
        let channel = ScriptedChannel()
        channel.expect(selectPPSE, respond: response(counting(3, from: 0xA0), 0x6100))
        channel.expect(bytes("00C0000000"), respond: response(counting(256), 0x6105))
        channel.expect(bytes("00C0000005"), respond: response(counting(5, from: 0xF0), 0x6283))

        let result = try await channel.transceive(CommandAPDU(bytes: selectPPSE))

        #expect(result.data == counting(3, from: 0xA0) + counting(256) + counting(5, from: 0xF0))
        #expect(result.data.count == 264)
        #expect(result.status == .selectedFileInvalidated, "the last status word is the one returned")
        try channel.finish()
    }

    @Test(
        "GET RESPONSE keeps only the logical channel of the command's CLA",
        arguments: [
            (0x00, 0x00), (0x01, 0x01), (0x03, 0x03), (0x0C, 0x00), (0x0D, 0x01), (0x10, 0x00),
            (0x80, 0x00), (0x84, 0x00), (0x83, 0x03), (0x40, 0x40), (0x4F, 0x4F), (0x6A, 0x4A), (0xC5, 0x45),
        ] as [(UInt8, UInt8)]
    )
    func getResponseClass(commandClass: UInt8, getResponseClass: UInt8) async throws {
        let channel = ScriptedChannel()
        let command = try CommandAPDU(cla: commandClass, ins: 0xCA, p1: 0x9F, p2: 0x17, expectedLength: 256)
        channel.expect(command.bytes, respond: response([], 0x6104))
        channel.expect([getResponseClass, 0xC0, 0x00, 0x00, 0x04], respond: response(counting(4), 0x9000))

        let result = try await channel.transceive(command)

        #expect(result.data == counting(4))
        try channel.finish()
    }

    @Test("6Cxx: the command is sent once more with Le = SW2")
    func wrongLengthReissued() async throws {
        let channel = ScriptedChannel()
        channel.expect(bytes("00B2010C00"), respond: response([], 0x6C1A))
        channel.expect(bytes("00B2010C1A"), respond: response(counting(26), 0x9000))

        let result = try await channel.transceive(CommandAPDU(bytes: bytes("00B2010C00")))

        #expect(result == response(counting(26), 0x9000))
        try channel.finish()
    }

    @Test("6C00 asks for Le 256, sent as 00")
    func wrongLength256() async throws {
        let channel = ScriptedChannel()
        channel.expect(bytes("00B2010C10"), respond: response([], 0x6C00))
        channel.expect(bytes("00B2010C00"), respond: response(counting(256), 0x9000))

        let result = try await channel.transceive(CommandAPDU(bytes: bytes("00B2010C10")))

        #expect(result.data.count == 256)
        try channel.finish()
    }

    @Test("a second 6Cxx is returned as it is")
    func secondWrongLengthReturned() async throws {
        let channel = ScriptedChannel()
        channel.expect(bytes("00B2010C00"), respond: response([], 0x6C1A))
        channel.expect(bytes("00B2010C1A"), respond: response([], 0x6C1B))

        let result = try await channel.transceive(CommandAPDU(bytes: bytes("00B2010C00")))

        #expect(result.status == StatusWord(rawValue: 0x6C1B))
        #expect(result.data.isEmpty)
        try channel.finish()
    }

    @Test("6Cxx then 61xx: the re-issued command's data is collected with GET RESPONSE")
    func wrongLengthThenMoreData() async throws {
        let channel = ScriptedChannel()
        channel.expect(bytes("80CA9F1700"), respond: response([], 0x6C04))
        channel.expect(bytes("80CA9F1704"), respond: response(counting(2), 0x6102))
        channel.expect(bytes("00C0000002"), respond: response(counting(2, from: 2), 0x9000))

        let result = try await channel.transceive(CommandAPDU(bytes: bytes("80CA9F1700")))

        #expect(result == response(counting(4), 0x9000))
        try channel.finish()
    }

    @Test("a GET RESPONSE answered 6Cxx is sent once more with that Le")
    func getResponseWrongLength() async throws {
        let channel = ScriptedChannel()
        channel.expect(selectPPSE, respond: response([], 0x6120))
        channel.expect(bytes("00C0000020"), respond: response([], 0x6C18))
        channel.expect(bytes("00C0000018"), respond: response(counting(24), 0x9000))

        let result = try await channel.transceive(CommandAPDU(bytes: selectPPSE))

        #expect(result == response(counting(24), 0x9000))
        try channel.finish()
    }

    @Test("a 600-byte command on a short-only reader is chained in 255-byte chunks, Le only on the last")
    func chainsOnShortOnlyReader() async throws {
        let channel = ScriptedChannel(supportsExtendedLength: false)
        let data = counting(600)
        channel.expect(bytes("10C30000FF") + data[0..<255], respond: response([], 0x9000))
        channel.expect(bytes("10C30000FF") + data[255..<510], respond: response([], 0x9000))
        channel.expect(bytes("00C300005A") + data[510..<600] + [0x00], respond: response(counting(8), 0x9000))

        let command = try CommandAPDU(cla: 0x00, ins: 0xC3, p1: 0x00, p2: 0x00, data: data, expectedLength: 256)
        let result = try await channel.transceive(command)

        #expect(result == response(counting(8), 0x9000))
        let sent = channel.transmitted
        #expect(sent.map(\.cla) == [0x10, 0x10, 0x00])
        #expect(sent.map(\.data.count) == [255, 255, 90])
        #expect(sent.map(\.expectedLength) == [nil, nil, 256])
        try channel.finish()
    }

    @Test("chaining keeps the logical channel and proprietary class, adding only b5")
    func chainingClassBits() async throws {
        let channel = ScriptedChannel(supportsExtendedLength: false)
        let data = counting(300)
        channel.expect(bytes("93E20000FF") + data[0..<255], respond: response([], 0x9000))
        channel.expect(bytes("83E200002D") + data[255..<300], respond: response([], 0x9000))

        let command = try CommandAPDU(cla: 0x83, ins: 0xE2, p1: 0x00, p2: 0x00, data: data)
        let result = try await channel.transceive(command)

        #expect(result.status == .success)
        try channel.finish()
    }

    @Test("an extended Le on a short-only reader becomes 00, and 61xx brings the rest")
    func extendedLeOnShortReader() async throws {
        let channel = ScriptedChannel(supportsExtendedLength: false)
        channel.expect(bytes("00B0000000"), respond: response(counting(256), 0x6100))
        channel.expect(bytes("00C0000000"), respond: response(counting(256, from: 0x80), 0x6110))
        channel.expect(bytes("00C0000010"), respond: response(counting(16), 0x9000))

        let command = try CommandAPDU(cla: 0x00, ins: 0xB0, p1: 0x00, p2: 0x00, expectedLength: 65_536)
        let result = try await channel.transceive(command)

        #expect(result.data.count == 528)
        #expect(result.status == .success)
        try channel.finish()
    }

    @Test("a chained command with extended Le on a short-only reader sends Le 00 on the last chunk")
    func chainedExtendedLe() async throws {
        let channel = ScriptedChannel(supportsExtendedLength: false)
        let data = counting(256)
        channel.expect(bytes("10C30000FF") + data[0..<255], respond: response([], 0x9000))
        channel.expect(bytes("00C3000001") + data[255..<256] + [0x00], respond: response(counting(256), 0x6102))
        channel.expect(bytes("00C0000002"), respond: response(counting(2), 0x9000))

        let command = try CommandAPDU(cla: 0x00, ins: 0xC3, p1: 0x00, p2: 0x00, data: data, expectedLength: 65_536)
        let result = try await channel.transceive(command)

        #expect(result.data == counting(256) + counting(2))
        try channel.finish()
    }

    @Test("an error status word in the middle of a chain is returned at once")
    func chainStopsOnError() async throws {
        let channel = ScriptedChannel(supportsExtendedLength: false)
        let data = counting(600)
        channel.expect(bytes("10DA0000FF") + data[0..<255], respond: response([], 0x9000))
        channel.expect(bytes("10DA0000FF") + data[255..<510], respond: response([], 0x6A80))

        let command = try CommandAPDU(cla: 0x00, ins: 0xDA, p1: 0x00, p2: 0x00, data: data)
        let result = try await channel.transceive(command)

        #expect(result.status == StatusWord(rawValue: 0x6A80))
        #expect(channel.transmitted.count == 2, "the last chunk must not be sent")
        try channel.finish()
    }

    @Test("a mid-chain 6Cxx or 61xx is not acted on: it is returned as the chain's answer")
    func chainDoesNotReissueMidChain() async throws {
        let channel = ScriptedChannel(supportsExtendedLength: false)
        let data = counting(300)
        channel.expect(bytes("10DA0000FF") + data[0..<255], respond: response([], 0x6C10))

        let command = try CommandAPDU(cla: 0x00, ins: 0xDA, p1: 0x00, p2: 0x00, data: data, expectedLength: 16)
        let result = try await channel.transceive(command)

        #expect(result.status == StatusWord(rawValue: 0x6C10))
        try channel.finish()
    }

    @Test("a command over maximumCommandLength on an extended reader is chained to fit")
    func chainsToFitMaximumCommandLength() async throws {
        let channel = ScriptedChannel(supportsExtendedLength: true, maximumCommandLength: 100)
        let data = counting(200)
        // 100 bytes minus header 4, extended Lc 3 and Le 2 leaves 91 per chunk.
        channel.expect(bytes("10D600005B") + data[0..<91], respond: response([], 0x9000))
        channel.expect(bytes("10D600005B") + data[91..<182], respond: response([], 0x9000))
        channel.expect(bytes("00D6000012") + data[182..<200], respond: response([], 0x9000))

        let command = try CommandAPDU(cla: 0x00, ins: 0xD6, p1: 0x00, p2: 0x00, data: data)
        let result = try await channel.transceive(command)

        #expect(result.status == .success)
        #expect(channel.transmitted.allSatisfy { $0.bytes.count <= 100 })
        try channel.finish()
    }

    @Test("an extended command on an extended reader goes out as one APDU")
    func extendedFits() async throws {
        let channel = ScriptedChannel(supportsExtendedLength: true)
        let command = try CommandAPDU(
            cla: 0x00,
            ins: 0xC3,
            p1: 0x00,
            p2: 0x00,
            data: counting(600),
            expectedLength: 65_536
        )
        channel.expect(command.bytes, respond: response(counting(1000), 0x9000))

        let result = try await channel.transceive(command)

        #expect(result.data == counting(1000))
        try channel.finish()
    }

    @Test("a reader too small for any data is reported, not looped on")
    func readerTooSmall() async throws {
        let channel = ScriptedChannel(supportsExtendedLength: false, maximumCommandLength: 6)
        let command = try CommandAPDU(cla: 0x00, ins: 0xD6, p1: 0x00, p2: 0x00, data: counting(10))
        await #expect(throws: ProximaError(.unsupported)) { try await channel.transceive(command) }
        #expect(channel.transmitted.isEmpty)
        try channel.finish()
    }

    @Test("a card answering 61xx forever is stopped after 256 GET RESPONSEs")
    func getResponseCountBounded() async throws {
        let channel = ScriptedChannel()
        channel.expect(bytes("00B0000001"), respond: response([0xAA], 0x6101))
        for _ in 0..<256 {
            channel.expect(bytes("00C0000001"), respond: response([0xAA], 0x6101))
        }

        let error = await #expect(throws: ProximaError.self) {
            try await channel.transceive(CommandAPDU(bytes: bytes("00B0000001")))
        }

        #expect(error?.code == .malformedData)
        #expect(error?.reason.contains("GET RESPONSE chain exceeds 256 commands") == true)
        #expect(error?.reader == "scripted")
        try channel.finish()
    }

    @Test("a GET RESPONSE chain over the byte limit is stopped")
    func getResponseLengthBounded() async throws {
        let channel = ScriptedChannel()
        channel.expect(bytes("00B0000000"), respond: response(counting(256), 0x6100))
        channel.expect(bytes("00C0000000"), respond: response(counting(256), 0x6100))

        let error = await #expect(throws: ProximaError.self) {
            try await channel.transceive(
                CommandAPDU(bytes: bytes("00B0000000")),
                options: TransceiveOptions(maximumResponseLength: 300)
            )
        }

        #expect(error?.code == .malformedData)
        #expect(error?.reason.contains("GET RESPONSE chain exceeds 300 bytes") == true)
        try channel.finish()
    }

    @Test("a transport error in a GET RESPONSE chain propagates")
    func transportErrorPropagates() async throws {
        let channel = ScriptedChannel()
        channel.expect(selectPPSE, respond: response([], 0x6110))
        channel.expect(bytes("00C0000010"), fail: ProximaError(.cardRemoved, "card left the field"))

        await #expect(throws: ProximaError(.cardRemoved)) {
            try await channel.transceive(CommandAPDU(bytes: selectPPSE))
        }
        try channel.finish()
    }
}

@Suite("ScriptedChannel")
struct ScriptedChannelTests {
    @Test("an unexpected command fails the transmit and the finish")
    func unexpectedCommand() async throws {
        let channel = ScriptedChannel()
        channel.expect("00A4040000", respond: "9000")

        let sent = try CommandAPDU(bytes: bytes("00B2010C00"))
        let error = await #expect(throws: ProximaError.self) { try await channel.transmit(sent) }
        #expect(error?.code == .transmitFailed)
        #expect(error?.reason.contains("expected 00A4040000, got 00B2010C00") == true)

        let finishError = #expect(throws: ProximaError.self) { try channel.finish() }
        #expect(finishError?.reason.contains("expected 00A4040000, got 00B2010C00") == true)
        #expect(finishError?.reason.contains("1 scripted exchanges unused") == true)
    }

    @Test("unused exchanges fail the finish")
    func unusedExchange() async throws {
        let channel = ScriptedChannel()
        channel.expect("00A4040000", respond: "9000")
        channel.expect("00B2010C00", respond: "6A83")

        let first = try await channel.transmit(CommandAPDU(bytes: bytes("00A4040000")))
        #expect(first.status == .success)
        #expect(channel.remaining.count == 1)

        let error = #expect(throws: ProximaError.self) { try channel.finish() }
        #expect(error?.reason.contains("00B2010C00 → 6A83") == true)
    }

    @Test("commands after close fail")
    func closed() async throws {
        let channel = ScriptedChannel()
        await channel.close()
        await #expect(throws: ProximaError(.transmitFailed)) {
            try await channel.transmit(CommandAPDU(bytes: bytes("00A4040000")))
        }
        #expect(throws: ProximaError(.transmitFailed)) { try channel.finish() }
    }
}
