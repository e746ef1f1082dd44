import ProximaCardEmulator
import ProximaCore
import Testing

/// The PN532 host-link frames and command answers, byte by byte (PN532 User Manual §6.2.1 and §7; the command
/// sequence libnfc 1.8 sends, captured from its `pn532_uart` driver).
@Suite struct PN532FrameTests {
    @Test("ACK, NACK and the error frame have their fixed encodings")
    func fixedFrames() {
        #expect(PN532Frame.ack.bytes == [0x00, 0x00, 0xFF, 0x00, 0xFF, 0x00])
        #expect(PN532Frame.nack.bytes == [0x00, 0x00, 0xFF, 0xFF, 0x00, 0x00])
        #expect(PN532Frame.error.bytes == [0x00, 0x00, 0xFF, 0x01, 0xFF, 0x7F, 0x81, 0x00])
    }

    @Test("a normal frame: SAMConfiguration(normal) as libnfc sends it")
    func normalFrame() {
        // LEN 3, LCS FD, TFI D4, 14 01, DCS = -(D4 + 14 + 01) = 17.
        let bytes: [UInt8] = [0x00, 0x00, 0xFF, 0x03, 0xFD, 0xD4, 0x14, 0x01, 0x17, 0x00]
        #expect(PN532Frame.information([0xD4, 0x14, 0x01]).bytes == bytes)
        var decoder = PN532FrameDecoder()
        decoder.append(bytes)
        #expect(decoder.next() == .frame(.information([0xD4, 0x14, 0x01])))
        #expect(decoder.next() == nil)
    }

    @Test("frames longer than 254 bytes are extended frames, and decode back")
    func extendedFrame() {
        let payload: [UInt8] = [0xD5, 0x41, 0x00] + (0..<297).map { UInt8(truncatingIfNeeded: $0) }
        let bytes = PN532Frame.information(payload).bytes
        #expect(Array(bytes[0..<8]) == [0x00, 0x00, 0xFF, 0xFF, 0xFF, 0x01, 0x2C, 0xD3])
        #expect(bytes.count == payload.count + 10)
        var decoder = PN532FrameDecoder()
        // Byte by byte: a frame split anywhere still decodes once complete.
        var items: [PN532FrameDecoder.Item] = []
        for byte in bytes {
            decoder.append([byte])
            while let item = decoder.next() { items.append(item) }
        }
        #expect(items == [.frame(.information(payload))])
    }

    @Test("the wake-up preamble and garbage before a start code are skipped")
    func wakeUpPreamble() {
        var decoder = PN532FrameDecoder()
        decoder.append([0x55, 0x55] + [UInt8](repeating: 0, count: 14) + [0x13, 0x37] + PN532Frame.ack.bytes)
        #expect(decoder.next() == .frame(.ack))
        decoder.append(PN532Frame.nack.bytes + PN532Frame.error.bytes)
        #expect(decoder.next() == .frame(.nack))
        #expect(decoder.next() == .frame(.error))
    }

    @Test("bad checksums and oversized extended frames are discarded, and the next frame still decodes")
    func badFrames() {
        var decoder = PN532FrameDecoder()
        var badData = PN532Frame.information([0xD4, 0x02]).bytes
        badData[badData.count - 2] &+= 1
        var badLength = PN532Frame.information([0xD4, 0x02]).bytes
        badLength[4] &+= 1
        let oversized: [UInt8] = [0x00, 0x00, 0xFF, 0xFF, 0xFF, 0x10, 0x00, 0xF0]
        decoder.append(badData + badLength + oversized + PN532Frame.information([0xD4, 0x02]).bytes)
        var discarded = 0
        var frames: [PN532Frame] = []
        while let item = decoder.next() {
            switch item {
            case .discarded: discarded += 1
            case .frame(let frame): frames.append(frame)
            }
        }
        #expect(discarded == 3)
        #expect(frames == [.information([0xD4, 0x02])])
    }
}

@Suite struct PN532ChipTests {
    static let card = ScriptedCard(
        name: "test card",
        uid: [0x01, 0x02, 0x03, 0x04],
        ats: [0x05, 0x78, 0x80, 0x70, 0x02],
        exchanges: [
            ScriptedCard.Exchange(
                command: [0x00, 0xA4, 0x04, 0x00],
                match: .prefix,
                response: [0x6F, 0x00, 0x90, 0x00]
            ),
            ScriptedCard.Exchange(
                command: [0x00, 0xB0, 0x00, 0x00],
                match: .prefix,
                response: (0..<298).map { UInt8(truncatingIfNeeded: $0) } + [0x90, 0x00]
            ),
        ]
    )

