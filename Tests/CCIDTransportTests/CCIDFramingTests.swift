import CCIDTransport
import ProximaCore
import Testing

/// A reader that answers from a script and records what it was sent.
struct ScriptedPipe: CCIDBulkPipe {
    var answers: [[UInt8]]
    var written: [[UInt8]] = []
    /// The (slot, bSeq) of each ABORT request on the control pipe.
    var abortRequests: [(UInt8, UInt8)] = []

    mutating func write(_ message: [UInt8]) throws { written.append(message) }

    mutating func sendAbortRequest(slot: UInt8, sequence: UInt8) throws { abortRequests.append((slot, sequence)) }

    mutating func read() throws -> [UInt8] {
        guard !answers.isEmpty else { throw ProximaError(.cardTimeout, "the scripted reader has no more answers") }
        return answers.removeFirst()
    }
}

/// An RDR_to_PC message: type, data length, slot, sequence, the three status bytes, data.
func answer(
    _ type: UInt8,
    slot: UInt8 = 0,
    sequence: UInt8,
    status: UInt8 = 0,
    error: UInt8 = 0,
    parameter: UInt8 = 0,
    data: [UInt8] = []
) -> [UInt8] {
    let length = UInt32(data.count)
    return [
        type, UInt8(length & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 24), slot,
        sequence, status, error, parameter,
    ] + data
}

/// A 54-byte CCID class descriptor with `features` and `maximumMessageLength` (the layout of CCID Rev 1.1 §5.1).
func classDescriptor(features: UInt32, maximumMessageLength: UInt32 = 271, maximumSlotIndex: UInt8 = 0) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: 54)
    bytes[0] = 54
    bytes[1] = 0x21
    bytes[2] = 0x10
    bytes[3] = 0x01
    bytes[4] = maximumSlotIndex
    for index in 0..<4 {
        bytes[40 + index] = UInt8(truncatingIfNeeded: features >> (8 * index))
        bytes[44 + index] = UInt8(truncatingIfNeeded: maximumMessageLength >> (8 * index))
    }
    bytes[53] = 1
    return bytes
}

