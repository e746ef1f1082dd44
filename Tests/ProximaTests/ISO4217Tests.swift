import Foundation
import Proxima
import Testing

@testable import PaymentCapability

/// The ISO 4217 table and the amount rules of `PaymentCardTransactionRequest`.
@Suite struct ISO4217Tests {
    static let posix = Locale(identifier: "en_US_POSIX")

    static func decimal(_ text: String) -> Decimal { Decimal(string: text, locale: posix) ?? .nan }

    struct Expected: Sendable, CustomTestStringConvertible {
        var code: String
        var numeric: Int
        var minorUnits: Int
        var testDescription: String { code }
    }

    static let expected: [Expected] = [
        .init(code: "USD", numeric: 840, minorUnits: 2), .init(code: "EUR", numeric: 978, minorUnits: 2),
        .init(code: "GBP", numeric: 826, minorUnits: 2), .init(code: "JPY", numeric: 392, minorUnits: 0),
        .init(code: "CHF", numeric: 756, minorUnits: 2), .init(code: "CAD", numeric: 124, minorUnits: 2),
        .init(code: "AUD", numeric: 36, minorUnits: 2), .init(code: "SEK", numeric: 752, minorUnits: 2),
        .init(code: "NOK", numeric: 578, minorUnits: 2), .init(code: "DKK", numeric: 208, minorUnits: 2),
        .init(code: "PLN", numeric: 985, minorUnits: 2), .init(code: "CZK", numeric: 203, minorUnits: 2),
        .init(code: "HUF", numeric: 348, minorUnits: 2), .init(code: "KWD", numeric: 414, minorUnits: 3),
        .init(code: "BHD", numeric: 48, minorUnits: 3), .init(code: "TND", numeric: 788, minorUnits: 3),
        .init(code: "CLP", numeric: 152, minorUnits: 0), .init(code: "ISK", numeric: 352, minorUnits: 0),
        .init(code: "KRW", numeric: 410, minorUnits: 0), .init(code: "INR", numeric: 356, minorUnits: 2),
        .init(code: "CNY", numeric: 156, minorUnits: 2), .init(code: "BRL", numeric: 986, minorUnits: 2),
        .init(code: "MXN", numeric: 484, minorUnits: 2), .init(code: "ZAR", numeric: 710, minorUnits: 2),
        .init(code: "NZD", numeric: 554, minorUnits: 2), .init(code: "SGD", numeric: 702, minorUnits: 2),
        .init(code: "HKD", numeric: 344, minorUnits: 2), .init(code: "CLF", numeric: 990, minorUnits: 4),
        .init(code: "UYW", numeric: 927, minorUnits: 4), .init(code: "XOF", numeric: 952, minorUnits: 0),
        .init(code: "VND", numeric: 704, minorUnits: 0), .init(code: "OMR", numeric: 512, minorUnits: 3),
        .init(code: "XCG", numeric: 532, minorUnits: 2), .init(code: "ZWG", numeric: 924, minorUnits: 2),
        .init(code: "SLE", numeric: 925, minorUnits: 2), .init(code: "VES", numeric: 928, minorUnits: 2),
    ]

    @Test(arguments: expected)
    func tableHoldsNumericCodeAndMinorUnits(_ expected: Expected) throws {
        let currency = try #require(ISO4217Currency(alphabeticCode: expected.code))
        #expect(currency.numericCode == expected.numeric)
        #expect(currency.minorUnits == expected.minorUnits)
        #expect(ISO4217Currency(alphabeticCode: expected.code.lowercased()) == currency)
    }

    @Test func tableIsWellFormed() {
        let all = ISO4217Currency.all
        #expect(all.count >= 160)
        #expect(Set(all.map(\.alphabeticCode)).count == all.count)
        #expect(Set(all.map(\.numericCode)).count == all.count)
        #expect(all.map(\.alphabeticCode) == all.map(\.alphabeticCode).sorted())
        for currency in all {
            #expect(currency.alphabeticCode.utf8.count == 3)
            #expect((1...999).contains(currency.numericCode))
            #expect([0, 2, 3, 4].contains(currency.minorUnits), "\(currency)")
            #expect(ISO4217Currency(numericCode: currency.numericCode) == currency)
        }
    }

    @Test(arguments: ["XXX", "XTS", "XAU", "XDR", "HRK", "SLL", "ZWL", "ANG", "BGN", "US", "USDD", "U$D", "", "123"])
    func unknownWithdrawnAndUnitlessCodesAreRefused(_ code: String) {
        #expect(ISO4217Currency(alphabeticCode: code) == nil)
    }

    struct AmountCase: Sendable, CustomTestStringConvertible {
        var amount: String
        var currency: String
        var minorUnits: Int64?
        var testDescription: String { "\(amount) \(currency)" }
    }

