package import Foundation
internal import ProximaCore

/// What a stored read says besides its envelope, in the signed form of `Docs/store-and-forward-batch.md` §3 (the
/// record body): identifiers, where and when, the order, the masked card and its states, and the SHA-256 of the
/// envelope. Never card data in clear: the envelope is HPKE-sealed to the processor inside the tap.
package struct StoredReadRecord: Hashable, Sendable {
    /// Whether the card had expired at the time of the read (`notExpired` for every stored read: expired cards
    /// are refused offline; the field keeps room for a processor's own policy).
    package enum ExpirationState: UInt8, Hashable, Sendable, CaseIterable {
        case notExpired = 0, expired = 1, unknown = 2
        package var name: String { ["notExpired", "expired", "unknown"][Int(rawValue)] }
    }

    /// Whether the card was already in effect on the day of the read (Application Effective Date, `5F25`);
    /// `unknown` when the card gave none. `effective` for every stored read that had one: not-yet-effective
    /// cards are refused offline; the value keeps room for a processor's own policy.
    package enum EffectiveState: UInt8, Hashable, Sendable, CaseIterable {
        case effective = 0, notYetEffective = 1, unknown = 2
        package var name: String { ["effective", "notYetEffective", "unknown"][Int(rawValue)] }
    }

    package enum Kind: UInt8, Hashable, Sendable {
        case purchase = 0, refund = 1
        package var name: String { self == .purchase ? "purchase" : "refund" }
    }

    /// The transaction id (`txn` in the envelope).
    package var id: String
    package var lane: String
    /// The physical reader (kernel reader id).
    package var device: String
    /// Milliseconds since 1970, UTC.
    package var readAtMilliseconds: Int64
    package var kind: Kind
    package var currencyCode: String
    package var amountMinorUnits: Int64
    /// The amount as a decimal string with the currency's minor-unit digits (`29.99`).
    package var amount: String
    package var brand: String
    package var lastFourDigits: String
    package var expirationMonth: Int
    package var expirationYear: Int
    package var expirationState: ExpirationState
    package var effectiveState: EffectiveState
    /// SHA-256 of the envelope bytes.
    package var envelopeDigest: [UInt8]

    package var readAt: Date { Date(timeIntervalSince1970: Double(readAtMilliseconds) / 1000) }

    /// The body bytes (§3), signed with the domain prefix `PXR1`.
    package var body: [UInt8] {
        var writer = ByteWriter()
        writer.string8(id)
        writer.string8(lane)
        writer.string8(device)
        writer.uint64(UInt64(bitPattern: readAtMilliseconds))
        writer.byte(kind.rawValue)
        writer.string8(currencyCode)
        writer.uint64(UInt64(bitPattern: amountMinorUnits))
        writer.string8(amount)
        writer.string8(brand)
        writer.string8(lastFourDigits)
        writer.byte(UInt8(clamping: expirationMonth))
        writer.uint16(UInt16(clamping: expirationYear))
        writer.byte(expirationState.rawValue)
        writer.byte(effectiveState.rawValue)
        writer.bytes(envelopeDigest)
        return writer.bytes
    }

    /// The bytes a record signature covers: `PXR1` then the body.
    package var signedBytes: [UInt8] { StoredReadRecord.signaturePrefix + body }

    /// `PXR1`: keeps a record signature from ever being a valid batch signature and the reverse.
    package static let signaturePrefix: [UInt8] = Array("PXR1".utf8)

    package init(
        id: String,
        lane: String,
        device: String,
        readAtMilliseconds: Int64,
        kind: Kind,
        currencyCode: String,
        amountMinorUnits: Int64,
        amount: String,
        brand: String,
        lastFourDigits: String,
        expirationMonth: Int,
        expirationYear: Int,
        expirationState: ExpirationState,
        effectiveState: EffectiveState,
        envelopeDigest: [UInt8]
    ) {
        self.id = id
        self.lane = lane
        self.device = device
        self.readAtMilliseconds = readAtMilliseconds
        self.kind = kind
        self.currencyCode = currencyCode
        self.amountMinorUnits = amountMinorUnits
        self.amount = amount
        self.brand = brand
        self.lastFourDigits = lastFourDigits
        self.expirationMonth = expirationMonth
        self.expirationYear = expirationYear
        self.expirationState = expirationState
        self.effectiveState = effectiveState
        self.envelopeDigest = envelopeDigest
    }

    /// Parses a body (total: bounded, never traps).
    /// - Throws: ``BatchContainerError`` naming the field and offset.
    package init(body: [UInt8]) throws(BatchContainerError) {
        var reader = ByteReader(body, what: "record body")
        id = try reader.string8("id")
        lane = try reader.string8("lane")
        device = try reader.string8("device")
        readAtMilliseconds = Int64(bitPattern: try reader.uint64("readAt"))
        let kindByte = try reader.byte("kind")
        guard let kind = Kind(rawValue: kindByte) else {
            throw BatchContainerError("record body: kind \(kindByte) is neither 0 (purchase) nor 1 (refund)")
        }
        self.kind = kind
        currencyCode = try reader.string8("currency")
        amountMinorUnits = Int64(bitPattern: try reader.uint64("amount minor units"))
        amount = try reader.string8("amount")
        brand = try reader.string8("brand")
        lastFourDigits = try reader.string8("last four")
        expirationMonth = Int(try reader.byte("expiry month"))
        expirationYear = Int(try reader.uint16("expiry year"))
        let expiration = try reader.byte("expiration state")
        let effective = try reader.byte("effective state")
        guard let expirationState = ExpirationState(rawValue: expiration),
            let effectiveState = EffectiveState(rawValue: effective)
        else {
            throw BatchContainerError("record body: state bytes \(expiration) and \(effective) are not 0, 1 or 2")
        }
        self.expirationState = expirationState
        self.effectiveState = effectiveState
        envelopeDigest = try reader.bytes(32, "envelope digest")
        try reader.finish()
    }
}

