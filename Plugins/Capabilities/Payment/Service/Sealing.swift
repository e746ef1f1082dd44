internal import EMVCommon
internal import Foundation
internal import ProximaCore
internal import ProximaCrypto

/// What a tap hands back out of the kernel: a sealed read, or why the read failed. Never clear card data.
enum TapEnding: Sendable {
    case sealed(SealedPaymentRead)
    case failed(PaymentReadFailure)
}

/// Turns the capability's outcome into what may leave the tap: the processor tags sealed in a card data envelope
/// (version 2: HPKE auth mode from the reader key to the processor key, `Docs/card-data-envelope.md`) and the masked card.
struct Sealing: Sendable {
    let settings: PaymentSettings
    /// The reader key and the processor key, `DH` between them computed once per service.
    let envelopeKeys: HPKE.AuthenticatedSenderKeys
    let order: PaymentOrder
    let currency: ISO4217Currency
    let minorUnits: Int64
    let merchant: VerifiedReaderToken
    let now: @Sendable () -> Date
    let includeFailedReads: Bool

    func seal(_ outcome: EMVOutcome, context: TapContext) throws -> TapEnding {
        let failure = Self.failure(of: outcome, reader: context.reader, lane: context.lane)
        if let failure, !includeFailedReads { return .failed(failure) }
        let readAt = now()
        let expiresAt = readAt.addingTimeInterval(TimeInterval(settings.cardDataTTL.components.seconds))
        let transactionID = RandomUUID.lowercasedString()
        let emv = EMVCardData.processorTags.compactMap { tag in
            outcome.cardData.tags[tag].map { TLV(tag: tag, value: $0) }
        }
        var envelope: String?
        if !emv.isEmpty {
            let contents = CardDataEnvelope.Contents(
                transactionID: transactionID,
                kind: order.kind,
                amount: currency.format(minorUnitAmount: minorUnits),
                currencyCode: currency.alphabeticCode,
                merchantID: merchant.merchantID,
                readerIdentifier: settings.readerIdentifier,
                lane: context.lane.rawValue,
                device: context.reader.rawValue,
                readAt: readAt,
                expiresAt: expiresAt,
                outcome: outcome.status.rawValue,
                cardholderVerification: outcome.cvm.rawValue,
                emv: emv
            )
            do {
                envelope = Base64.encode(
                    try CardDataEnvelope.seal(contents, keys: envelopeKeys)
                )
            } catch {
                throw PaymentServiceError(
                    .sealingFailed,
                    "sealing the card data to the processor key failed [lane \(context.lane)]: \(error)",
                    underlying: error
                )
            }
        }
        let card: MaskedCard? =
            if let brand = outcome.brand, let lastFour = outcome.lastFourDigits, let expiry = outcome.expiry {
                MaskedCard(
                    brand: brand.description,
                    lastFourDigits: lastFour,
                    expirationMonth: expiry.month,
                    expirationYear: expiry.year,
                    effectiveDate: outcome.effectiveDate
                )
            } else {
                nil
            }
        return .sealed(
            SealedPaymentRead(
                transactionID: transactionID,
                envelope: envelope,
                card: card,
                failure: failure,
                isPINRequired: outcome.cvm == .onlinePIN && failure == nil,
                applicationIdentifier: outcome.selectedApplicationIdentifier?.hexString,
                lane: context.lane,
                reader: context.reader,
                expiresAt: expiresAt
            )
        )
    }

    /// Why an outcome is no success, or `nil` for an online request or an offline approval (EMV Book A §6.2).
    static func failure(of outcome: EMVOutcome, reader: ReaderID, lane: LaneID) -> PaymentReadFailure? {
        let place = "[lane \(lane), reader \(reader)]"
        switch outcome.status {
        case .onlineRequest, .approved:
            return nil
        case .declined:
            return PaymentReadFailure(code: .declined, reason: "the card declined the transaction (AAC) \(place)")
        case .tryAnotherInterface where outcome.isCardNotSupported:
            return PaymentReadFailure(code: .cardNotSupported, reason: "\(outcome.reason) \(place)")
        case .tryAnotherInterface:
            return PaymentReadFailure(
                code: .cardNotSupported,
                reason: "the card asks for another interface (insert the chip) \(place)"
            )
        case .tryAgain:
            return PaymentReadFailure(
                code: .presentAgain,
                reason: "the card asks to be presented again (e.g. unlock the phone), then tap \(place)"
            )
        case .endApplication where outcome.isCardNotSupported:
            return PaymentReadFailure(code: .cardNotSupported, reason: "\(outcome.reason) \(place)")
        case .endApplication, .selectNext:
            return PaymentReadFailure(
                code: .ended,
                reason: "\(outcome.reason); tap again or use another card \(place)"
            )
        }
    }
}
