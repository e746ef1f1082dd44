internal import EMVCommon
internal import ProximaCore

// The two shapes the kernels after Kernels 2 and 3 take, and the terminal data each needs in its PDOL:
//
// - cryptogram from GENERATE AC (Kernel 4 American Express, Kernel 5 JCB): GPO gives AIP and AFL, the records
//   give CDOL1 and the CVM List, GENERATE AC gives the cryptogram, with CDA when both sides support it — the shape of
//   Kernel 2 (Steps/Kernel2MChip.swift), Book 3 §10 and §9.3;
// - cryptogram from GET PROCESSING OPTIONS (Kernel 6 Discover D-PAS, Kernel 7 UnionPay qUICS): the GPO answer
//   (format 2) carries the cryptogram, the records the rest, fDDA authenticates an offline approval — the shape of
//   Kernel 3 (Steps/Kernel3QuickVSDC.swift).

extension PaymentSession {
    /// Puts the kernel's own terminal data objects where a PDOL or CDOL1 can ask for them (before GPO).
    mutating func addKernelTerminalData(for kernel: EMVKernel) {
        switch kernel {
        case .americanExpress: terminalData[0x9F6E] = expressPayReaderCapabilities()
        case .jcb:
            terminalData[0x9F52] = [JCBKernel.terminalCompatibilityIndicator]
            terminalData[0x9F53] = jcbTerminalInterchangeProfile()
        default: break
        }
    }

    /// Kernels 4 and 5 after the records: terminal risk management, CVM by list, terminal action analysis, then
    /// GENERATE AC for the cryptogram it chose, with CDA when supported (a TC approves offline only when CDA
    /// succeeds).
    mutating func cryptogramFromGenerateAC(_ input: KernelImplementation.Input, card: inout CardDataStore)
        async throws -> KernelImplementation.Ending
    {
        let cdol1 = try cardRiskManagementDOL(card)
        terminalRiskManagement(input.candidate, card: card)
        let cvm = try cardholderVerificationByList(options: input.options, card: card)
        switch try await generateACWithCombinedAuthentication(
            input.candidate,
            dol: cdol1,
            card: &card,
            aip: input.options.applicationInterchangeProfile
        ) {
        case .refused(let status):
            return .ended(.endApplication, .cardStatus(step: Self.generateACStep, status: status))
        case .answered(let answer, let oda, let onlineIfFailed):
            return .completed(
                KernelResult(
                    type: answer.cryptogramType,
                    cvm: cvm,
                    offlineAuthentication: oda,
                    onlineIfOfflineAuthenticationFails: onlineIfFailed
                )
            )
        }
    }

    /// Kernels 6 and 7.
    mutating func cryptogramFromProcessingOptions(
        _ application: EMVApplication,
        options: ProcessingOptions,
        card: CardDataStore
    ) throws -> KernelResult {
        switch application.kernel {
        case .discover: try dPAS(application, options: options, card: card)
        default: try qUICS(application, options: options, card: card)
        }
    }

    /// Kernels 6 and 7 after the records: the cryptogram GET PROCESSING OPTIONS returned, the CVM from the card's
    /// qualifiers (`qualifiers`, CTQ-like) and the TTQ, and fDDA for an offline approval; qualifiers byte 1 b6 ("go
    /// online if ODA fails") sends a failed one online when the reader can go online.
    mutating func cryptogramFromProcessingOptions(
        _ application: EMVApplication,
        options: ProcessingOptions,
        card: CardDataStore,
        qualifiers tag: TLVTag,
        _ kernelName: String
    ) throws -> KernelResult {
        let type = try processingOptionsCryptogram(card, kernelName: kernelName)
        let qualifiers = card[tag]
        let (cvm, results) = QualifiersCVM.evaluate(ctq: qualifiers, ttq: terminalData[0x9F66] ?? [])
        terminalData[0x9F34] = results
        if cvm == .failed { setTVR(byte: 2, setting: 0x80) }
        let goOnline = (qualifiers?.first ?? 0) & 0x20 != 0 && readerIsOnlineCapable
        var result = KernelResult(type: type, cvm: cvm, onlineIfOfflineAuthenticationFails: goOnline)
        if type == .tc {
            result.offlineAuthentication = fastDynamicAuthentication(
                application: application,
                card: card,
                staticData: staticDataToAuthenticate,
                aip: options.applicationInterchangeProfile
            )
        }
        return result
    }