    static let amounts: [AmountCase] = [
        .init(amount: "29.99", currency: "USD", minorUnits: 2999),
        .init(amount: "29.9", currency: "USD", minorUnits: 2990),
        .init(amount: "29.990", currency: "USD", minorUnits: 2999),
        .init(amount: "0.01", currency: "USD", minorUnits: 1),
        .init(amount: "9999999999.99", currency: "USD", minorUnits: 999_999_999_999),
        .init(amount: "500", currency: "JPY", minorUnits: 500),
        .init(amount: "999999999999", currency: "JPY", minorUnits: 999_999_999_999),
        .init(amount: "1.25", currency: "KWD", minorUnits: 1250),
        .init(amount: "1.255", currency: "KWD", minorUnits: 1255),
        .init(amount: "999999999.999", currency: "KWD", minorUnits: 999_999_999_999),
        .init(amount: "12.3456", currency: "CLF", minorUnits: 123_456),
        // Refused: zero, negative, too many decimals, beyond 9F02's twelve digits.
        .init(amount: "0", currency: "USD", minorUnits: nil),
        .init(amount: "0.00", currency: "USD", minorUnits: nil),
        .init(amount: "-5.00", currency: "USD", minorUnits: nil),
        .init(amount: "-0.01", currency: "USD", minorUnits: nil),
        .init(amount: "29.999", currency: "USD", minorUnits: nil),
        .init(amount: "0.001", currency: "USD", minorUnits: nil),
        .init(amount: "500.5", currency: "JPY", minorUnits: nil),
        .init(amount: "0.5", currency: "CLP", minorUnits: nil),
        .init(amount: "1.2345", currency: "KWD", minorUnits: nil),
        .init(amount: "10000000000.00", currency: "USD", minorUnits: nil),
        .init(amount: "10000000000.01", currency: "USD", minorUnits: nil),
        .init(amount: "1000000000000", currency: "JPY", minorUnits: nil),
        .init(amount: "1000000000", currency: "KWD", minorUnits: nil),
        .init(amount: "1e30", currency: "USD", minorUnits: nil),
    ]

    @Test(arguments: amounts)
    func amountsBecomeMinorUnitsOrAreRefused(_ test: AmountCase) throws {
        let currency = try #require(ISO4217Currency(alphabeticCode: test.currency))
        let amount = Self.decimal(test.amount)
        if let expected = test.minorUnits {
            #expect(try currency.minorUnitAmount(of: amount) == expected)
        } else {
            #expect(throws: PaymentServiceError(.invalidAmount, "")) {
                try currency.minorUnitAmount(of: amount)
            }
        }
    }

    @Test func notANumberIsAnInvalidAmount() throws {
        let usd = try #require(ISO4217Currency(alphabeticCode: "USD"))
        #expect(throws: PaymentServiceError(.invalidAmount, "")) { try usd.minorUnitAmount(of: .nan) }
    }

    /// `Decimal(29.99)` of the usage sketch goes through a `Double`: amounts written as floating-point literals are
    /// read as the literal, while a `Decimal` that really has more digits is still refused.
    @Test func decimalsMadeFromDoublesReadAsTheirLiteral() throws {
        let usd = try #require(ISO4217Currency(alphabeticCode: "USD"))
        #expect(try usd.minorUnitAmount(of: Decimal(29.99)) == 2999)
        #expect(try usd.minorUnitAmount(of: Decimal(19.99)) == 1999)
        #expect(try usd.minorUnitAmount(of: Decimal(0.07)) == 7)
        #expect(try usd.minorUnitAmount(of: Decimal(1234.56)) == 123_456)
        let kwd = try #require(ISO4217Currency(alphabeticCode: "KWD"))
        #expect(try kwd.minorUnitAmount(of: Decimal(1.005)) == 1005)
        // 1.005 USD stays refused whichever way it was written.
        #expect(throws: PaymentServiceError(.invalidAmount, "")) {
            try usd.minorUnitAmount(of: Decimal(1.005))
        }
        #expect(throws: PaymentServiceError(.invalidAmount, "")) {
            try usd.minorUnitAmount(of: Self.decimal("19.98999999999999"))
        }
    }

    @Test func refusalsSayWhy() throws {
        let usd = try #require(ISO4217Currency(alphabeticCode: "USD"))
        func reason(_ amount: String) -> String {
            do {
                _ = try usd.minorUnitAmount(of: Self.decimal(amount))
                return ""
            } catch { return error.reason }
        }
        #expect(reason("0").contains("greater than zero"))
        #expect(reason("-1").contains("greater than zero"))
        #expect(reason("1.234").contains("2 minor-unit digits"))
        #expect(reason("10000000000").contains("12 digits"))
    }

    @Test(arguments: [
        ("USD", Int64(2999), "29.99"), ("USD", 1, "0.01"), ("USD", 0, "0.00"), ("JPY", 500, "500"),
        ("KWD", 1250, "1.250"), ("KWD", 5, "0.005"), ("CLF", 123_456, "12.3456"), ("USD", -150, "-1.50"),
    ])
    func formatsMinorUnits(_ code: String, _ units: Int64, _ text: String) throws {
        #expect(try #require(ISO4217Currency(alphabeticCode: code)).format(minorUnitAmount: units) == text)
    }
}

