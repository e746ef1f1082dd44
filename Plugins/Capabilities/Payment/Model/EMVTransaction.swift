internal import EMVCommon
package import Foundation
package import ProximaCore

/// The transaction type (tag `9C`, n 2), coded as the first two digits of the ISO 8583:1987 processing code
/// (EMV Book 3 Annex A): the raw value is the BCD byte as it goes to the card.
package struct EMVTransactionType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Goods and services (`00`).
    package static let purchase = EMVTransactionType(rawValue: 0x00)
    /// Purchase with cashback (`09`); the cashback goes in ``EMVTransaction/amountOther``.
    package static let purchaseWithCashback = EMVTransactionType(rawValue: 0x09)
    /// Refund (`20`).
    package static let refund = EMVTransactionType(rawValue: 0x20)

    package var description: String {
        switch rawValue {
        case 0x00: "purchase"
        case 0x09: "purchase with cashback"
        case 0x20: "refund"
        default: "type \([rawValue].hexString)"
        }
    }
}

/// The local date and time of a transaction: tags `9A` (YYMMDD) and `9F21` (HHMMSS), both n 6.
///
/// It is part of the request so that the caller's clock decides it (and tests fix it). EMV dates carry two year
/// digits, so only 2000…2099 can be encoded.
package typealias TransactionDate = CivilTime

extension CivilTime {
    /// The calendar date and time of `date` in `timeZone` (Gregorian calendar).
    package init(_ date: Date, timeZone: TimeZone) {
        // Calendar arithmetic by hand: Foundation's Calendar builds an ICU calendar per call (a visible share
        // of a payment read's CPU time).
        let utc = Int64(date.timeIntervalSince1970.rounded(.down))
        self.init(unixSeconds: utc + Int64(timeZone.secondsFromGMT(for: date)))
    }

    /// `9A`: YYMMDD as BCD, or `nil` when a field is out of range.
    var dateBCD: [UInt8]? {
        guard (2000...2099).contains(year), (1...12).contains(month), (1...31).contains(day) else { return nil }
        return [Self.bcd(year % 100), Self.bcd(month), Self.bcd(day)]
    }

    /// `9F21`: HHMMSS as BCD, or `nil` when a field is out of range.
    var timeBCD: [UInt8]? {
        guard (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second) else { return nil }
        return [Self.bcd(hour), Self.bcd(minute), Self.bcd(second)]
    }

    private static func bcd(_ value: Int) -> UInt8 { UInt8(value / 10) << 4 | UInt8(value % 10) }
}

/// One contactless payment the terminal asks a card to authorise: the request of ``EMVPaymentCapability``.
///
/// Amounts are in minor units of the currency (cents for USD). The API layer validates currency and amount
/// against ISO 4217; the capability only checks that each value fits its EMV data element and otherwise ends with
/// ``PaymentError/Code/invalidTransaction``.
package struct EMVTransaction: Hashable, Sendable {
    /// Amount, Authorised (`9F02`, n 12): 0…999,999,999,999 minor units.
    package var amountAuthorised: Int64
    /// Amount, Other (`9F03`, n 12): the cashback part, 0 for most transactions.
    package var amountOther: Int64
    /// Transaction Currency Code (`5F2A`, n 3): ISO 4217 numeric, such as 840 for USD.
    package var currencyCode: Int
    /// Transaction Currency Exponent (`5F36`, n 1): the number of minor-unit digits, 2 for USD.
    package var currencyExponent: Int
    /// Terminal Country Code (`9F1A`, n 3), ISO 3166-1 numeric; `nil` uses ``TerminalSettings/countryCode``.
    package var countryCode: Int?
    /// Transaction Type (`9C`).
    package var type: EMVTransactionType
    /// Transaction Date and Time (`9A`, `9F21`), from the caller's clock.
    package var date: TransactionDate
    /// An application to select first when the card offers it (EMV Book B §3.3.3; the cardholder's or
    /// merchant's choice): an AID, or a prefix of one such as the RID `A000000004`.
    package var preferredApplication: [UInt8]?

    package init(
        amountAuthorised: Int64,
        amountOther: Int64 = 0,
        currencyCode: Int,
        currencyExponent: Int = 2,
        countryCode: Int? = nil,
        type: EMVTransactionType = .purchase,
        date: TransactionDate,
        preferredApplication: [UInt8]? = nil
    ) {
        self.amountAuthorised = amountAuthorised
        self.amountOther = amountOther
        self.currencyCode = currencyCode
        self.currencyExponent = currencyExponent
        self.countryCode = countryCode
        self.type = type
        self.date = date
        self.preferredApplication = preferredApplication
    }
}

