import ProximaCore

/// NFC engagement (ISO/IEC 18013-5 §8.2.2.1): the reader reads the holder's Handover Select from the NFC Forum
/// Type 4 Tag NDEF application, by static handover or negotiated over TNEP.
///
/// The APDUs mirror Multipaz's reader (`mdocReaderNfcHandover.kt`): SELECT the NDEF application
/// `D2760000850101`, SELECT the capability container `E103`, a short READ BINARY of its 15 bytes, SELECT the NDEF
/// file it names, READ BINARY of NLEN, then of the message in chunks of at most the CC's MLe.
package enum NFCEngagement {
    package static let ndefApplication: [UInt8] = [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]
    package static let capabilityContainer: [UInt8] = [0xE1, 0x03]
    /// The largest NDEF message the reader reads: Annex D's is 195 bytes; a Handover Select is small.
    static let maximumMessageLength = 4096

    /// What the engagement gives the session: the holder's Handover Select and the SessionTranscript's Handover.
    package struct Result: Sendable {
        package let handoverSelect: HandoverSelect
        /// `[HS bytes, null]` after static handover, `[HS bytes, HR bytes]` after negotiated handover.
        package let handover: CBORValue
        /// The Handover Request the reader wrote, after negotiated handover.
        package let handoverRequest: [UInt8]?
    }

    /// Reads the Handover Select by static handover, or negotiates it (TNEP, NFC Forum Tag NDEF Exchange
    /// Protocol 1.0) when the tag offers the `urn:nfc:sn:handover` service instead.
    ///
    /// - Throws: ``MobileDocumentError``: `.notAnMdoc` when the NDEF application is absent (also a locked
    ///   wallet), `.malformedEngagement` when the CC or a message does not parse or TNEP fails; transport errors
    ///   as thrown.
    package static func engage(on channel: any CardChannel) async throws -> Result {
        let tag = try await selectTag(on: channel)
        let message = try await readMessage(on: channel, tag: tag)
        let records = try NDEF.parse(message)
        if let service = records.first(where: { $0.typeNameFormat == NDEFRecord.wellKnown && $0.typeName == "Tp" }) {
            return try await negotiate(on: channel, tag: tag, service: try ServiceParameter(service))
        }
        let select = try HandoverSelect(message: message)
        return Result(handoverSelect: select, handover: select.staticHandover, handoverRequest: nil)
    }

    /// Reads the Handover Select by static handover only.
    /// - Throws: As ``engage(on:)``; `.unsupportedEngagement` when the tag offers only negotiated handover.
    package static func readHandoverSelect(on channel: any CardChannel) async throws -> HandoverSelect {
        let tag = try await selectTag(on: channel)
        let message = try await readMessage(on: channel, tag: tag)
        if try NDEF.parse(message).first?.typeName == "Tp" {
            throw MobileDocumentError(.unsupportedEngagement, "the holder offers negotiated handover (TNEP) only")
        }
        return try HandoverSelect(message: message)
    }

    /// The NDEF file of the tag and the largest READ and UPDATE BINARY it takes.
    struct Tag {
        var file: [UInt8]
        var maximumRead: Int
        var maximumWrite: Int
    }

    private static func selectTag(on channel: any CardChannel) async throws -> Tag {
        let select = try await channel.transmit(
            try CommandAPDU(cla: 0, ins: 0xA4, p1: 0x04, p2: 0x00, data: ndefApplication)
        )
        guard select.status.isSuccess else {
            throw MobileDocumentError(.notAnMdoc, "SELECT NDEF application answered \(select.status)")
        }
        try expectSuccess(
            try await channel.transmit(
                try CommandAPDU(cla: 0, ins: 0xA4, p1: 0x00, p2: 0x0C, data: capabilityContainer)
            ),
            "SELECT capability container"
        )
        let cc = try await channel.transmit(try CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, expectedLength: 15))
        try expectSuccess(cc, "READ BINARY capability container")
        // CCLEN(2) version(1) MLe(2) MLc(2), then the NDEF File Control TLV 04 06 id(2) max(2) read(1) write(1).
        let data = cc.data
        guard data.count >= 15, data[7] == 0x04, data[8] >= 0x06 else {
            throw MobileDocumentError(.malformedEngagement, "capability container has no NDEF File Control TLV")
        }
        let shortLimit = channel.supportsExtendedLength ? 0xFFFF : 255
        let file = Array(data[9...10])
        try expectSuccess(
            try await channel.transmit(try CommandAPDU(cla: 0, ins: 0xA4, p1: 0x00, p2: 0x0C, data: file)),
            "SELECT NDEF file"
        )
        return Tag(
            file: file,
            maximumRead: max(1, min(Int(data[3]) << 8 | Int(data[4]), shortLimit)),
            maximumWrite: max(3, min(Int(data[5]) << 8 | Int(data[6]), shortLimit))
        )
    }

    /// READ BINARY of NLEN, then of the message in chunks; an empty file is an empty message.
    private static func readMessage(on channel: any CardChannel, tag: Tag) async throws -> [UInt8] {
        let nlen = try await channel.transmit(try CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, expectedLength: 2))
        try expectSuccess(nlen, "READ BINARY NLEN")
        guard nlen.data.count == 2 else {
            throw MobileDocumentError(.malformedEngagement, "NLEN of \(nlen.data.count) bytes")
        }
        let length = Int(nlen.data[0]) << 8 | Int(nlen.data[1])
        guard length <= maximumMessageLength else {
            throw MobileDocumentError(.malformedEngagement, "NDEF message of \(length) bytes")
        }
        var message: [UInt8] = []
        while message.count < length {
            let offset = 2 + message.count
            let chunk = min(tag.maximumRead, length - message.count)
            let read = try await channel.transmit(
                try CommandAPDU(
                    cla: 0,
                    ins: 0xB0,
                    p1: UInt8(offset >> 8),
                    p2: UInt8(offset & 0xFF),
                    expectedLength: chunk
                )
            )
            try expectSuccess(read, "READ BINARY NDEF message at \(offset)")
            guard !read.data.isEmpty, read.data.count <= chunk else {
                throw MobileDocumentError(
                    .malformedEngagement,
                    "READ BINARY at \(offset) gave \(read.data.count) bytes"
                )
            }
            message += read.data
        }
        return message
    }

    /// UPDATE BINARY of NLEN and the message from offset 0, in chunks the tag takes (as Multipaz writes it).
    private static func writeMessage(_ message: [UInt8], on channel: any CardChannel, tag: Tag) async throws {
        let file = [UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message
        var offset = 0
        while offset < file.count {
            let end = min(offset + tag.maximumWrite, file.count)
            let write = try await channel.transmit(
                try CommandAPDU(
                    cla: 0,
                    ins: 0xD6,
                    p1: UInt8(offset >> 8),
                    p2: UInt8(offset & 0xFF),
                    data: Array(file[offset..<end])
                )
            )
            try expectSuccess(write, "UPDATE BINARY NDEF message at \(offset)")
            offset = end
        }
    }

    /// The TNEP Service Parameter record (TNEP 1.0 §4.1.2).
    struct ServiceParameter {
        var uri: String
        /// The minimum waiting time in milliseconds, 2^(WT/4 − 1).
        var waitingTimeMilliseconds: Double
        var maximumExtensions: Int

        init(_ record: NDEFRecord) throws {
            let payload = record.payload
            guard payload.count >= 2, payload.count >= 2 + Int(payload[1]) + 5 else {
                throw MobileDocumentError(
                    .malformedEngagement,
                    "TNEP Service Parameter record of \(payload.count) bytes"
                )
            }
            let uriLength = Int(payload[1])
            uri = String(decoding: payload[2..<(2 + uriLength)], as: UTF8.self)
            let waitingTime = Int(payload[2 + uriLength + 1] & 0x3F)
            waitingTimeMilliseconds =
                Double(sign: .plus, exponent: waitingTime / 4 - 1, significand: 1)
                * Double(sign: .plus, exponent: 0, significand: 1 + Double(waitingTime % 4) / 4)
            maximumExtensions = Int(payload[2 + uriLength + 2] & 0x0F)
        }
    }

    static let handoverService = "urn:nfc:sn:handover"

    /// Negotiated handover: Service Select, TNEP status, Handover Request, Handover Select (ISO/IEC 18013-5
    /// §8.2.2.1, TNEP 1.0 §4). A holder that needs time answers an empty NDEF file; the reader waits the
    /// service's waiting time and reads again, at most its number of waiting-time extensions (Multipaz PR #285).
    private static func negotiate(on channel: any CardChannel, tag: Tag, service: ServiceParameter) async throws
        -> Result
    {
        guard service.uri == handoverService else {
            throw MobileDocumentError(.unsupportedEngagement, "TNEP service \(service.uri) is not \(handoverService)")
        }
        let uri = Array(handoverService.utf8)
        let serviceSelect = NDEF.encode([
            NDEFRecord(typeNameFormat: NDEFRecord.wellKnown, type: Array("Ts".utf8), payload: [UInt8(uri.count)] + uri)
        ])
        try await writeMessage(serviceSelect, on: channel, tag: tag)
        let status = try await awaitMessage(on: channel, tag: tag, service: service, "TNEP status")
        guard let record = try NDEF.parse(status).first, record.typeName == "Te", record.payload == [0x00] else {
            throw MobileDocumentError(
                .malformedEngagement,
                "TNEP status for the handover service is not success (Te 00)"
            )
        }
        let request = handoverRequest()
        try await writeMessage(request, on: channel, tag: tag)
        let message = try await awaitMessage(on: channel, tag: tag, service: service, "Handover Select")
        let select = try HandoverSelect(message: message)
        return Result(
            handoverSelect: select,
            handover: [.byteString(message), .byteString(request)],
            handoverRequest: request
        )
    }

    private static func awaitMessage(
        on channel: any CardChannel,
        tag: Tag,
        service: ServiceParameter,
        _ what: String
    ) async throws -> [UInt8] {
        for attempt in 0...service.maximumExtensions {
            let message = try await readMessage(on: channel, tag: tag)
            if !message.isEmpty { return message }
            if attempt < service.maximumExtensions {
                // The waiting time is the protocol's: the holder signals nothing before it has written.
                try await Task.sleep(for: .milliseconds(max(1, Int(service.waitingTimeMilliseconds.rounded(.up)))))
            }
        }
        throw MobileDocumentError(
            .malformedEngagement,
            "no \(what) after \(service.maximumExtensions) TNEP waiting-time extensions"
        )
    }

    /// The reader's Handover Request: `Hr` 1.5 with one alternative carrier (NFC, reference `nfc`), the
    /// ReaderEngagement `{0: "1.0"}` (id `mdocreader`) and the NFC carrier record with the reader's limits.
    package static func handoverRequest() -> [UInt8] {
        let carrier = NDEF.encode([
            NDEFRecord(
                typeNameFormat: NDEFRecord.wellKnown,
                type: Array("ac".utf8),
                payload: [0x01, 0x03] + Array("nfc".utf8) + [0x00]
            )
        ])
        return NDEF.encode([
            NDEFRecord(typeNameFormat: NDEFRecord.wellKnown, type: Array("Hr".utf8), payload: [0x15] + carrier),
            NDEFRecord(
                typeNameFormat: NDEFRecord.external,
                type: Array("iso.org:18013:readerengagement".utf8),
                identifier: Array("mdocreader".utf8),
                payload: CBOREncoder.encode([0: "1.0"])
            ),
            NDEFRecord(
                typeNameFormat: NDEFRecord.external,
                type: Array(HandoverSelect.nfcCarrierType.utf8),
                identifier: Array("nfc".utf8),
                payload: [0x01, 0x03, 0x01, 0xFF, 0xFF, 0x04, 0x02, 0x01, 0x00, 0x00]
            ),
        ])
    }

    private static func expectSuccess(_ response: ResponseAPDU, _ step: String) throws {
        guard response.status.isSuccess else {
            throw MobileDocumentError(.malformedEngagement, "\(step) answered \(response.status)")
        }
    }
}