@Suite struct CCIDFramingTests {
    @Test("PC_to_RDR messages: IccPowerOn and XfrBlock headers, little-endian dwLength")
    func commands() {
        #expect(
            CCID.command(.iccPowerOn, slot: 0, sequence: 1)
                == [0x62, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00]
        )
        let data = [UInt8](repeating: 0xAB, count: 0x0105)
        let block = CCID.xfrBlock(slot: 2, sequence: 0xFE, data: data, chain: .begins)
        #expect(Array(block[0..<10]) == [0x6F, 0x05, 0x01, 0x00, 0x00, 0x02, 0xFE, 0x00, 0x01, 0x00])
        #expect(block.count == 10 + 0x0105)
    }

    @Test("RDR_to_PC_DataBlock parses; status, error and chain read as the spec says")
    func dataBlock() throws {
        let atr: [UInt8] = [0x3B, 0x8A, 0x80, 0x01]
        let response = try CCIDResponse(bytes: answer(0x80, sequence: 1, data: atr))
        #expect(response.data == atr)
        #expect(response.sequence == 1)
        #expect(response.cardState == .active)
        #expect(response.outcome == .processed)
        let failed = try CCIDResponse(bytes: answer(0x80, sequence: 2, status: 0x42, error: 0xFE))
        #expect(failed.cardState == .absent)
        #expect(failed.outcome == .failed(.iccMute))
        let waiting = try CCIDResponse(bytes: answer(0x80, sequence: 3, status: 0x80, error: 0x05))
        #expect(waiting.outcome == .timeExtension(multiplier: 5))
        #expect(CCIDSlotError.iccMute.description == "ICC_MUTE (FE)")
        #expect(CCIDSlotError(rawValue: 0x07).description == "bad parameter at offset 7 (07)")
    }

    @Test("hostile RDR_to_PC bytes are refused with malformedData: short, lying dwLength, oversized dwLength")
    func hostileResponses() {
        let cases: [[UInt8]] = [
            [],
            [0x80, 0x00, 0x00],
            [0x80, 0x04, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3B],
            [0x80, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x01, 0x00, 0x00, 0x00],
        ]
        for bytes in cases {
            #expect(throws: ProximaError(.malformedData)) { try CCIDResponse(bytes: bytes, maximumDataLength: 261) }
        }
    }

    @Test("NotifySlotChange: two bits per slot; too short for the slots is refused")
    func slotChange() throws {
        // Slot 0 present and changed (11), slot 1 absent and changed (10), slot 2 present (01), slot 3 absent (00).
        let change = try CCIDSlotChange(bytes: [0x50, 0b0001_1011], slots: 4)
        #expect(change.present == [true, false, true, false])
        #expect(change.changed == [true, true, false, false])
        let five = try CCIDSlotChange(bytes: [0x50, 0x00, 0x03], slots: 5)
        #expect(five.present == [false, false, false, false, true])
        #expect(throws: ProximaError(.malformedData)) { try CCIDSlotChange(bytes: [0x50, 0x00], slots: 5) }
        #expect(throws: ProximaError(.malformedData)) { try CCIDSlotChange(bytes: [0x51, 0x00], slots: 1) }
    }

    @Test(
        "the exchange level comes from dwFeatures",
        arguments: [
            (UInt32(0x0004_00FE), CCIDClassDescriptor.ExchangeLevel.extendedAPDU),
            (0x0002_00BA, .shortAPDU), (0x0001_0030, .tpdu), (0x0000_0000, .character),
        ]
    )
    func exchangeLevel(features: UInt32, level: CCIDClassDescriptor.ExchangeLevel) throws {
        // After an unrelated 9-byte descriptor, as libusb's interface "extra" bytes may hold.
        let extra = [0x09, 0x24, 0, 0, 0, 0, 0, 0, 0] + classDescriptor(features: features, maximumSlotIndex: 1)
        let descriptor = try CCIDClassDescriptor(extra: extra)
        #expect(descriptor.exchangeLevel == level)
        #expect(descriptor.slotCount == 2)
        #expect(descriptor.maximumMessageLength == 271)
        #expect(throws: ProximaError(.malformedData)) {
            try CCIDClassDescriptor(extra: [0x09, 0x24, 0, 0, 0, 0, 0, 0, 0])
        }
    }
}

@Suite struct CCIDSlotExchangeTests {
    static let shortLevel = try! CCIDClassDescriptor(extra: classDescriptor(features: 0x0002_00BA))
    static let extendedLevel = try! CCIDClassDescriptor(
        extra: classDescriptor(features: 0x0004_00FE, maximumMessageLength: 74)
    )

    @Test("power on, then an APDU: bSeq counts up, the answers' data come back")
    func powerOnAndTransmit() throws {
        var pipe = ScriptedPipe(answers: [
            answer(0x80, sequence: 0, data: [0x3B, 0x80, 0x80, 0x01, 0x01]),
            answer(0x80, sequence: 1, data: [0x6F, 0x00, 0x90, 0x00]),
        ])
        var exchange = CCIDSlotExchange(slot: 0, descriptor: Self.shortLevel, readerName: "test reader")
        #expect(try exchange.powerOn(over: &pipe) == [0x3B, 0x80, 0x80, 0x01, 0x01])
        #expect(try exchange.transmit([0x00, 0xA4, 0x04, 0x00, 0x00], over: &pipe) == [0x6F, 0x00, 0x90, 0x00])
        #expect(pipe.written.map { $0[6] } == [0, 1])
        #expect(pipe.written[1] == CCID.xfrBlock(slot: 0, sequence: 1, data: [0x00, 0xA4, 0x04, 0x00, 0x00]))
    }