/// The one amount parser (`ISO4217Currency.minorUnits(parsing:)`) behind the CLI's `--amount`, the manifest's
/// limits and the API: the table of issue 8, each refusal naming the problem and the fix.
@Suite struct StrictAmountTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var text: String
        var currency: String
        /// Minor units, or `nil` when refused.
        var minorUnits: Int64?
        /// What the refusal must say.
        var reason: String = ""
        var testDescription: String { "\"\(text)\" \(currency)" }
    }

    static let cases: [Case] = [
        .init(text: "1,50", currency: "EUR", minorUnits: nil, reason: "use a dot as the decimal separator"),
        .init(text: "12abc", currency: "USD", minorUnits: nil, reason: "character 3 ('a') is not a digit"),
        .init(text: "1.5.0", currency: "USD", minorUnits: nil, reason: "more than one dot"),
        .init(text: "1e3", currency: "USD", minorUnits: nil, reason: "exponent"),
        .init(text: " 1.00", currency: "USD", minorUnits: nil, reason: "space"),
        .init(text: "1.00 ", currency: "USD", minorUnits: nil, reason: "space"),
        .init(text: "-0", currency: "USD", minorUnits: nil, reason: "sign"),
        .init(text: "+1", currency: "USD", minorUnits: nil, reason: "sign"),
        .init(text: "0.001", currency: "USD", minorUnits: nil, reason: "3 decimals; USD has 2 minor-unit digits"),
        .init(text: "0.001 USD", currency: "USD", minorUnits: nil, reason: "space"),
        .init(text: "1", currency: "JPY", minorUnits: 1),
        .init(text: "1.0", currency: "JPY", minorUnits: nil, reason: "JPY has no minor unit"),
        .init(text: "1 JPY", currency: "JPY", minorUnits: nil, reason: "space"),
        .init(text: "", currency: "USD", minorUnits: nil, reason: "empty"),
        .init(text: "1.", currency: "USD", minorUnits: nil, reason: "both sides of the dot"),
        .init(text: ".5", currency: "USD", minorUnits: nil, reason: "both sides of the dot"),
        .init(text: "1.50", currency: "EUR", minorUnits: 150),
        .init(text: "1.5", currency: "EUR", minorUnits: 150),
        .init(text: "50.00", currency: "EUR", minorUnits: 5000),
        .init(text: "0.00", currency: "EUR", minorUnits: 0),
        .init(text: "0", currency: "USD", minorUnits: 0),
        .init(text: "007.10", currency: "USD", minorUnits: 710),
        .init(text: "1.250", currency: "KWD", minorUnits: 1250),
        .init(text: "9999999999.99", currency: "USD", minorUnits: 999_999_999_999),
        .init(text: "10000000000.00", currency: "USD", minorUnits: nil, reason: "12 digits"),
        .init(text: "1٫5", currency: "USD", minorUnits: nil, reason: "is not a digit or dot"),
    ]

    @Test(arguments: cases)
    func parsesOrRefusesWithTheFix(_ test: Case) throws {
        let currency = try #require(ISO4217Currency(alphabeticCode: test.currency))
        if let expected = test.minorUnits {
            #expect(try currency.minorUnits(parsing: test.text) == expected)
            return
        }
        do {
            let units = try currency.minorUnits(parsing: test.text)
            Issue.record("\"\(test.text)\" was read as \(units) minor units")
        } catch {
            #expect(error.code == .invalidAmount)
            #expect(error.reason.contains(test.reason), "\(error.reason)")
            #expect(error.reason.contains("\"\(test.text)\""))
        }
    }

    /// `Decimal` amounts of the API take the same path: a value whose text the parser refuses is refused.
    @Test func decimalAmountsUseTheSameParser() throws {
        let jpy = try #require(ISO4217Currency(alphabeticCode: "JPY"))
        #expect(try jpy.minorUnitAmount(of: Decimal(1)) == 1)
        #expect(throws: PaymentServiceError(.invalidAmount, "")) {
            try jpy.minorUnitAmount(of: Decimal(string: "1.5")!)
        }
        let usd = try #require(ISO4217Currency(alphabeticCode: "USD"))
        #expect(throws: PaymentServiceError(.invalidAmount, "")) {
            try usd.minorUnitAmount(of: Decimal(string: "0.001")!)
        }
    }
}
