internal import ProximaCore

/// One NDEF record (NFC Forum NDEF 1.0 §3.2) as Smart Tap nests them: short or long payloads, an optional id, no
/// chunking. Smart Tap names a record by its type for TNF 4 (external) and by its id for TNF 1 (well-known)
/// (kormax/google-smart-tap README, "Record types"); ``isNamed(_:)`` accepts either.
package struct NDEFRecord: Hashable, Sendable {
    package static let wellKnown: UInt8 = 0x01
    package static let external: UInt8 = 0x04

    package var tnf: UInt8
    package var type: [UInt8]
    package var id: [UInt8]
    package var payload: [UInt8]

    package init(tnf: UInt8 = NDEFRecord.external, type: String, id: [UInt8] = [], payload: [UInt8]) {
        self.tnf = tnf
        self.type = Array(type.utf8)
        self.id = id
        self.payload = payload
    }

    package init(tnf: UInt8, type: [UInt8], id: [UInt8], payload: [UInt8]) {
        self.tnf = tnf
        self.type = type
        self.id = id
        self.payload = payload
    }

    /// Whether this is the Smart Tap record `name` (`ses`, `reb`, `n`, …).
    package func isNamed(_ name: String) -> Bool {
        // Compared in place: no array is made per record and name looked for.
        type.elementsEqual(name.utf8) || id.elementsEqual(name.utf8)
    }
}

/// NDEF messages: a total, bounded decoder and the encoder.
package enum NDEF {
    /// Records of one message at most (Smart Tap's largest has a handful).
    package static let maximumRecords = 64

    /// Decodes one NDEF message. Total: any bytes give records or an error.
    /// - Throws: ``LoyaltyError/Code/cardReadFailed`` naming the record index, offset and field at fault (`step`
    ///   names where the message came from).
    package static func decode(_ bytes: [UInt8], step: String) throws(LoyaltyError) -> [NDEFRecord] {
        var records: [NDEFRecord] = []
        var offset = 0
        func fail(_ reason: String) -> LoyaltyError {
            LoyaltyError(.cardReadFailed, step: step, "NDEF record \(records.count) at offset \(offset): \(reason)")
        }
        guard !bytes.isEmpty else { throw LoyaltyError(.cardReadFailed, step: step, "an empty NDEF message") }
        while offset < bytes.count {
            guard records.count < maximumRecords else { throw fail("more than \(maximumRecords) records") }
            let header = bytes[offset]
            let first = records.isEmpty
            guard (header & 0x80 != 0) == first else {
                throw fail(first ? "the first record lacks the message-begin flag" : "a second message-begin flag")
            }
            guard header & 0x20 == 0 else { throw fail("chunked records are not used by Smart Tap") }
            let short = header & 0x10 != 0
            let hasID = header & 0x08 != 0
            var cursor = offset + 1
            let fixed = 1 + (short ? 1 : 4) + (hasID ? 1 : 0)
            guard bytes.count - cursor >= fixed else { throw fail("the header is truncated") }
            let typeLength = Int(bytes[cursor])
            cursor += 1
            var payloadLength = 0
            if short {
                payloadLength = Int(bytes[cursor])
                cursor += 1
            } else {
                for _ in 0..<4 {
                    payloadLength = payloadLength << 8 | Int(bytes[cursor])
                    cursor += 1
                }
            }
            let idLength = hasID ? Int(bytes[cursor]) : 0
            if hasID { cursor += 1 }
            let remaining = bytes.count - cursor
            guard typeLength <= remaining, idLength <= remaining - typeLength,
                payloadLength <= remaining - typeLength - idLength
            else {
                throw fail(
                    "type \(typeLength), id \(idLength) and payload \(payloadLength) bytes overrun the \(remaining) left"
                )
            }
            let type = Array(bytes[cursor..<(cursor + typeLength)])
            cursor += typeLength
            let id = Array(bytes[cursor..<(cursor + idLength)])
            cursor += idLength
            let payload = Array(bytes[cursor..<(cursor + payloadLength)])
            cursor += payloadLength
            records.append(NDEFRecord(tnf: header & 0x07, type: type, id: id, payload: payload))
            let last = header & 0x40 != 0
            offset = cursor
            if last {
                guard offset == bytes.count else {
                    throw fail("\(bytes.count - offset) bytes after the message-end flag")
                }
                return records
            }
        }
        throw LoyaltyError(.cardReadFailed, step: step, "the NDEF message ends without a message-end flag")
    }

    /// Encodes `records` as one message (short records where the payload fits in a byte).
    package static func encode(_ records: [NDEFRecord]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(records.reduce(0) { $0 + 7 + $1.type.count + $1.id.count + $1.payload.count })
        for (index, record) in records.enumerated() {
            let short = record.payload.count < 256
            var header = record.tnf & 0x07
            if index == 0 { header |= 0x80 }
            if index == records.count - 1 { header |= 0x40 }
            if short { header |= 0x10 }
            if !record.id.isEmpty { header |= 0x08 }
            out.append(header)
            out.append(UInt8(truncatingIfNeeded: record.type.count))
            if short {
                out.append(UInt8(record.payload.count))
            } else {
                let length = UInt32(truncatingIfNeeded: record.payload.count)
                out += [
                    UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF),
                ]
            }
            if !record.id.isEmpty { out.append(UInt8(truncatingIfNeeded: record.id.count)) }
            out += record.type
            out += record.id
            out += record.payload
        }
        return out
    }

    /// The first record named `name` of `records`, or an error naming what was expected where.
    package static func required(_ name: String, in records: [NDEFRecord], step: String, parent: String)
        throws(LoyaltyError)
        -> NDEFRecord
    {
        guard let record = records.first(where: { $0.isNamed(name) }) else {
            let names = records.map { String(decoding: $0.type.isEmpty ? $0.id : $0.type, as: UTF8.self) }
            throw LoyaltyError(
                .cardReadFailed,
                step: step,
                "\(parent) has no \(name) record (records: \(names.joined(separator: ", ")))"
            )
        }
        return record
    }
}
