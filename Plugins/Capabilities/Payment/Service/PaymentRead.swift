package import Foundation
package import ProximaCore

/// What an app asks the payment service to read: a purchase or refund of an amount, or a card check.
package struct PaymentOrder: Sendable {
    package var kind: CardDataEnvelope.Contents.Kind
    /// In major units of the currency (`29.99`); ignored for a verification, which reads for zero.
    package var amount: Decimal
    /// The ISO 4217 alphabetic code, checked by the service.
    package var currencyCode: String

    package init(kind: CardDataEnvelope.Contents.Kind, amount: Decimal, currencyCode: String) {
        self.kind = kind
        self.amount = amount
        self.currencyCode = currencyCode
    }
}

/// How one read runs.
package struct PaymentReadOptions: Sendable {
    /// Read only on this reader (kernel id); `nil` lets the kernel route to any free reader of the lane.
    package var pinnedReader: ReaderID?
    /// The whole read, waiting for a reader and a card included; `nil` waits as long as the lane allows.
    package var timeout: Duration?
    /// Return reads that ended without an online request or approval (declined, card not supported, …) as
    /// results with their failure, instead of throwing ``PaymentReadFailure``.
    package var includeFailedReads: Bool
    /// How long the sealed card data stays valid for the processor, instead of `cardDataTTLSeconds`: a stored
    /// read's envelope must outlive the time offline (`capabilities.storeAndForward.storedReadValidityHours`).
    package var cardDataLifetime: Duration?

    package init(
        pinnedReader: ReaderID? = nil,
        timeout: Duration? = nil,
        includeFailedReads: Bool = false,
        cardDataLifetime: Duration? = nil
    ) {
        self.pinnedReader = pinnedReader
        self.timeout = timeout
        self.includeFailedReads = includeFailedReads
        self.cardDataLifetime = cardDataLifetime
    }
}

/// What happens during a read, in this order: `readyForTap` (the reader is leased and waits for the card),
/// `cardDetected`, `removeCard` (the card is no longer needed), `pinEntryRequested` (online PIN, after the read).
package enum PaymentReadEvent: Hashable, Sendable {
    case readyForTap, cardDetected, removeCard, pinEntryRequested
}

/// The card as an app may see it: brand, last four digits and expiry.
package struct MaskedCard: Hashable, Sendable {
    /// The scheme's name (`Visa`, `Mastercard`, `Maestro`, …).
    package var brand: String
    package var lastFourDigits: String
    package var expirationMonth: Int
    package var expirationYear: Int
    /// The Application Effective Date (`5F25`) when the card gave one: for store and forward's check; printed
    /// as withheld.
    package var effectiveDate: CardEffectiveDate? = nil
}

/// A read that ended without a cryptogram for the processor, or with a decline.
package struct PaymentReadFailure: Error, Hashable, Sendable, CustomStringConvertible {
    package enum Code: String, Hashable, Sendable {
        /// The card declined (AAC).
        case declined
        /// Nothing on the card runs here: no payment directory, no supported application, another interface.
        case cardNotSupported
        /// The card asks to be presented again (a phone to unlock).
        case presentAgain
        /// The transaction ended on a status word or an exhausted candidate list.
        case ended
    }

    package let code: Code
    /// What happened and where (lane, reader); never card data.
    package let reason: String

    package var description: String { "\(code): \(reason)" }
}

/// What the payment service returns for a read: the card data sealed to the processor, and what the app may see.
///
/// Clear card data never reaches this type: the service seals it inside the tap (`Docs/card-data-envelope.md`).
package struct SealedPaymentRead: Hashable, Sendable {
    /// The transaction id; also `txn` inside the envelope.
    package var transactionID: String
    /// The card data envelope in standard base64; `nil` when the card gave no data.
    package var envelope: String?
    package var card: MaskedCard?
    /// `nil` for an online request or an offline approval; otherwise why the read did not succeed (only with
    /// ``PaymentReadOptions/includeFailedReads``).
    package var failure: PaymentReadFailure?
    /// The card asks for online PIN with the authorisation.
    package var isPINRequired: Bool
    /// The AID read, hex.
    package var applicationIdentifier: String?
    package var lane: LaneID
    package var reader: ReaderID
    /// When the processor stops accepting the envelope.
    package var expiresAt: Date
}
