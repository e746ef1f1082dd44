internal import EMVCommon
package import ProximaCore

/// The Application File Locator (tag `94`, EMV Book 3 §10.2): which records to read, as four-byte entries.
///
/// Each entry is: byte 1 the SFI in bits 8–4 (bits 3–1 zero); byte 2 the first record (not 0); byte 3 the last
/// record (not before the first); byte 4 how many records, from the first, take part in offline data
/// authentication.
package struct ApplicationFileLocator: Hashable, Sendable, CustomStringConvertible {
    /// One AFL entry.
    package struct Entry: Hashable, Sendable, CustomStringConvertible {
        /// Short File Identifier, 1…30.
        package var shortFileIdentifier: UInt8
        package var firstRecord: UInt8
        package var lastRecord: UInt8
        /// Records `firstRecord ..< firstRecord + count` are signed for offline data authentication.
        package var offlineAuthenticationRecordCount: UInt8

        package init(
            shortFileIdentifier: UInt8,
            firstRecord: UInt8,
            lastRecord: UInt8,
            offlineAuthenticationRecordCount: UInt8
        ) {
            self.shortFileIdentifier = shortFileIdentifier
            self.firstRecord = firstRecord
            self.lastRecord = lastRecord
            self.offlineAuthenticationRecordCount = offlineAuthenticationRecordCount
        }

        /// The record numbers, in reading order.
        package var records: ClosedRange<UInt8> { firstRecord...lastRecord }

        /// Whether `record` is one of those flagged for offline data authentication.
        package func isForOfflineAuthentication(_ record: UInt8) -> Bool {
            Int(record) - Int(firstRecord) < Int(offlineAuthenticationRecordCount)
        }

        package var description: String {
            "SFI \(shortFileIdentifier) records \(firstRecord)-\(lastRecord) (ODA \(offlineAuthenticationRecordCount))"
        }
    }

    package var entries: [Entry]

    package init(entries: [Entry]) {
        self.entries = entries
    }

    /// Parses the value of tag `94`; an empty value is a valid AFL with nothing to read.
    ///
    /// - Parameter step: the step named in errors, `GET PROCESSING OPTIONS` unless given.
    /// - Throws: ``PaymentError/Code/cardReadFailed`` for a length that is not a multiple of 4, SFI 0 or 31, bits
    ///   3–1 of byte 1 set, record 0, a first record after the last, or more ODA records than the range holds.
    package init(bytes: [UInt8], step: String = "GET PROCESSING OPTIONS") throws {
        guard bytes.count % 4 == 0 else {
            throw CardAnswer.failure(step, "AFL (94) of \(bytes.count) bytes is not a multiple of 4")
        }
        var entries: [Entry] = []
        for start in stride(from: 0, to: bytes.count, by: 4) {
            let number = start / 4 + 1
            let sfi = bytes[start] >> 3
            let first = bytes[start + 1]
            let last = bytes[start + 2]
            let oda = bytes[start + 3]
            guard bytes[start] & 0x07 == 0, (1...30).contains(sfi) else {
                throw CardAnswer.failure(
                    step,
                    "AFL entry \(number) byte 1 \([bytes[start]].hexString) names no SFI 1-30 (SFI \(sfi))"
                )
            }
            guard first != 0 else {
                throw CardAnswer.failure(step, "AFL entry \(number) (SFI \(sfi)) starts at record 0")
            }
            guard first <= last else {
                throw CardAnswer.failure(
                    step,
                    "AFL entry \(number) (SFI \(sfi)) has first record \(first) after last record \(last)"
                )
            }
            guard Int(oda) <= Int(last) - Int(first) + 1 else {
                throw CardAnswer.failure(
                    step,
                    "AFL entry \(number) (SFI \(sfi)) flags \(oda) records for offline data authentication "
                        + "but lists \(Int(last) - Int(first) + 1)"
                )
            }
            entries.append(
                Entry(
                    shortFileIdentifier: sfi,
                    firstRecord: first,
                    lastRecord: last,
                    offlineAuthenticationRecordCount: oda
                )
            )
        }
        self.entries = entries
    }

    /// How many READ RECORD commands the AFL asks for.
    package var recordCount: Int { entries.reduce(0) { $0 + $1.records.count } }

    /// How many records take part in offline data authentication.
    package var offlineAuthenticationRecordCount: Int {
        entries.reduce(0) { $0 + Int($1.offlineAuthenticationRecordCount) }
    }

    package var description: String {
        entries.isEmpty ? "empty AFL" : entries.map(\.description).joined(separator: ", ")
    }
}