/// The terminal's configuration: the data objects a card may ask for in its PDOL and CDOL1 (EMV Book 4 Annex A,
/// Book 3 Annex A) and the reader limits of EMV Book B §3.1.
///
/// The defaults describe an attended, online-only, contactless-only point of sale run by a merchant, with online
/// PIN, signature and "no CVM" as cardholder verification methods, and no offline data authentication (the
/// terminal goes online for every transaction, so it announces none).
package struct TerminalSettings: Hashable, Sendable {
    /// Terminal Type (`9F35`, n 2), EMV Book 4 Annex A1: `21` = merchant-operated, attended, online only.
    package var terminalType: UInt8
    /// Terminal Capabilities (`9F33`, b 3), EMV Book 4 Annex A2. Default `00 68 00`: no manual key entry, magnetic
    /// stripe or contact IC (byte 1); enciphered PIN online, signature, no CVM required (byte 2, `40|20|08`); no
    /// SDA, DDA, CDA or card capture (byte 3).
    package var terminalCapabilities: [UInt8]
    /// Additional Terminal Capabilities (`9F40`, b 5), EMV Book 4 Annex A3. Default `60 00 F0 30 01`: goods and
    /// services; numeric, alphabetic, command and function keys; attendant and cardholder displays; code table 1.
    package var additionalTerminalCapabilities: [UInt8]
    /// Terminal Transaction Qualifiers (`9F66`, b 4) for Kernel 3 (Visa), as configured (EMV Book B §3.1.1.2;
    /// byte 2 bits 8–7 are then set per transaction). Default `26 80 40 00`: EMV mode (qVSDC), online PIN and
    /// signature supported (byte 1 `20|04|02`); online cryptogram required (byte 2 `80`: online-only reader);
    /// consumer device CVM supported (byte 3 `40`).
    package var terminalTransactionQualifiers: [UInt8]
    /// Terminal Country Code (`9F1A`, n 3), ISO 3166-1 numeric; default 840 (United States).
    package var countryCode: Int
    /// Merchant Name and Location (`9F4E`, ans): ASCII, sent only when a card asks for it.
    package var merchantNameAndLocation: String
    /// Terminal Identification (`9F1C`, an 8).
    package var terminalIdentification: String
    /// Merchant Category Code (`9F15`, n 4), ISO 18245; default 5999 (miscellaneous retail).
    package var merchantCategoryCode: Int
    /// Merchant Identifier (`9F16`, ans 15), when the acquirer assigned one.
    package var merchantIdentifier: String?
    /// The AIDs this terminal accepts, with the kernel for each.
    package var supportedApplications: [TerminalApplication]
    /// Reader CVM Required Limit (EMV Book B §3.1.1.8) in minor units, for a combination whose ``ReaderLimits``
    /// give none in the transaction currency: at or above it the reader asks for cardholder verification (TTQ
    /// byte 2 bit 7 for Kernel 3; above it, the CVM capability "CVM required" for Kernel 2). `nil`: no limit of
    /// its own; a card that asks for a CVM (CTQ, CVM List) is still honoured. Scheme and country rules set it.
    package var cvmRequiredLimit: Int64?
    /// The merchant's brand preference for co-badged cards (`capabilities.payment.preferredAIDs`): AIDs or
    /// prefixes, most preferred first. Entry Point puts matching candidates ahead of the card's priority order
    /// (after a transaction's own ``EMVTransaction/preferredApplication``). Where a regulation gives the
    /// cardholder the last word (EU Regulation 2015/751 Art. 8), the app must still offer them the other brand.
    package var preferredApplications: [[UInt8]] = []
    /// Terminal Floor Limit (`9F1B`) in minor units, for a combination without a Reader Contactless Floor Limit
    /// in the transaction currency (Book B §3.1.1.7): above it the transaction goes online. Default 0: an
    /// online-only reader, every purchase above zero asks for an online cryptogram. `nil`: no floor limit.
    package var terminalFloorLimit: Int64? = 0
    /// The CA public key files for offline data authentication (`capabilities.payment.caPublicKeys`, one path or
    /// several whose keys are merged), absolute, in manifest order; empty when not configured.
    package var caPublicKeysPaths: [String] = []
    /// Further terminal data objects a card's DOL may request (such as `9F01` Acquirer Identifier or proprietary
    /// `DFxx` tags), by tag. Values the capability computes (amounts, dates, TTQ, TVR, 9F37) take precedence.
    package var additionalData: [TLVTag: [UInt8]]

    package init(
        terminalType: UInt8 = 0x21,
        terminalCapabilities: [UInt8] = [0x00, 0x68, 0x00],
        additionalTerminalCapabilities: [UInt8] = [0x60, 0x00, 0xF0, 0x30, 0x01],
        terminalTransactionQualifiers: [UInt8] = [0x26, 0x80, 0x40, 0x00],
        countryCode: Int = 840,
        merchantNameAndLocation: String = "",
        terminalIdentification: String = "PROXIMA1",
        merchantCategoryCode: Int = 5999,
        merchantIdentifier: String? = nil,
        supportedApplications: [TerminalApplication] = TerminalApplication.defaults,
        cvmRequiredLimit: Int64? = nil,
        additionalData: [TLVTag: [UInt8]] = [:]
    ) {
        self.terminalType = terminalType
        self.terminalCapabilities = terminalCapabilities
        self.additionalTerminalCapabilities = additionalTerminalCapabilities
        self.terminalTransactionQualifiers = terminalTransactionQualifiers
        self.countryCode = countryCode
        self.merchantNameAndLocation = merchantNameAndLocation
        self.terminalIdentification = terminalIdentification
        self.merchantCategoryCode = merchantCategoryCode
        self.merchantIdentifier = merchantIdentifier
        self.supportedApplications = supportedApplications
        self.cvmRequiredLimit = cvmRequiredLimit
        self.additionalData = additionalData
    }

    /// Whether byte 2 of Terminal Capabilities announces enciphered PIN online (`40`).
    var supportsOnlinePIN: Bool { terminalCapabilities.count > 1 && terminalCapabilities[1] & 0x40 != 0 }
    /// Whether byte 2 of Terminal Capabilities announces signature (`20`).
    var supportsSignature: Bool { terminalCapabilities.count > 1 && terminalCapabilities[1] & 0x20 != 0 }
    /// Whether byte 2 of Terminal Capabilities announces "no CVM required" (`08`).
    var supportsNoCVM: Bool { terminalCapabilities.count > 1 && terminalCapabilities[1] & 0x08 != 0 }
}

/// Where the unpredictable number (`9F37`, b 4) comes from: the operating system's CSPRNG unless a test injects
/// a generator (EMV Book 4 Annex C4 wants it unpredictable to the card; it keys the card's replay protection).
package struct UnpredictableNumberSource: Sendable {
    private let generate: @Sendable () -> UInt32

    /// A source that calls `generate` once per transaction.
    package init(_ generate: @escaping @Sendable () -> UInt32) {
        self.generate = generate
    }

    /// `SystemRandomNumberGenerator`: `getrandom(2)` on Linux, `arc4random_buf` on Darwin — the OS CSPRNG.
    package static let system = UnpredictableNumberSource {
        var generator = SystemRandomNumberGenerator()
        return UInt32(truncatingIfNeeded: generator.next())
    }

    /// Four fresh bytes, big-endian: the value of `9F37`.
    package func next() -> [UInt8] {
        let value = generate()
        return [
            UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8),
            UInt8(truncatingIfNeeded: value),
        ]
    }
}