    @Test("the commands libnfc's nfc_open and nfc_initiator_init send get the answers it expects")
    func openSequence() {
        var chip = PN532Chip()
        #expect(chip.respond(to: [0xD4, 0x14, 0x01]) == .information([0xD5, 0x15]))
        let diagnose: [UInt8] = [0xD4, 0x00, 0x00] + Array("libnfc".utf8)
        #expect(chip.respond(to: diagnose) == .information([0xD5, 0x01, 0x00] + Array("libnfc".utf8)))
        #expect(chip.respond(to: [0xD4, 0x02]) == .information([0xD5, 0x03, 0x32, 0x01, 0x06, 0x07]))
        #expect(chip.respond(to: [0xD4, 0x12, 0x14]) == .information([0xD5, 0x13]))
        #expect(chip.respond(to: [0xD4, 0x08, 0x63, 0x02, 0x80, 0x63, 0x03, 0x80]) == .information([0xD5, 0x09]))
        // Registers read back what was written; others read 0.
        #expect(
            chip.respond(to: [0xD4, 0x06, 0x63, 0x02, 0x63, 0x03, 0x63, 0x0D])
                == .information([0xD5, 0x07, 0x80, 0x80, 0x00])
        )
        #expect(chip.respond(to: [0xD4, 0x32, 0x05, 0xFF, 0xFF, 0xFF]) == .information([0xD5, 0x33]))
        #expect(chip.respond(to: [0xD4, 0x16, 0xF0]) == .information([0xD5, 0x17, 0x00]))
        #expect(chip.respond(to: [0xD4, 0x8C]) == .errorFrame)
        #expect(chip.respond(to: [0xD5, 0x02]) == .errorFrame)
    }

    @Test("InListPassiveTarget reports the card's SENS_RES, SEL_RES, UID and ATS; Type B finds nothing")
    func listPassiveTarget() {
        var chip = PN532Chip(card: Self.card)
        #expect(chip.respond(to: [0xD4, 0x4A, 0x01, 0x03, 0x00]) == .information([0xD5, 0x4B, 0x00]))
        #expect(
            chip.respond(to: [0xD4, 0x4A, 0x01, 0x00])
                == .information([
                    0xD5, 0x4B, 0x01, 0x01, 0x00, 0x04, 0x20, 0x04, 0x01, 0x02, 0x03, 0x04, 0x05, 0x78, 0x80, 0x70,
                    0x02,
                ])
        )
        #expect(chip.isCardActive)
        chip.remove()
        #expect(chip.respond(to: [0xD4, 0x4A, 0x01, 0x00]) == .information([0xD5, 0x4B, 0x00]))
    }

    @Test("a Type B card answers BrTy 03 with its ATQB, PUPI first")
    func typeB() {
        var card = Self.card
        card.technology = .iso14443B
        var chip = PN532Chip(card: card)
        #expect(chip.respond(to: [0xD4, 0x4A, 0x01, 0x00]) == .information([0xD5, 0x4B, 0x00]))
        let answer = chip.respond(to: [0xD4, 0x4A, 0x01, 0x03, 0x00])
        #expect(
            answer
                == .information([
                    0xD5, 0x4B, 0x01, 0x01, 0x50, 0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x81, 0x71,
                    0x01, 0x00,
                ])
        )
    }

    @Test("InDataExchange carries APDUs; a 300-byte answer comes in two frames chained with MI")
    func dataExchangeAndChaining() {
        var chip = PN532Chip(card: Self.card)
        _ = chip.respond(to: [0xD4, 0x4A, 0x01, 0x00])
        #expect(
            chip.respond(to: [0xD4, 0x40, 0x01, 0x00, 0xA4, 0x04, 0x00, 0x00])
                == .information([0xD5, 0x41, 0x00, 0x6F, 0x00, 0x90, 0x00])
        )
        let full = (0..<298).map { UInt8(truncatingIfNeeded: $0) } + [0x90, 0x00]
        #expect(
            chip.respond(to: [0xD4, 0x40, 0x01, 0x00, 0xB0, 0x00, 0x00, 0x00])
                == .information([0xD5, 0x41, 0x40] + full.prefix(262))
        )
        #expect(chip.respond(to: [0xD4, 0x40, 0x01]) == .information([0xD5, 0x41, 0x00] + full.dropFirst(262)))
        // A command sent in two parts with MI reaches the card as one.
        #expect(chip.respond(to: [0xD4, 0x40, 0x41, 0x00, 0xA4]) == .information([0xD5, 0x41, 0x00]))
        #expect(
            chip.respond(to: [0xD4, 0x40, 0x01, 0x04, 0x00, 0x00])
                == .information([0xD5, 0x41, 0x00, 0x6F, 0x00, 0x90, 0x00])
        )
        #expect(chip.apduCount == 3)
        // More than 262 bytes in one frame overflows the chip's buffer.
        let tooLong: [UInt8] = [0xD4, 0x40, 0x01] + [UInt8](repeating: 0, count: 263)
        #expect(chip.respond(to: tooLong) == .information([0xD5, 0x41, 0x09]))
    }

    @Test("after the card leaves, InDataExchange times out (status 01) and the presence probe too")
    func removedCard() {
        var chip = PN532Chip(card: Self.card)
        _ = chip.respond(to: [0xD4, 0x4A, 0x01, 0x00])
        #expect(chip.respond(to: [0xD4, 0x42, 0xB2]) == .information([0xD5, 0x43, 0x00, 0xA2]))
        chip.remove()
        #expect(
            chip.respond(to: [0xD4, 0x40, 0x01, 0x00, 0xA4, 0x04, 0x00, 0x00]) == .information([0xD5, 0x41, 0x01])
        )
        #expect(chip.respond(to: [0xD4, 0x42, 0xB2]) == .information([0xD5, 0x43, 0x01]))
    }
}
