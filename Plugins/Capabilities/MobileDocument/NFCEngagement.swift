import ProximaCore

/// NFC engagement by static handover (ISO/IEC 18013-5 §8.2.2.1): the reader reads the holder's Handover Select
/// from the NFC Forum Type 4 Tag NDEF application.
///
/// The APDUs mirror Multipaz's reader (`mdocReaderNfcHandover.kt`): SELECT the NDEF application
/// `D2760000850101`, SELECT the capability container `E103`, a short READ BINARY of its 15 bytes, SELECT the NDEF
/// file it names, READ BINARY of NLEN, then of the message in chunks of at most the CC's MLe.
package enum NFCEngagement {
    package static let ndefApplication: [UInt8] = [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]
    package static let capabilityContainer: [UInt8] = [0xE1, 0x03]
    /// The largest NDEF message the reader reads: Annex D's is 195 bytes; a Handover Select is small.
    static let maximumMessageLength = 4096

    /// Reads the Handover Select.
    /// - Throws: ``MobileDocumentError``: `.notAnMdoc` when the NDEF application is absent (also a locked
    ///   wallet), `.malformedEngagement` when the CC or the message does not parse, `.unsupportedEngagement` when
    ///   the tag offers TNEP only (negotiated handover is not implemented yet); transport errors as thrown.
    package static func readHandoverSelect(on channel: any CardChannel) async throws -> HandoverSelect {
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
        let maximumRead = max(1, min(Int(data[3]) << 8 | Int(data[4]), channel.supportsExtendedLength ? 0xFFFF : 255))
        let file = Array(data[9...10])
        try expectSuccess(
            try await channel.transmit(try CommandAPDU(cla: 0, ins: 0xA4, p1: 0x00, p2: 0x0C, data: file)),
            "SELECT NDEF file"
        )
        let nlen = try await channel.transmit(try CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, expectedLength: 2))
        try expectSuccess(nlen, "READ BINARY NLEN")
        guard nlen.data.count == 2 else {
            throw MobileDocumentError(.malformedEngagement, "NLEN of \(nlen.data.count) bytes")
        }
        let length = Int(nlen.data[0]) << 8 | Int(nlen.data[1])
        guard length > 0 else {
            throw MobileDocumentError(
                .unsupportedEngagement,
                "empty NDEF file: the holder waits for negotiated handover (TNEP), which this reader does not speak yet"
            )
        }
        guard length <= maximumMessageLength else {
            throw MobileDocumentError(.malformedEngagement, "NDEF message of \(length) bytes")
        }
        var message: [UInt8] = []
        while message.count < length {
            let offset = 2 + message.count
            let chunk = min(maximumRead, length - message.count)
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
        let records = try NDEF.parse(message)
        if records.first?.typeName == "Tp" {
            throw MobileDocumentError(
                .unsupportedEngagement,
                "the holder offers negotiated handover (TNEP) only, which this reader does not speak yet"
            )
        }
        return try HandoverSelect(message: message)
    }

    private static func expectSuccess(_ response: ResponseAPDU, _ step: String) throws {
        guard response.status.isSuccess else {
            throw MobileDocumentError(.malformedEngagement, "\(step) answered \(response.status)")
        }
    }
}
