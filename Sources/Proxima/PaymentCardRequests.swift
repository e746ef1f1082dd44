import Foundation
internal import PaymentCapability

/// A payment to read a card for (Apple's `PaymentCardTransactionRequest`).
public struct PaymentCardTransactionRequest: Hashable, Sendable {
    /// What the transaction does (tag `9C`).
    public enum TransactionType: String, Hashable, Sendable, CaseIterable {
        /// Goods and services (`9C` = `00`).
        case purchase
        /// Money back to the card (`9C` = `20`).
        case refund
    }

    /// The amount in the currency's major unit (`29.99` for USD 29.99), with at most the currency's minor-unit
    /// digits (see ``ISO4217Currency``).
    public var amount: Decimal
    /// An ISO 4217 alphabetic code, such as `USD`.
    public var currencyCode: String
    public var type: TransactionType

    /// The form of the usage sketch: `PaymentCardTransactionRequest(amount:currencyCode:type:)`.
    public init(amount: Decimal, currencyCode: String, type: TransactionType) {
        self.amount = amount
        self.currencyCode = currencyCode
        self.type = type
    }

    /// Apple's form: `PaymentCardTransactionRequest(amount:currencyCode:for:)`.
    public init(amount: Decimal, currencyCode: String, for type: TransactionType) {
        self.init(amount: amount, currencyCode: currencyCode, type: type)
    }
}

/// A card check without a charge (Apple's `PaymentCardVerificationRequest`): to save a card, look up a refund or
/// open a tab. It runs as a zero-amount purchase, for which the terminal asks the card for an online cryptogram
/// (EMV Book B §3.1.1.11).
public struct PaymentCardVerificationRequest: Hashable, Sendable {
    /// Why the card is checked; it goes to the processor only through the application.
    public enum Reason: String, Hashable, Sendable, CaseIterable {
        case lookUp, saveCard, openTab, other
    }

    public var currencyCode: String
    public var verificationReason: Reason

    public init(currencyCode: String, for reason: Reason = .other) {
        self.currencyCode = currencyCode
        self.verificationReason = reason
    }
}

/// The result of a card read (Apple's `PaymentCardReadResult`).
///
/// Send ``paymentCardData`` to the processor at once: it is encrypted to the processor and expires
/// ``paymentCardDataExpiresAt`` (60 s after the read unless the manifest says otherwise). Printing a result shows
/// its id, outcome and ``generalCardData`` only.
public struct PaymentCardReadResult: Hashable, Sendable, Identifiable, CustomStringConvertible,
    CustomDebugStringConvertible
{
    /// How the read ended.
    public enum ReadOutcome: String, Hashable, Sendable {
        /// The card produced a cryptogram for the processor (online request) or approved offline.
        case success
        /// The read ended without a usable cryptogram (only with `includeErrorInReadResult`).
        case failure
        /// The card declined (AAC; only with `includeErrorInReadResult`, else the read throws
        /// ``PaymentCardReaderSession/ReadError/paymentCardDeclined(_:)``).
        case cardDeclined
    }

    /// What an app may show and keep about the card: brand, last four digits and expiry. Nothing more.
    public struct GeneralCardData: Hashable, Sendable, CustomStringConvertible {
        /// The scheme, such as `Visa`, `Mastercard`, `Maestro`.
        public var brand: String
        public var lastFourDigits: String
        /// Expiry month, 1–12.
        public var expirationMonth: Int
        /// Four-digit expiry year.
        public var expirationYear: Int

        public init(brand: String, lastFourDigits: String, expirationMonth: Int, expirationYear: Int) {
            self.brand = brand
            self.lastFourDigits = lastFourDigits
            self.expirationMonth = expirationMonth
            self.expirationYear = expirationYear
        }

        /// `MM/YY`.
        public var expiry: String { CardExpiry(year: expirationYear, month: expirationMonth).description }

        public var description: String { "\(brand) •••• \(lastFourDigits) exp \(expiry)" }
    }

    /// The transaction id; it is also `txn` inside ``paymentCardData``.
    public let id: String
    /// The card data for the processor: a card data envelope (`Docs/card-data-envelope.md`) in standard base64.
    /// `nil` when the card gave no data (a failure before any cryptogram).
    public let paymentCardData: String?
    /// Brand, last four digits and expiry, when the card gave them.
    public let generalCardData: GeneralCardData?
    public let outcome: ReadOutcome
    /// Whether the card asks for online PIN: capture a PIN and send it with the authorisation (the reader's
    /// ``PaymentCardReader/Event/pinEntryRequested`` event was sent too).
    public let isPINRequired: Bool
    /// The AID of the application read, in hex (Apple's `applicationTypeIdentifier`).
    public let applicationTypeIdentifier: String?
    /// The lane the read ran on.
    public let lane: String
    /// The physical reader that read the card.
    public let device: String
    /// When ``paymentCardData`` stops being accepted by the processor.
    public let paymentCardDataExpiresAt: Date
    /// The loyalty passes read in the same tap, before the card
    /// (``PaymentCardReaderSession/readPaymentCard(_:vasRequest:)``); `nil` for a payment-only read.
    public internal(set) var vasReadResult: VASReadResult?

    init(
        id: String,
        paymentCardData: String?,
        generalCardData: GeneralCardData?,
        outcome: ReadOutcome,
        isPINRequired: Bool,
        applicationTypeIdentifier: String?,
        lane: String,
        device: String,
        paymentCardDataExpiresAt: Date
    ) {
        self.id = id
        self.paymentCardData = paymentCardData
        self.generalCardData = generalCardData
        self.outcome = outcome
        self.isPINRequired = isPINRequired
        self.applicationTypeIdentifier = applicationTypeIdentifier
        self.lane = lane
        self.device = device
        self.paymentCardDataExpiresAt = paymentCardDataExpiresAt
    }

    /// The API result of a sealed read.
    init(_ read: SealedPaymentRead) {
        self.init(
            id: read.transactionID,
            paymentCardData: read.envelope,
            generalCardData: read.card.map {
                GeneralCardData(
                    brand: $0.brand,
                    lastFourDigits: $0.lastFourDigits,
                    expirationMonth: $0.expirationMonth,
                    expirationYear: $0.expirationYear
                )
            },
            outcome: read.failure.map { $0.code == .declined ? .cardDeclined : .failure } ?? .success,
            isPINRequired: read.isPINRequired,
            applicationTypeIdentifier: read.applicationIdentifier,
            lane: read.lane.rawValue,
            device: read.reader.rawValue,
            paymentCardDataExpiresAt: read.expiresAt
        )
    }

    public var description: String {
        var parts = [id, outcome.rawValue]
        if let generalCardData { parts.append(generalCardData.description) }
        if isPINRequired { parts.append("PIN required") }
        parts.append("lane \(lane), reader \(device)")
        if let paymentCardData { parts.append("paymentCardData: \(paymentCardData.utf8.count) base64 characters") }
        return "PaymentCardReadResult(" + parts.joined(separator: ", ") + ")"
    }

    public var debugDescription: String { description }
}