/// Why a batch container or record could not be read or verified: what and at which offset. Never card data.
package struct BatchContainerError: Error, Hashable, Sendable, CustomStringConvertible {
    package let reason: String
    package init(_ reason: String) { self.reason = reason }
    package var description: String { reason }
}

/// Big-endian writer of the container's fields.
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func byte(_ value: UInt8) { bytes.append(value) }
    mutating func uint16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xFF)] }
    mutating func uint32(_ value: UInt32) { bytes += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
    mutating func uint64(_ value: UInt64) {
        bytes += [56, 48, 40, 32, 24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> UInt64($0)) }
    }
    mutating func bytes(_ value: [UInt8]) { bytes += value }
    /// One length byte, then the UTF-8 (truncated at 255 bytes; every field written is shorter).
    mutating func string8(_ value: String) {
        let utf8 = Array(value.utf8.prefix(255))
        bytes.append(UInt8(utf8.count))
        bytes += utf8
    }
}

/// Bounded big-endian reader: every read checks what is left, so no input can trap.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset = 0
    let what: String

    init(_ bytes: [UInt8], what: String) {
        self.bytes = bytes
        self.what = what
    }

    var remaining: Int { bytes.count - offset }

    mutating func bytes(_ count: Int, _ field: String) throws(BatchContainerError) -> [UInt8] {
        guard count >= 0, count <= remaining else {
            throw BatchContainerError(
                "\(what): \(field) needs \(count) bytes at offset \(offset), but \(remaining) remain"
            )
        }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func byte(_ field: String) throws(BatchContainerError) -> UInt8 { try bytes(1, field)[0] }

    mutating func uint16(_ field: String) throws(BatchContainerError) -> UInt16 {
        try bytes(2, field).reduce(0) { $0 << 8 | UInt16($1) }
    }

    mutating func uint32(_ field: String) throws(BatchContainerError) -> UInt32 {
        try bytes(4, field).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func uint64(_ field: String) throws(BatchContainerError) -> UInt64 {
        try bytes(8, field).reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func string8(_ field: String) throws(BatchContainerError) -> String {
        let count = Int(try byte("\(field) length"))
        let start = offset
        let utf8 = try bytes(count, field)
        guard let text = String(validating: utf8, as: UTF8.self) else {
            throw BatchContainerError("\(what): \(field) at offset \(start) is not UTF-8")
        }
        return text
    }

    func finish() throws(BatchContainerError) {
        guard remaining == 0 else {
            throw BatchContainerError("\(what): \(remaining) bytes after the last field at offset \(offset)")
        }
    }
}
