import ProximaCore

/// One NDEF record (NFC Forum NDEF 1.0 §3.2): type name format, type, identifier and payload.
package struct NDEFRecord: Hashable, Sendable {
    /// TNF values (§3.2.6).
    package static let wellKnown: UInt8 = 1
    package static let media: UInt8 = 2
    package static let external: UInt8 = 4

    package var typeNameFormat: UInt8
    package var type: [UInt8]
    package var identifier: [UInt8]
    package var payload: [UInt8]

    package init(typeNameFormat: UInt8, type: [UInt8], identifier: [UInt8] = [], payload: [UInt8]) {
        self.typeNameFormat = typeNameFormat
        self.type = type
        self.identifier = identifier
        self.payload = payload
    }

    /// The type as text (`Hs`, `iso.org:18013:deviceengagement`).
    package var typeName: String { String(decoding: type, as: UTF8.self) }
}

/// NDEF messages: a parser that is total on hostile input and the encoder the reader's Handover Request needs.
package enum NDEF {
    /// The most records one message may hold; handover messages hold a handful.
    static let maximumRecordCount = 64

    /// Parses a message: records with MB on the first and ME on the last, no chunked records (handover messages
    /// never chunk), every length inside the bytes.
    /// - Throws: ``MobileDocumentError/Code/malformedEngagement`` naming the offset.
    package static func parse(_ bytes: [UInt8]) throws -> [NDEFRecord] {
        var records: [NDEFRecord] = []
        var offset = 0
        func fail(_ reason: String) -> MobileDocumentError {
            MobileDocumentError(.malformedEngagement, "NDEF message at offset \(offset): \(reason)")
        }
        func take(_ count: Int) throws -> [UInt8] {
            guard count >= 0, count <= bytes.count - offset else { throw fail("length \(count) runs past the end") }
            defer { offset += count }
            return Array(bytes[offset..<(offset + count)])
        }
        while true {
            guard records.count < maximumRecordCount else { throw fail("more than \(maximumRecordCount) records") }
            let header = try take(1)[0]
            let begins = header & 0x80 != 0
            let ends = header & 0x40 != 0
            guard begins == records.isEmpty else { throw fail("message-begin flag misplaced") }
            guard header & 0x20 == 0 else { throw fail("chunked records are not supported") }
            let typeLength = Int(try take(1)[0])
            let payloadLength: Int
            if header & 0x10 != 0 {
                payloadLength = Int(try take(1)[0])
            } else {
                payloadLength = try take(4).reduce(0) { $0 << 8 | Int($1) }
            }
            let identifierLength = header & 0x08 != 0 ? Int(try take(1)[0]) : 0
            let type = try take(typeLength)
            let identifier = try take(identifierLength)
            let payload = try take(payloadLength)
            records.append(
                NDEFRecord(typeNameFormat: header & 0x07, type: type, identifier: identifier, payload: payload)
            )
            if ends {
                guard offset == bytes.count else { throw fail("bytes follow the message-end record") }
                return records
            }
        }
    }

    /// Encodes records as one message (short records where the payload allows).
    package static func encode(_ records: [NDEFRecord]) -> [UInt8] {
        var out: [UInt8] = []
        for (index, record) in records.enumerated() {
            var header = record.typeNameFormat & 0x07
            if index == 0 { header |= 0x80 }
            if index == records.count - 1 { header |= 0x40 }
            let short = record.payload.count < 256
            if short { header |= 0x10 }
            if !record.identifier.isEmpty { header |= 0x08 }
            out += [header, UInt8(truncatingIfNeeded: record.type.count)]
            if short {
                out.append(UInt8(record.payload.count))
            } else {
                let count = UInt32(truncatingIfNeeded: record.payload.count)
                out += [
                    UInt8(count >> 24), UInt8(truncatingIfNeeded: count >> 16), UInt8(truncatingIfNeeded: count >> 8),
                    UInt8(truncatingIfNeeded: count),
                ]
            }
            if !record.identifier.isEmpty { out.append(UInt8(truncatingIfNeeded: record.identifier.count)) }
            out += record.type + record.identifier + record.payload
        }
        return out
    }
}

/// What a Handover Select message (NFC Forum Connection Handover 1.5, ISO/IEC 18013-5 §8.2.2.1) tells the reader.
package struct HandoverSelect: Sendable, Hashable {
    /// The message exactly as read: the SessionTranscript's Handover embeds it.
    package let message: [UInt8]
    /// The holder's DeviceEngagement (record `iso.org:18013:deviceengagement`, id `mdoc`).
    package let engagement: DeviceEngagement
    /// Whether the holder offers NFC data transfer (a carrier record `iso.org:18013:nfc`).
    package let offersNFC: Bool
    /// The largest command data field the holder takes, from its NFC carrier record (65535 when not stated).
    package let maximumCommandDataLength: Int
    /// The largest response data field the holder sends, from its NFC carrier record (65536 when not stated).
    package let maximumResponseDataLength: Int

    static let deviceEngagementType = "iso.org:18013:deviceengagement"
    static let nfcCarrierType = "iso.org:18013:nfc"

    /// Parses a Handover Select message.
    /// - Throws: ``MobileDocumentError/Code/malformedEngagement`` when it is not one or has no DeviceEngagement.
    package init(message: [UInt8]) throws {
        let records = try NDEF.parse(message)
        guard let first = records.first, first.typeNameFormat == NDEFRecord.wellKnown, first.typeName == "Hs",
            first.payload.first.map({ $0 >> 4 == 1 }) == true
        else { throw MobileDocumentError(.malformedEngagement, "NDEF message does not start with a Hs 1.x record") }
        guard
            let engagementRecord = records.first(where: {
                $0.typeNameFormat == NDEFRecord.external && $0.typeName == Self.deviceEngagementType
            })
        else { throw MobileDocumentError(.malformedEngagement, "Handover Select has no DeviceEngagement record") }
        self.message = message
        engagement = try DeviceEngagement(encoded: engagementRecord.payload)
        let nfc = records.first { $0.typeNameFormat == NDEFRecord.external && $0.typeName == Self.nfcCarrierType }
        offersNFC = nfc != nil
        var command = 65_535
        var response = 65_536
        if let payload = nfc?.payload, payload.count > 1 {
            // version 01, then entries `L T V` with L counting T and V (ISO/IEC 18013-5 §8.2.2.2; Multipaz writes
            // `01 | 03 01 ffff | 04 02 010000`): T 1 = maximum command data field, T 2 = maximum response data field.
            var index = 1
            while index < payload.count {
                let length = Int(payload[index])
                guard (2...5).contains(length), index + 1 + length <= payload.count else { break }
                let type = payload[index + 1]
                let value = payload[(index + 2)..<(index + 1 + length)].reduce(0) { $0 << 8 | Int($1) }
                if type == 0x01 { command = value }
                if type == 0x02 { response = value }
                index += 1 + length
            }
        }
        maximumCommandDataLength = command
        maximumResponseDataLength = response
    }

    /// The Handover element of the SessionTranscript for static handover: `[HS bytes, null]`.
    package var staticHandover: CBORValue { [.byteString(message), .null] }
}
