import CCIDTransport
import ProximaCore
import Testing

/// Bytes from a hex string such as `"00 C1 01 FE 3E"`.
func hex(_ text: String) -> [UInt8] {
    text.split(separator: " ").compactMap { UInt8($0, radix: 16) }
}

/// A card that answers from a script of (block the host must send, what the card answers), and fails the test on
/// the first block the host sends that the script does not expect.
struct ScriptedT1Link: T1BlockLink {
    enum Answer {
        case block(String)
        /// The reader reports ICC_MUTE: no block within the waiting time.
        case mute
    }

    var steps: [(sent: String, answer: Answer)]
    var multipliers: [UInt8] = []
    var sent: [[UInt8]] = []

    init(_ steps: [(String, Answer)]) { self.steps = steps.map { (sent: $0.0, answer: $0.1) } }

    mutating func exchange(_ block: [UInt8], waitingTimeMultiplier: UInt8) throws -> [UInt8] {
        sent.append(block)
        multipliers.append(waitingTimeMultiplier)
        guard !steps.isEmpty else { throw ProximaError(.invalidArgument, "unscripted block \(block)") }
        let step = steps.removeFirst()
        #expect(block == hex(step.sent), "block \(sent.count)")
        switch step.answer {
        case .block(let text): return hex(text)
        case .mute: throw ProximaError(.cardTimeout, "ICC_MUTE")
        }
    }
}

let selectMF = hex("00 A4 04 00 02 3F 00")

/// ISO/IEC 7816-3 §11 block sequences, byte for byte (LRC epilogues worked out by hand; the S-block ones are the
/// well-known `00 C1 01 FE 3E` family).
@Suite struct T1ProtocolTests {
    func protocolState(ifsc: UInt8? = nil) throws -> T1Protocol {
        // 3B 80 80 11 TA3 TCK: T=0 then T=1 offered, TA3 the IFSC; without TA3 the pseudo-ATR 3B 80 80 01 01.
        let atr = ifsc.map { [0x3B, 0x80, 0x80, 0x11, $0, 0x01 ^ $0 ^ 0x10] } ?? hex("3B 80 80 01 01")
        return try T1Protocol(parameters: T1Parameters(atr: atr))
    }