    @Test("time extensions are waited through, up to the bound; one more fails with cardTimeout")
    func timeExtension() throws {
        let extensions = (0..<CCIDSlotExchange.maximumTimeExtensions).map { _ in
            answer(0x80, sequence: 0, status: 0x80, error: 0x01)
        }
        var pipe = ScriptedPipe(answers: extensions + [answer(0x80, sequence: 0, data: [0x90, 0x00])])
        var exchange = CCIDSlotExchange(slot: 0, descriptor: Self.shortLevel, readerName: "test reader")
        #expect(try exchange.transmit([0x00, 0xB0, 0x00, 0x00, 0x00], over: &pipe) == [0x90, 0x00])

        // The next command has bSeq 1; one extension more than the bound.
        var stuck = ScriptedPipe(
            answers: (0...CCIDSlotExchange.maximumTimeExtensions).map { _ in
                answer(0x80, sequence: 1, status: 0x80, error: 0x01)
            }
        )
        #expect(throws: ProximaError(.cardTimeout)) { try exchange.transmit([0x00, 0xB0, 0x00, 0x00], over: &stuck) }
    }

    @Test("an answer with a stale bSeq is skipped; too many of them fail the exchange with transmitFailed")
    func wrongSequence() throws {
        var pipe = ScriptedPipe(answers: [
            answer(0x80, sequence: 0xFF, data: [0x6A, 0x82]), answer(0x80, sequence: 0, data: [0x90, 0x00]),
        ])
        var exchange = CCIDSlotExchange(slot: 0, descriptor: Self.shortLevel, readerName: "test reader")
        #expect(try exchange.transmit([0x00, 0xA4, 0x04, 0x00], over: &pipe) == [0x90, 0x00])
        var wrong = ScriptedPipe(answers: (0..<4).map { _ in answer(0x80, sequence: 7, data: [0x90, 0x00]) })
        #expect(throws: ProximaError(.transmitFailed)) {
            try exchange.transmit([0x00, 0xA4, 0x04, 0x00], over: &wrong)
        }
    }

    @Test("a slot error is named; with no card in the slot it is cardRemoved")
    func slotErrors() {
        var exchange = CCIDSlotExchange(slot: 0, descriptor: Self.shortLevel, readerName: "test reader")
        var mute = ScriptedPipe(answers: [answer(0x80, sequence: 0, status: 0x40, error: 0xFE)])
        do {
            _ = try exchange.transmit([0x00, 0xA4, 0x04, 0x00], over: &mute)
            Issue.record("expected a failure")
        } catch let error as ProximaError {
            #expect(error.code == .cardTimeout)
            #expect(error.reason.contains("ICC_MUTE (FE)"))
        } catch {
            Issue.record("unexpected \(error)")
        }
        var removed = ScriptedPipe(answers: [answer(0x80, sequence: 1, status: 0x42, error: 0xFE)])
        #expect(throws: ProximaError(.cardRemoved)) { try exchange.transmit([0x00, 0xA4, 0x04, 0x00], over: &removed) }
        var busy = ScriptedPipe(answers: [answer(0x80, sequence: 2, status: 0x40, error: 0xE0)])
        #expect(throws: ProximaError(.readerBusy)) { try exchange.transmit([0x00, 0xA4, 0x04, 0x00], over: &busy) }
    }

    @Test("at the extended level, a long command is chained over XfrBlocks and a chained answer is collected")
    func extendedChaining() throws {
        // dwMaxCCIDMessageLength 74: 64 data bytes per block.
        let command = [0x00, 0xDA, 0x01, 0x02, 0x00, 0x00, 0x96] + [UInt8](repeating: 0x11, count: 150)
        var pipe = ScriptedPipe(answers: [
            answer(0x80, sequence: 0, parameter: 0x10),
            answer(0x80, sequence: 1, parameter: 0x10),
            answer(0x80, sequence: 2, parameter: 0x01, data: [UInt8](repeating: 0x22, count: 64)),
            answer(0x80, sequence: 3, parameter: 0x02, data: [0x22, 0x90, 0x00]),
        ])
        var exchange = CCIDSlotExchange(slot: 0, descriptor: Self.extendedLevel, readerName: "test reader")
        let response = try exchange.transmit(command, over: &pipe)
        #expect(response == [UInt8](repeating: 0x22, count: 65) + [0x90, 0x00])
        // wLevelParameter: begins (1), continues (3), ends (2), then "next response part" (0x10).
        #expect(pipe.written.map { UInt16($0[8]) | UInt16($0[9]) << 8 } == [0x0001, 0x0003, 0x0002, 0x0010])
        #expect(pipe.written.map { $0.count - 10 } == [64, 64, 29, 0])
    }

    @Test("character-level readers are refused with unsupported")
    func unsupportedLevels() throws {
        let character = try CCIDClassDescriptor(extra: classDescriptor(features: 0x0000_0030))
        var exchange = CCIDSlotExchange(slot: 0, descriptor: character, readerName: "test reader")
        var pipe = ScriptedPipe(answers: [])
        #expect(throws: ProximaError(.unsupported)) { try exchange.transmit([0x00, 0xA4, 0x04, 0x00], over: &pipe) }
        #expect(pipe.written.isEmpty)
    }

    @Test(
        "Abort: the ABORT request names slot and the next bSeq, PC_to_RDR_Abort carries it, the late answer is skipped"
    )
    func abort() throws {
        var pipe = ScriptedPipe(answers: [
            // The aborted XfrBlock (bSeq 4) answers CMD_ABORTED late; then the Abort's SlotStatus (bSeq 5).
            answer(0x80, slot: 1, sequence: 4, status: 0x40, error: 0xFF),
            answer(0x81, slot: 1, sequence: 5),
        ])
        var exchange = CCIDSlotExchange(
            slot: 1,
            descriptor: Self.extendedLevel,
            readerName: "test reader",
            firstSequence: 5
        )
        try exchange.abort(over: &pipe)
        #expect(pipe.abortRequests.map { [$0.0, $0.1] } == [[1, 5]])
        #expect(pipe.written == [[0x72, 0, 0, 0, 0, 0x01, 0x05, 0, 0, 0]])
        #expect(exchange.sequence == 6)
        // A cancellation sent the ABORT request already: only PC_to_RDR_Abort goes.
        var second = ScriptedPipe(answers: [answer(0x81, slot: 1, sequence: 6)])
        try exchange.abort(controlRequestSent: true, over: &second)
        #expect(second.abortRequests.isEmpty)
        #expect(second.written.count == 1)
    }

    @Test("TPDU level: IccPowerOn, SetParameters T=1 from the ATR, S(IFS request) in an XfrBlock, then T=1 per APDU")
    func tpduLevel() throws {
        let tpdu = try CCIDClassDescriptor(extra: classDescriptor(features: 0x0001_00BA))
        let atr = hex("3B 80 80 11 10 01")
        var pipe = ScriptedPipe(answers: [
            answer(0x80, sequence: 0, data: atr),
            answer(0x82, sequence: 1, parameter: 1),
            answer(0x80, sequence: 2, data: hex("00 E1 01 FE 1E")),
            answer(0x80, sequence: 3, data: hex("00 00 02 90 00 92")),
        ])
        var exchange = CCIDSlotExchange(slot: 0, descriptor: tpdu, readerName: "test reader")
        #expect(try exchange.powerOn(over: &pipe) == atr)
        #expect(try exchange.transmit(hex("00 A4 04 00 02 3F 00"), over: &pipe) == [0x90, 0x00])
        #expect(pipe.written.map { $0[0] } == [0x62, 0x61, 0x6F, 0x6F])
        // bProtocolNum 1; bmFindexDindex 11, bmTCCKST1 10 (LRC), guard 0, BWI/CWI 4D, clock stop 0, IFSC 16, NAD 0.
        #expect(pipe.written[1] == [0x61, 7, 0, 0, 0, 0, 1, 1, 0, 0, 0x11, 0x10, 0x00, 0x4D, 0x00, 0x10, 0x00])
        #expect(Array(pipe.written[2].dropFirst(10)) == hex("00 C1 01 FE 3E"))
        #expect(Array(pipe.written[3].dropFirst(10)) == hex("00 00 07 00 A4 04 00 02 3F 00 9A"))
        #expect(exchange.t1?.sendSequence == 1)
        // A T=0-only card cannot be used at the TPDU level.
        var t0 = ScriptedPipe(answers: [answer(0x80, sequence: 4, data: hex("3B 02 14 50"))])
        #expect(throws: ProximaError(.unsupported)) { try exchange.powerOn(over: &t0) }
    }
}
