package import Foundation

/// A currency of ISO 4217 List One: its alphabetic and numeric codes and the number of minor-unit digits (the
/// "exponent": 2 for USD cents, 0 for JPY, 3 for KWD fils).
///
/// The table is ISO 4217 List One as published on 2026-01-01 (SIX, `list-one.xml`), active codes whose minor
/// unit is defined: national currencies and the fund codes (`BOV`, `CHE`, `CHW`, `CLF`, `COU`, `MXV`, `USN`,
/// `UYI`, `UYW`, `XAD`). Precious metals, SDR, bond-market units, `XTS` and `XXX` have no minor unit ("N.A.") and
/// are left out: no card transaction uses them. Withdrawn codes (`HRK`, `SLL`, `ANG`, `BGN`, `ZWL`, `CUC`) are
/// refused.
///
/// The numeric code goes to the card as Transaction Currency Code (`5F2A`, n 3) and the minor units as
/// Transaction Currency Exponent (`5F36`, n 1), EMV Book 3 Annex A.
package struct ISO4217Currency: Hashable, Sendable, CustomStringConvertible {
    /// The three-letter code, such as `USD`.
    package let alphabeticCode: String
    /// The numeric code, such as 840 for USD.
    package let numericCode: Int
    /// Digits after the decimal point: 2 for USD, 0 for JPY, 3 for KWD, 4 for CLF.
    package let minorUnits: Int
    /// The ISO 4217 English name, such as `US Dollar`.
    package let name: String

    /// The largest Amount, Authorised (`9F02`, n 12): twelve decimal digits of minor units.
    package static let maximumMinorUnitAmount: Int64 = 999_999_999_999

    /// The currency with `code` (three ASCII letters, any case), or `nil` when ISO 4217 List One has no such
    /// active code.
    package init?(alphabeticCode code: String) {
        let upper = code.uppercased()
        guard upper.utf8.count == 3, upper.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }),
            let found = Self.byAlphabeticCode[upper]
        else { return nil }
        self = found
    }

    /// The currency with this numeric code, or `nil`.
    package init?(numericCode: Int) {
        guard let found = Self.all.first(where: { $0.numericCode == numericCode }) else { return nil }
        self = found
    }

    private init(_ alphabeticCode: String, _ numericCode: Int, _ minorUnits: Int, _ name: String) {
        self.alphabeticCode = alphabeticCode
        self.numericCode = numericCode
        self.minorUnits = minorUnits
        self.name = name
    }

    package var description: String { "\(alphabeticCode) (\(numericCode), \(minorUnits) minor units)" }

    /// `amount` in minor units of this currency (`29.99` USD → 2999), as it goes into `9F02`.
    ///
    /// The decimal's plain text goes through ``minorUnits(parsing:)``, the one amount parser, after the sign and
    /// zero checks. A `Decimal` made from a `Double` (`Decimal(19.99)` is 19.98999999999999488 on Linux, as it is
    /// on Darwin) is read as the shortest decimal that `Double` prints as (`19.99`), but only when `amount` is
    /// exactly what `Decimal(Double)` makes of that double; any other value with more decimals than the currency
    /// allows is refused.
    ///
    /// - Throws: ``PaymentServiceError/Code/invalidAmount`` when the amount is not a number, zero
    ///   or negative, has more decimals than ``minorUnits``, or needs more than the twelve digits of `9F02`.
    package func minorUnitAmount(of amount: Decimal) throws(PaymentServiceError) -> Int64 {
        guard !amount.isNaN else { throw PaymentServiceError(.invalidAmount, "the amount is not a number") }
        guard amount > 0 else {
            throw PaymentServiceError(
                .invalidAmount,
                "\(amount) \(alphabeticCode): a transaction amount must be greater than zero"
                    + (amount.isZero ? " (use PaymentCardVerificationRequest to check a card without a charge)" : "")
            )
        }
        do {
            return try minorUnits(parsing: Self.plainText(amount))
        } catch {
            if let shortest = Self.decimalFromDouble(amount),
                let units = try? minorUnits(parsing: Self.plainText(shortest))
            {
                return units
            }
            throw error
        }
    }

    /// A `Decimal` as text: Foundation prints plain digits and one dot, never an exponent.
    private static func plainText(_ amount: Decimal) -> String { amount.description }

    /// The one amount parser of Proxima (the CLI's `--amount`, the manifest's limits, the API's `Decimal` as
    /// text): a plain decimal number with at most ``minorUnits`` digits after the dot, in minor units (`"29.99"`
    /// USD → 2999, `"500"` JPY → 500, `"1.250"` KWD → 1250, `"0.00"` → 0).
    ///
    /// Accepted: one or more ASCII digits, optionally a dot and 1…``minorUnits`` digits. Refused, each with a
    /// reason naming the problem and the fix: empty text, spaces, a sign (`-0`, `+1`), a comma (`1,50`), an
    /// exponent (`1e3`), other characters (`12abc`), a second dot (`1.5.0`), a dot without digits on both sides,
    /// more decimals than the currency has (`0.001` USD, `1.0` JPY), more than the twelve digits of Amount,
    /// Authorised (`9F02`). Zero is accepted; callers that need a positive amount check it.
    ///
    /// - Throws: ``PaymentServiceError/Code/invalidAmount``.
    package func minorUnits(parsing text: String) throws(PaymentServiceError) -> Int64 {
        func refuse(_ problem: String) -> PaymentServiceError {
            PaymentServiceError(.invalidAmount, "amount \"\(text)\" \(alphabeticCode): \(problem)")
        }
        let example = format(minorUnitAmount: Int64(Self.exampleMajor) * Int64(pow10(minorUnits)) + exampleMinor)
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw refuse("is empty; write a decimal number such as \(example)") }
        if bytes.contains(UInt8(ascii: " ")) || bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw refuse("contains a space or control character; write the number alone, such as \(example)")
        }
        if let sign = bytes.first(where: { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "+") }) {
            throw refuse(
                "has a sign (\(Character(Unicode.Scalar(sign)))); amounts are written without one "
                    + "(a refund is a refund transaction of a positive amount)"
            )
        }
        if bytes.contains(UInt8(ascii: ",")) {
            throw refuse("contains a comma; use a dot as the decimal separator and no grouping, such as \(example)")
        }
        if bytes.contains(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }),
            bytes.allSatisfy({
                Self.isDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e")
                    || $0 == UInt8(ascii: "E")
            })
        {
            throw refuse("uses an exponent; write every digit, such as 1000 for 1e3")
        }
        if let (index, character) = text.enumerated().first(where: {
            !($0.element.isASCII
                && ($0.element == "." || $0.element.isWholeNumber))
        }) {
            throw refuse(
                "character \(index + 1) ('\(character)') is not a digit or dot; write a plain decimal number such as "
                    + example
            )
        }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count <= 2 else { throw refuse("has more than one dot; write one decimal point at most") }
        let whole = parts[0]
        let fraction = parts.count == 2 ? parts[1] : []
        guard !whole.isEmpty, parts.count == 1 || !fraction.isEmpty else {
            throw refuse("needs digits on both sides of the dot, such as \(example)")
        }
        guard fraction.count <= minorUnits else {
            if minorUnits == 0 {
                throw refuse("\(alphabeticCode) has no minor unit; write a whole number such as \(Self.exampleMajor)")
            }
            throw refuse(
                "has \(fraction.count) decimals; \(alphabeticCode) has \(minorUnits) minor-unit digits "
                    + "(at most \(minorUnits) after the dot)"
            )
        }
        let digits =
            Array(whole.drop { $0 == UInt8(ascii: "0") }) + fraction
            + Array(repeating: UInt8(ascii: "0"), count: minorUnits - fraction.count)
        let significant = digits.drop { $0 == UInt8(ascii: "0") }
        guard significant.count <= 12 else {
            throw refuse(
                "needs more than the 12 digits of Amount, Authorised (9F02); the most is "
                    + format(minorUnitAmount: Self.maximumMinorUnitAmount)
            )
        }
        return significant.reduce(Int64(0)) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
    }

    private static let exampleMajor = 12
    private var exampleMinor: Int64 { minorUnits == 0 ? 0 : 50 * Int64(pow10(minorUnits - 2)) }
    private func pow10(_ exponent: Int) -> Int { exponent <= 0 ? 1 : (0..<exponent).reduce(1) { r, _ in r * 10 } }
    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    /// `minorUnitAmount` as a decimal string with exactly ``minorUnits`` decimals (`2999` USD → `29.99`, `500` JPY
    /// → `500`, `1250` KWD → `1.250`); a negative amount keeps its sign.
    package func format(minorUnitAmount: Int64) -> String {
        let digits = String(minorUnitAmount.magnitude)
        let sign = minorUnitAmount < 0 ? "-" : ""
        guard minorUnits > 0 else { return sign + digits }
        let padded = String(repeating: "0", count: max(0, minorUnits + 1 - digits.count)) + digits
        let split = padded.index(padded.endIndex, offsetBy: -minorUnits)
        return sign + padded[..<split] + "." + padded[split...]
    }

    /// The value `Decimal(Double)` started from, as its shortest decimal, when `amount` is exactly the `Decimal`
    /// of a `Double`; otherwise `nil`.
    ///
    /// Foundation's `Decimal(Double)` keeps about 17 significant digits and is not always within half an ulp of
    /// the double (on Linux `Decimal(19.99)` is 19.98999999999999488, whose nearest double is not 19.99), so the
    /// doubles within 64 ulps of `amount` are tried, and of those whose `Decimal` is exactly `amount` the one with
    /// the shortest decimal form wins.
    static func decimalFromDouble(_ amount: Decimal) -> Decimal? {
        guard let nearest = Double(amount.description), nearest.isFinite, nearest != 0 else { return nil }
        var candidates: [Double] = [nearest]
        var up = nearest
        var down = nearest
        for _ in 0..<64 {
            up = up.nextUp
            down = down.nextDown
            candidates += [up, down]
        }
        let shortest = candidates.filter { Decimal($0) == amount }.map { "\($0)" }.min { $0.count < $1.count }
        guard let shortest, let value = Decimal(string: shortest, locale: Locale(identifier: "en_US_POSIX")),
            value != amount
        else { return nil }
        return value
    }

    /// Every currency of the table, sorted by alphabetic code.
    package static let all: [ISO4217Currency] = table.map { ISO4217Currency($0.0, $0.1, $0.2, $0.3) }

    private static let byAlphabeticCode: [String: ISO4217Currency] = Dictionary(
        uniqueKeysWithValues: all.map { ($0.alphabeticCode, $0) }
    )

    /// ISO 4217 List One (2026-01-01): alphabetic code, numeric code, minor units, name.
    private static let table: [(String, Int, Int, String)] = [
        ("AED", 784, 2, "UAE Dirham"),
        ("AFN", 971, 2, "Afghani"),
        ("ALL", 8, 2, "Lek"),
        ("AMD", 51, 2, "Armenian Dram"),
        ("AOA", 973, 2, "Kwanza"),
        ("ARS", 32, 2, "Argentine Peso"),
        ("AUD", 36, 2, "Australian Dollar"),
        ("AWG", 533, 2, "Aruban Florin"),
        ("AZN", 944, 2, "Azerbaijan Manat"),
        ("BAM", 977, 2, "Convertible Mark"),
        ("BBD", 52, 2, "Barbados Dollar"),
        ("BDT", 50, 2, "Taka"),
        ("BHD", 48, 3, "Bahraini Dinar"),
        ("BIF", 108, 0, "Burundi Franc"),
        ("BMD", 60, 2, "Bermudian Dollar"),
        ("BND", 96, 2, "Brunei Dollar"),
        ("BOB", 68, 2, "Boliviano"),
        ("BOV", 984, 2, "Mvdol"),
        ("BRL", 986, 2, "Brazilian Real"),
        ("BSD", 44, 2, "Bahamian Dollar"),
        ("BTN", 64, 2, "Ngultrum"),
        ("BWP", 72, 2, "Pula"),
        ("BYN", 933, 2, "Belarusian Ruble"),
        ("BZD", 84, 2, "Belize Dollar"),
        ("CAD", 124, 2, "Canadian Dollar"),
        ("CDF", 976, 2, "Congolese Franc"),
        ("CHE", 947, 2, "WIR Euro"),
        ("CHF", 756, 2, "Swiss Franc"),
        ("CHW", 948, 2, "WIR Franc"),
        ("CLF", 990, 4, "Unidad de Fomento"),
        ("CLP", 152, 0, "Chilean Peso"),
        ("CNY", 156, 2, "Yuan Renminbi"),
        ("COP", 170, 2, "Colombian Peso"),
        ("COU", 970, 2, "Unidad de Valor Real"),
        ("CRC", 188, 2, "Costa Rican Colon"),
        ("CUP", 192, 2, "Cuban Peso"),
        ("CVE", 132, 2, "Cabo Verde Escudo"),
        ("CZK", 203, 2, "Czech Koruna"),
        ("DJF", 262, 0, "Djibouti Franc"),
        ("DKK", 208, 2, "Danish Krone"),
        ("DOP", 214, 2, "Dominican Peso"),
        ("DZD", 12, 2, "Algerian Dinar"),
        ("EGP", 818, 2, "Egyptian Pound"),
        ("ERN", 232, 2, "Nakfa"),
        ("ETB", 230, 2, "Ethiopian Birr"),
        ("EUR", 978, 2, "Euro"),
        ("FJD", 242, 2, "Fiji Dollar"),
        ("FKP", 238, 2, "Falkland Islands Pound"),
        ("GBP", 826, 2, "Pound Sterling"),
        ("GEL", 981, 2, "Lari"),
        ("GHS", 936, 2, "Ghana Cedi"),
        ("GIP", 292, 2, "Gibraltar Pound"),
        ("GMD", 270, 2, "Dalasi"),
        ("GNF", 324, 0, "Guinean Franc"),
        ("GTQ", 320, 2, "Quetzal"),
        ("GYD", 328, 2, "Guyana Dollar"),
        ("HKD", 344, 2, "Hong Kong Dollar"),
        ("HNL", 340, 2, "Lempira"),
        ("HTG", 332, 2, "Gourde"),
        ("HUF", 348, 2, "Forint"),
        ("IDR", 360, 2, "Rupiah"),
        ("ILS", 376, 2, "New Israeli Sheqel"),
        ("INR", 356, 2, "Indian Rupee"),
        ("IQD", 368, 3, "Iraqi Dinar"),
        ("IRR", 364, 2, "Iranian Rial"),
        ("ISK", 352, 0, "Iceland Krona"),
        ("JMD", 388, 2, "Jamaican Dollar"),
        ("JOD", 400, 3, "Jordanian Dinar"),
        ("JPY", 392, 0, "Yen"),
        ("KES", 404, 2, "Kenyan Shilling"),
        ("KGS", 417, 2, "Som"),
        ("KHR", 116, 2, "Riel"),
        ("KMF", 174, 0, "Comorian Franc"),
        ("KPW", 408, 2, "North Korean Won"),
        ("KRW", 410, 0, "Won"),
        ("KWD", 414, 3, "Kuwaiti Dinar"),
        ("KYD", 136, 2, "Cayman Islands Dollar"),
        ("KZT", 398, 2, "Tenge"),
        ("LAK", 418, 2, "Lao Kip"),
        ("LBP", 422, 2, "Lebanese Pound"),
        ("LKR", 144, 2, "Sri Lanka Rupee"),
        ("LRD", 430, 2, "Liberian Dollar"),
        ("LSL", 426, 2, "Loti"),
        ("LYD", 434, 3, "Libyan Dinar"),
        ("MAD", 504, 2, "Moroccan Dirham"),
        ("MDL", 498, 2, "Moldovan Leu"),
        ("MGA", 969, 2, "Malagasy Ariary"),
        ("MKD", 807, 2, "Denar"),
        ("MMK", 104, 2, "Kyat"),
        ("MNT", 496, 2, "Tugrik"),
        ("MOP", 446, 2, "Pataca"),
        ("MRU", 929, 2, "Ouguiya"),
        ("MUR", 480, 2, "Mauritius Rupee"),
        ("MVR", 462, 2, "Rufiyaa"),
        ("MWK", 454, 2, "Malawi Kwacha"),
        ("MXN", 484, 2, "Mexican Peso"),
        ("MXV", 979, 2, "Mexican Unidad de Inversion (UDI)"),
        ("MYR", 458, 2, "Malaysian Ringgit"),
        ("MZN", 943, 2, "Mozambique Metical"),
        ("NAD", 516, 2, "Namibia Dollar"),
        ("NGN", 566, 2, "Naira"),
        ("NIO", 558, 2, "Cordoba Oro"),
        ("NOK", 578, 2, "Norwegian Krone"),
        ("NPR", 524, 2, "Nepalese Rupee"),
        ("NZD", 554, 2, "New Zealand Dollar"),
        ("OMR", 512, 3, "Rial Omani"),
        ("PAB", 590, 2, "Balboa"),
        ("PEN", 604, 2, "Sol"),
        ("PGK", 598, 2, "Kina"),
        ("PHP", 608, 2, "Philippine Peso"),
        ("PKR", 586, 2, "Pakistan Rupee"),
        ("PLN", 985, 2, "Zloty"),
        ("PYG", 600, 0, "Guarani"),
        ("QAR", 634, 2, "Qatari Rial"),
        ("RON", 946, 2, "Romanian Leu"),
        ("RSD", 941, 2, "Serbian Dinar"),
        ("RUB", 643, 2, "Russian Ruble"),
        ("RWF", 646, 0, "Rwanda Franc"),
        ("SAR", 682, 2, "Saudi Riyal"),
        ("SBD", 90, 2, "Solomon Islands Dollar"),
        ("SCR", 690, 2, "Seychelles Rupee"),
        ("SDG", 938, 2, "Sudanese Pound"),
        ("SEK", 752, 2, "Swedish Krona"),
        ("SGD", 702, 2, "Singapore Dollar"),
        ("SHP", 654, 2, "Saint Helena Pound"),
        ("SLE", 925, 2, "Leone"),
        ("SOS", 706, 2, "Somali Shilling"),
        ("SRD", 968, 2, "Surinam Dollar"),
        ("SSP", 728, 2, "South Sudanese Pound"),
        ("STN", 930, 2, "Dobra"),
        ("SVC", 222, 2, "El Salvador Colon"),
        ("SYP", 760, 2, "Syrian Pound"),
        ("SZL", 748, 2, "Lilangeni"),
        ("THB", 764, 2, "Baht"),
        ("TJS", 972, 2, "Somoni"),
        ("TMT", 934, 2, "Turkmenistan New Manat"),
        ("TND", 788, 3, "Tunisian Dinar"),
        ("TOP", 776, 2, "Pa'anga"),
        ("TRY", 949, 2, "Turkish Lira"),
        ("TTD", 780, 2, "Trinidad and Tobago Dollar"),
        ("TWD", 901, 2, "New Taiwan Dollar"),
        ("TZS", 834, 2, "Tanzanian Shilling"),
        ("UAH", 980, 2, "Hryvnia"),
        ("UGX", 800, 0, "Uganda Shilling"),
        ("USD", 840, 2, "US Dollar"),
        ("USN", 997, 2, "US Dollar (Next day)"),
        ("UYI", 940, 0, "Uruguay Peso en Unidades Indexadas (UI)"),
        ("UYU", 858, 2, "Peso Uruguayo"),
        ("UYW", 927, 4, "Unidad Previsional"),
        ("UZS", 860, 2, "Uzbekistan Sum"),
        ("VED", 926, 2, "Bolivar Soberano (digital)"),
        ("VES", 928, 2, "Bolivar Soberano"),
        ("VND", 704, 0, "Dong"),
        ("VUV", 548, 0, "Vatu"),
        ("WST", 882, 2, "Tala"),
        ("XAD", 396, 2, "Arab Accounting Dinar"),
        ("XAF", 950, 0, "CFA Franc BEAC"),
        ("XCD", 951, 2, "East Caribbean Dollar"),
        ("XCG", 532, 2, "Caribbean Guilder"),
        ("XOF", 952, 0, "CFA Franc BCEAO"),
        ("XPF", 953, 0, "CFP Franc"),
        ("YER", 886, 2, "Yemeni Rial"),
        ("ZAR", 710, 2, "Rand"),
        ("ZMW", 967, 2, "Zambian Kwacha"),
        ("ZWG", 924, 2, "Zimbabwe Gold"),
    ]
}