/// The answer to GET PROCESSING OPTIONS (EMV Book 3 §6.5.8.4): the Application Interchange Profile and the AFL,
/// in response format 1 (`80`: AIP ‖ AFL) or format 2 (`77` template, which Kernel 3 uses to return the
/// cryptogram at once).
package struct ProcessingOptions: Hashable, Sendable {
    package enum Format: Hashable, Sendable {
        /// Template `80`: the value is AIP (2 bytes) followed by the AFL.
        case format1
        /// Template `77`: BER-TLV data objects, `82` AIP mandatory, `94` AFL optional.
        case format2
    }

    package var format: Format
    /// Application Interchange Profile (`82`, 2 bytes, EMV Book 3 Annex C1).
    package var applicationInterchangeProfile: [UInt8]
    /// The AFL; empty when the card has no records to read (valid: a qVSDC card may answer without `94`).
    package var applicationFileLocator: ApplicationFileLocator
    /// Format 2: every primitive data object of the template other than `82` and `94` (cryptogram, ATC, IAD,
    /// track 2, CTQ …). Empty for format 1. Card data: never printed.
    package var dataObjects: [TLV]

    /// Parses the data field of a `9000` answer.
    ///
    /// - Throws: ``PaymentError/Code/cardReadFailed`` at step `GET PROCESSING OPTIONS` when the template is
    ///   neither `80` nor `77`, a length lies, the AIP is missing or not 2 bytes, or the AFL is invalid.
    package init(responseData data: [UInt8]) throws {
        let step = "GET PROCESSING OPTIONS"
        let template = try CardAnswer.template(data, step: step, expecting: [0x80, 0x77], what: "response")
        if template.tag == 0x80 {
            let value = template.value
            guard value.count >= 2 else {
                throw CardAnswer.failure(step, "format 1 response of \(value.count) bytes has no 2-byte AIP")
            }
            format = .format1
            applicationInterchangeProfile = Array(value[0..<2])
            applicationFileLocator = try ApplicationFileLocator(bytes: Array(value[2...]), step: step)
            dataObjects = []
            return
        }
        format = .format2
        let primitives = ProcessingOptions.primitives(of: template.children)
        guard let aip = primitives.first(where: { $0.tag == 0x82 })?.value else {
            throw CardAnswer.failure(step, "format 2 response has no AIP (82)")
        }
        guard aip.count == 2 else {
            throw CardAnswer.failure(step, "AIP (82) has \(aip.count) bytes, expected 2")
        }
        applicationInterchangeProfile = aip
        let afl = primitives.first { $0.tag == 0x94 }?.value ?? []
        applicationFileLocator = try ApplicationFileLocator(bytes: afl, step: step)
        dataObjects = primitives.filter { $0.tag != 0x82 && $0.tag != 0x94 }
    }

    /// The primitive objects of a template, depth first (constructed ones are flattened).
    static func primitives(of objects: [TLV]) -> [TLV] {
        objects.flatMap { $0.isConstructed ? primitives(of: $0.children) : [$0] }
    }

    /// AIP byte 1 bit 5: cardholder verification is supported (EMV Book 3 Annex C1).
    var supportsCardholderVerification: Bool { applicationInterchangeProfile[0] & 0x10 != 0 }
}