    @Test("blocks encode with NAD PCB LEN INF LRC: I, R and S blocks")
    func encoding() {
        #expect(
            T1Block(kind: .information(sequence: 0, more: false), information: selectMF).bytes
                == hex("00 00 07 00 A4 04 00 02 3F 00 9A")
        )
        #expect(
            T1Block(kind: .information(sequence: 1, more: false), information: [0x90, 0x00]).bytes
                == hex("00 40 02 90 00 D2")
        )
        #expect(T1Block(kind: .receiveReady(sequence: 1, status: .ok)).bytes == hex("00 90 00 90"))
        #expect(T1Block(kind: .receiveReady(sequence: 0, status: .checksumError)).bytes == hex("00 81 00 81"))
        #expect(
            T1Block(kind: .supervisory(.informationFieldSize, response: false), information: [0xFE]).bytes
                == hex("00 C1 01 FE 3E")
        )
        #expect(T1Block(kind: .supervisory(.resynchronise, response: true)).bytes == hex("00 E0 00 E0"))
        #expect(
            T1Block(kind: .supervisory(.waitingTimeExtension, response: false), information: [2]).description
                == "S(waitingTimeExtension request)"
        )
    }

    @Test("the parser is total: short, LEN FF, a length that disagrees, a wrong LRC, reserved PCB bits, bad S-blocks")
    func parsing() throws {
        #expect(try T1Block(bytes: hex("00 E1 01 FE 1E")).kind == .supervisory(.informationFieldSize, response: true))
        #expect(try T1Block(bytes: hex("00 92 00 92")).kind == .receiveReady(sequence: 1, status: .otherError))
        #expect(try T1Block(bytes: hex("00 20 04 00 A4 04 00 84")).kind == .information(sequence: 0, more: true))
        #expect(throws: T1BlockError.checksum) { try T1Block(bytes: hex("00 00 02 90 00 93")) }
        for bad in [
            "00 00 02", "00 00 FF 00", "00 00 03 90 00 93", "00 A0 00 A0", "00 90 01 00 91", "00 01 00 01",
            "00 C5 00 C5", "00 C1 00 C1", "00 C1 01 00 C0", "00 C3 02 01 01 C1",
        ] {
            #expect(throws: T1BlockError.self, "\(bad)") { try T1Block(bytes: hex(bad)) }
        }
    }

    @Test("ATR interface bytes: IFSC from TA3, CRC from TC3, T=1 offered or not")
    func atrParameters() {
        let small = T1Parameters(atr: hex("3B 80 80 11 10 01"))
        #expect(small.offersT1 && small.cardInformationFieldSize == 16 && !small.usesCRC)
        let pseudo = T1Parameters(atr: hex("3B 80 80 01 01"))
        #expect(pseudo.offersT1 && pseudo.cardInformationFieldSize == 32)
        #expect(T1Parameters(atr: hex("3B 80 80 41 01 41")).usesCRC)
        #expect(!T1Parameters(atr: hex("3B 02 14 50")).offersT1)
        #expect(throws: ProximaError.self) { try T1Protocol(parameters: T1Parameters(atr: hex("3B 02 14 50"))) }
        #expect(throws: ProximaError.self) { try T1Protocol(parameters: T1Parameters(atr: hex("3B 80 80 41 01 41"))) }
        // Truncated ATRs give the defaults, never a trap.
        for length in 0..<6 { _ = T1Parameters(atr: Array(hex("3B 80 80 11 10 01").prefix(length))) }
    }

    @Test("IFS negotiation, then one I-block each way; N(S) alternates across APDUs")
    func simpleExchange() throws {
        var t1 = try protocolState()
        var link = ScriptedT1Link([
            ("00 C1 01 FE 3E", .block("00 E1 01 FE 1E")),
            ("00 00 07 00 A4 04 00 02 3F 00 9A", .block("00 00 02 90 00 92")),
            ("00 40 07 00 A4 04 00 02 3F 00 DA", .block("00 40 02 90 00 D2")),
        ])
        try t1.negotiateInformationFieldSize(over: &link)
        #expect(try t1.transmit(selectMF, over: &link) == [0x90, 0x00])
        #expect(try t1.transmit(selectMF, over: &link) == [0x90, 0x00])
        #expect(link.steps.isEmpty)
        #expect(t1.sendSequence == 0 && t1.receiveSequence == 0)
    }

    @Test("an APDU longer than the IFSC goes as a chain, each part acknowledged by R(N(S) + 1)")
    func commandChaining() throws {
        var t1 = try protocolState(ifsc: 4)
        var link = ScriptedT1Link([
            ("00 20 04 00 A4 04 00 84", .block("00 90 00 90")),
            ("00 40 03 02 3F 00 7E", .block("00 00 02 90 00 92")),
        ])
        #expect(try t1.transmit(selectMF, over: &link) == [0x90, 0x00])
        #expect(link.steps.isEmpty)
    }

    @Test("a chained response is acknowledged part by part and put together")
    func responseChaining() throws {
        var t1 = try protocolState()
        var link = ScriptedT1Link([
            ("00 00 07 00 A4 04 00 02 3F 00 9A", .block("00 20 03 6F 01 AA E7")),
            ("00 90 00 90", .block("00 40 03 BB 90 00 68")),
        ])
        #expect(try t1.transmit(selectMF, over: &link) == hex("6F 01 AA BB 90 00"))
        #expect(link.steps.isEmpty)
    }

    @Test("S(WTX request) is answered with the same multiplier, which the link passes to the reader (bBWI)")
    func waitingTimeExtension() throws {
        var t1 = try protocolState()
        var link = ScriptedT1Link([
            ("00 00 07 00 A4 04 00 02 3F 00 9A", .block("00 C3 01 02 C0")),
            ("00 E3 01 02 E0", .block("00 00 02 90 00 92")),
        ])
        #expect(try t1.transmit(selectMF, over: &link) == [0x90, 0x00])
        #expect(link.multipliers == [0, 2])
    }

    @Test("a wrong LRC and a mute card are answered by R-blocks asking again; a card's R(N(S)) gets the I-block again")
    func retransmission() throws {
        var t1 = try protocolState()
        var link = ScriptedT1Link([
            ("00 00 07 00 A4 04 00 02 3F 00 9A", .block("00 00 02 90 00 93")),
            ("00 81 00 81", .mute),
            ("00 82 00 82", .block("00 80 00 80")),
            ("00 00 07 00 A4 04 00 02 3F 00 9A", .block("00 00 02 90 00 92")),
        ])
        #expect(try t1.transmit(selectMF, over: &link) == [0x90, 0x00])
        #expect(link.steps.isEmpty)
    }

    @Test("after four bad blocks the host resynchronises and sends the APDU again from N(S) 0")
    func resynchronisation() throws {
        var t1 = try protocolState()
        var link = ScriptedT1Link([
            ("00 00 07 00 A4 04 00 02 3F 00 9A", .block("00 00 02 90 00 92")),
            ("00 40 07 00 A4 04 00 02 3F 00 DA", .block("00 00 02 90 00 93")),
            ("00 91 00 91", .block("00 00 02 90 00 93")),
            ("00 91 00 91", .block("00 00 02 90 00 93")),
            ("00 91 00 91", .block("00 00 02 90 00 93")),
            ("00 C0 00 C0", .block("00 E0 00 E0")),
            ("00 00 07 00 A4 04 00 02 3F 00 9A", .block("00 00 02 90 00 92")),
        ])
        #expect(try t1.transmit(selectMF, over: &link) == [0x90, 0x00])
        #expect(try t1.transmit(selectMF, over: &link) == [0x90, 0x00])
        #expect(link.steps.isEmpty)
    }

    @Test(
        "a card that stays mute through the resynchronisation: cardTimeout naming T=1, after a bounded number of blocks"
    )
    func muteCard() throws {
        var t1 = try protocolState()
        var link = ScriptedT1Link(
            [("00 00 07 00 A4 04 00 02 3F 00 9A", .mute)] + Array(repeating: ("00 82 00 82", .mute), count: 3)
                + Array(repeating: ("00 C0 00 C0", .mute), count: 4)
        )
        do {
            _ = try t1.transmit(selectMF, over: &link)
            Issue.record("expected cardTimeout")
        } catch let error as ProximaError {
            #expect(error.code == .cardTimeout)
            #expect(error.reason.hasPrefix("T=1: "))
        }
        #expect(link.steps.isEmpty)
    }

    @Test(
        "a card's S(IFS request) changes the IFSC of the next chained part; S(ABORT request) ends with transmitFailed"
    )
    func cardRequests() throws {
        var t1 = try protocolState(ifsc: 4)
        var link = ScriptedT1Link([
            ("00 20 04 00 A4 04 00 84", .block("00 C1 01 10 D0")),
            ("00 E1 01 10 F0", .block("00 90 00 90")),
            ("00 40 03 02 3F 00 7E", .block("00 00 02 90 00 92")),
        ])
        #expect(try t1.transmit(selectMF, over: &link) == [0x90, 0x00])
        #expect(t1.cardInformationFieldSize == 16)
        var aborting = ScriptedT1Link([
            ("00 00 07 00 A4 04 00 02 3F 00 9A", .block("00 C2 00 C2")),
            ("00 E2 00 E2", .mute),
        ])
        #expect(throws: ProximaError.self) { try t1.transmit(selectMF, over: &aborting) }
    }
}
