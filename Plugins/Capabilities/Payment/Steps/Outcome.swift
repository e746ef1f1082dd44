internal import EMVCommon
internal import ProximaCore

extension PaymentSession {
    /// The Book A outcome of a kernel's result, with the processor's data objects (EMV Book A §6.2).
    func outcome(
        of result: KernelResult,
        application: EMVApplication,
        fci: ApplicationFCI,
        options: ProcessingOptions,
        card: CardDataStore,
        offlineAuthenticationData: [UInt8]
    ) throws -> EMVOutcome {
        let identity = try MaskedCardIdentity(card: card)
        var tags = [TLVTag: [UInt8]](minimumCapacity: EMVCardData.processorTags.count + 2)
        for tag in EMVCardData.processorTags {
            if Self.terminalTags.contains(tag) {
                tags[tag] = terminalData[tag]
            } else {
                tags[tag] = card[tag]
            }
        }
        if ![.visa, .discover, .unionPay].contains(application.kernel) { tags[0x9F66] = nil }
        if application.kernel == .americanExpress { tags[0x9F6E] = terminalData[0x9F6E] }
        tags[0x82] = options.applicationInterchangeProfile
        tags[0x84] = fci.dedicatedFileName
        var status: EMVOutcome.Status =
            switch result.type {
            case .arqc: .onlineRequest
            case .tc: .approved
            case .aac: .declined
            }
        var reason = EMVOutcome.Reason.cryptogram(result.type)
        // An offline approval needs a successful ODA; a failed ODA declines unless the kernel may go online.
        if result.type != .aac {
            switch result.offlineAuthentication {
            case .failed(let failure):
                status = result.onlineIfOfflineAuthenticationFails ? .onlineRequest : .declined
                reason = .offlineDataAuthenticationFailed(failure.description)
            case .notPerformed where result.type == .tc:
                status = .declined
                reason = .offlineDataAuthenticationFailed("not performed for an offline approval (TC)")
            default: break
            }
        }
        var outcome = EMVOutcome(
            status: status,
            reason: reason,
            application: application,
            cvm: result.cvm,
            cryptogramType: result.type,
            lastFourDigits: identity.lastFourDigits,
            expiry: identity.expiry,
            cardData: EMVCardData(
                tags: tags,
                offlineAuthenticationData: offlineAuthenticationData,
                offlineAuthenticationRecordCount: options.applicationFileLocator.offlineAuthenticationRecordCount
            )
        )
        outcome.effectiveDate = card[0x5F25].flatMap { CardEffectiveDate(bcd: $0) }
        return outcome
    }

    /// Tags whose value is the terminal's, never the card's.
    static let terminalTags: Set<TLVTag> = [
        0x9F37, 0x95, 0x9A, 0x9C, 0x9F02, 0x9F03, 0x5F2A, 0x9F1A, 0x9F33, 0x9F34, 0x9F35, 0x9F40, 0x9F66, 0x9F21,
        0x5F36,
    ]
}