    /// CDOL1 (`8C`) of the card, parsed; its absence or a bad list fails the read at the step that gave it.
    func cardRiskManagementDOL(_ card: CardDataStore) throws -> DataObjectList {
        guard let bytes = card[0x8C] else { throw CardAnswer.failure(Self.generateACStep, "card has no CDOL1 (8C)") }
        do {
            return try DataObjectList(bytes: bytes, maximumTotalLength: 252)
        } catch let error as ProximaError {
            throw CardAnswer.failure(card.source(of: 0x8C), "CDOL1 (8C): \(error.reason)")
        }
    }

    /// Cardholder verification by the CVM List (EMV Book 3 §10.5) at or above the reader CVM required limit when
    /// the AIP says the card supports cardholder verification; below it, or without a limit, no CVM (the
    /// contactless rule of Books C-4 and C-5). Records CVM Results (`9F34`) and the TVR bits it sets.
    mutating func cardholderVerificationByList(options: ProcessingOptions, card: CardDataStore) throws
        -> CardholderVerification
    {
        let amount = transaction.amountAuthorised
        var cvm = CardholderVerification.noCVM
        var results: [UInt8] = [0x3F, 0x00, 0x00]
        if let limit = settings.cvmRequiredLimit, amount >= limit {
            if options.supportsCardholderVerification, let listBytes = card[0x8E] {
                let list = try CVMList(bytes: listBytes, step: card.source(of: 0x8E))
                let context = CVMList.Context(
                    amount: amount,
                    type: transaction.type,
                    inApplicationCurrency: card[0x9F42] == terminalData[0x5F2A],
                    supportsOnlinePIN: settings.supportsOnlinePIN,
                    supportsSignature: settings.supportsSignature,
                    supportsNoCVM: settings.supportsNoCVM
                )
                (cvm, results) = list.evaluate(context)
            } else if options.supportsCardholderVerification {
                setTVR(byte: 0, setting: 0x20)  // ICC data missing
                (cvm, results) = (.failed, [0x3F, 0x00, 0x01])
            } else {
                (cvm, results) = (.failed, [0x3F, 0x00, 0x01])
            }
        }
        if cvm == .failed { setTVR(byte: 2, setting: 0x80) }  // cardholder verification was not successful
        terminalData[0x9F34] = results
        return cvm
    }

    /// The checks of a cryptogram returned with GPO (Book 3 §6.5.8.4 format 2): `9F26` (8), `9F36` (2), `9F10`
    /// (1–32) present, and the type from `9F27`.
    func processingOptionsCryptogram(_ card: CardDataStore, kernelName: String) throws -> CryptogramType {
        let step = Self.processingOptionsStep
        func required(_ tag: TLVTag, _ name: String, count: ClosedRange<Int>) throws {
            guard let value = card[tag] else {
                throw CardAnswer.failure(step, "\(kernelName) card returned no \(name) (\(tag))")
            }
            guard count.contains(value.count) else {
                throw CardAnswer.failure(
                    card.source(of: tag),
                    "\(name) (\(tag)) has \(value.count) bytes, expected \(count.lowerBound)-\(count.upperBound)"
                )
            }
        }
        try required(0x9F26, "Application Cryptogram", count: 8...8)
        try required(0x9F36, "ATC", count: 2...2)
        try required(0x9F10, "Issuer Application Data", count: 1...32)
        try required(0x9F27, "Cryptogram Information Data", count: 1...1)
        guard let cid = card[0x9F27]?.first, let type = CryptogramType(cryptogramInformationData: cid) else {
            throw CardAnswer.failure(card.source(of: 0x9F27), "CID (9F27) names no cryptogram type")
        }
        return type
    }

    /// Whether the reader can go online: TTQ byte 1 bit 4 "offline-only reader" clear (Book C-3 Table 5-4).
    var readerIsOnlineCapable: Bool {
        guard let ttq = terminalData[0x9F66], !ttq.isEmpty else { return true }
        return ttq[0] & 0x08 == 0
    }
}
