internal import EMVCommon
internal import ProximaCore

/// The card's data objects from the GPO answer and the records, with the step each came from.
struct CardDataStore {
    private(set) var values: [TLVTag: [UInt8]]
    private var sources: [TLVTag: String]

    /// Room for what a card usually returns (FCI, GPO and records: 20-40 objects), so a read does not regrow the
    /// tables as it goes.
    init() {
        values = Dictionary(minimumCapacity: 48)
        sources = Dictionary(minimumCapacity: 48)
    }

    subscript(tag: TLVTag) -> [UInt8]? { values[tag] }

    /// The step a tag came from, for error messages.
    func source(of tag: TLVTag) -> String { sources[tag] ?? PaymentSession.processingOptionsStep }

    /// Adds primitive objects. A tag seen before with another value is a redundant data object (Book 3 §10.2):
    /// the read fails. The same value twice is tolerated.
    mutating func add(_ objects: [TLV], step: String) throws {
        for object in objects {
            if let existing = values[object.tag] {
                guard existing == object.value else {
                    throw CardAnswer.failure(
                        step,
                        "data object \(object.tag) appears again with another value (first in \(source(of: object.tag)))"
                    )
                }
                continue
            }
            values[object.tag] = object.value
            sources[object.tag] = step
        }
    }

    /// Sets a value that a later step legitimately renews (GENERATE AC's cryptogram and ATC).
    mutating func replace(_ tag: TLVTag, _ value: [UInt8], step: String) {
        values[tag] = value
        sources[tag] = step
    }
}

/// The masked card identity: last four PAN digits and expiry, from `5A`/`5F24` or track 2 (`57`).
struct MaskedCardIdentity {
    var lastFourDigits: String
    var expiry: CardExpiry?

    /// - Throws: ``PaymentError/Code/cardReadFailed`` at the step the data came from when neither PAN nor track 2
    ///   is present or either is not well formed (12–19 digits; track 2 with a `D` separator and YYMM).
    init(card: CardDataStore) throws {
        var pan: String?
        var trackExpiry: CardExpiry?
        if let value = card[0x57] {
            let nibbles = value.flatMap { [$0 >> 4, $0 & 0x0F] }
            guard let separator = nibbles.firstIndex(of: 0x0D), nibbles[..<separator].allSatisfy({ $0 <= 9 }),
                separator + 4 <= nibbles.count, nibbles[separator + 1..<separator + 5].allSatisfy({ $0 <= 9 })
            else {
                throw CardAnswer.failure(
                    card.source(of: 0x57),
                    "Track 2 Equivalent Data (57) has no PAN, D separator and YYMM"
                )
            }
            pan = String(nibbles[..<separator].map { Character(Unicode.Scalar(0x30 + $0)) })
            let digits = nibbles[separator + 1..<separator + 5].map(Int.init)
            trackExpiry = CardExpiry(year: 2000 + digits[0] * 10 + digits[1], month: digits[2] * 10 + digits[3])
        }
        if let value = card[0x5A] {
            let nibbles = value.flatMap { [$0 >> 4, $0 & 0x0F] }
            let digits = nibbles.prefix { $0 != 0x0F }
            guard digits.allSatisfy({ $0 <= 9 }), nibbles.dropFirst(digits.count).allSatisfy({ $0 == 0x0F }) else {
                throw CardAnswer.failure(card.source(of: 0x5A), "PAN (5A) is not decimal digits padded with F")
            }
            pan = String(digits.map { Character(Unicode.Scalar(0x30 + $0)) })
        }
        guard let pan else {
            throw CardAnswer.failure(
                PaymentSession.processingOptionsStep,
                "card returned neither PAN (5A) nor Track 2 Equivalent Data (57)"
            )
        }
        guard (12...19).contains(pan.count) else {
            throw CardAnswer.failure(
                card.source(of: card[0x5A] != nil ? 0x5A : 0x57),
                "PAN has \(pan.count) digits, expected 12-19"
            )
        }
        lastFourDigits = String(pan.suffix(4))
        if let value = card[0x5F24], value.count == 3, let year = BCD.value(value[0]), let month = BCD.value(value[1]),
            (1...12).contains(month)
        {
            expiry = CardExpiry(year: 2000 + year, month: month)
        } else {
            expiry = trackExpiry
        }
    }
}
