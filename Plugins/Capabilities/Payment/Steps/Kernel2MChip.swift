internal import EMVCommon
internal import ProximaCore

extension PaymentSession {
    /// Kernel 2 right after GET PROCESSING OPTIONS (EMV Book C-2, GPO response processing): AIP byte 2 bit 8 says
    /// whether the card runs EMV mode. A card without it offers only mag-stripe mode, which this terminal does
    /// not implement: the transaction ends before any READ RECORD with a clear outcome, not a GENERATE AC error.
    static let mChipMode: @Sendable (KernelImplementation.Input) -> KernelImplementation.Ending? = { input in
        let aip = input.options.applicationInterchangeProfile
        guard aip.count == 2, aip[1] & 0x80 == 0 else { return nil }
        return .ended(.endApplication, .magStripeModeNotSupported(aip: aip))
    }

    /// Kernel 2 after the records: terminal risk management, CVM selection, terminal action analysis, then
    /// GENERATE AC with CDOL1 for the cryptogram it chose (a TC approves offline only when CDA succeeds).
    ///
    /// - Returns: the cryptogram type and CVM, or the status word GENERATE AC was answered with instead of `9000`.
    mutating func mChip(_ input: KernelImplementation.Input, card: inout CardDataStore) async throws
        -> KernelImplementation.Ending
    {
        let step = Self.generateACStep
        guard let cdol1Bytes = card[0x8C] else { throw CardAnswer.failure(step, "card has no CDOL1 (8C)") }
        let cdol1: DataObjectList
        do {
            cdol1 = try DataObjectList(bytes: cdol1Bytes, maximumTotalLength: 252)
        } catch let error as ProximaError {
            throw CardAnswer.failure(card.source(of: 0x8C), "CDOL1 (8C): \(error.reason)")
        }

        terminalRiskManagement(input.candidate, card: card)
        var tvr = terminalData[0x95] ?? [0x80, 0x00, 0x00, 0x00, 0x00]
        let (cvm, cvmResults) = try mChipCardholderVerification(input, card: card, tvr: &tvr)
        terminalData[0x95] = tvr
        terminalData[0x9F34] = cvmResults

        switch try await generateACWithCombinedAuthentication(
            input.candidate,
            dol: cdol1,
            card: &card,
            aip: input.options.applicationInterchangeProfile
        ) {
        // CDA that failed before GENERATE AC left an ARQC without CDA for the issuer to judge (TVR "CDA failed");
        // CDA that failed on the answer leaves no trustworthy cryptogram: declined (Book 2 §6.6.2).
        case .answered(let answer, let offlineAuthentication, let onlineIfFailed):
            return .completed(
                KernelResult(
                    type: answer.cryptogramType,
                    cvm: cvm,
                    offlineAuthentication: offlineAuthentication,
                    onlineIfOfflineAuthenticationFails: onlineIfFailed
                )
            )
        case .refused(let status): return .ended(.endApplication, .cardStatus(step: step, status: status))
        }
    }

    /// Kernel 2 CVM selection (EMV Book C-2, procedure CVM Selection; Book 3 §10.5):
    ///
    /// 1. AIP byte 1 bit 2 (on-device cardholder verification, a phone or watch): above the CVM required limit
    ///    the cardholder was verified on the device (CVM Results `01 00 02`), otherwise no CVM (`3F 00 02`).
    /// 2. AIP byte 1 bit 5 clear (cardholder verification not supported): no CVM, `3F 00 00`.
    /// 3. No or an empty CVM List (`8E`): no CVM, `3F 00 00`, TVR "ICC data missing".
    /// 4. Otherwise the CVM List by Book 3 §10.5 with the terminal's CVM capability: above the Reader CVM
    ///    Required Limit the methods of Terminal Capabilities byte 2 ("CVM Capability – CVM Required"), at or
    ///    below it "no CVM required" only ("CVM Capability – No CVM Required"). C-2 compares with "greater
    ///    than"; without a limit in the transaction currency no amount requires a CVM.
    func mChipCardholderVerification(
        _ input: KernelImplementation.Input,
        card: CardDataStore,
        tvr: inout [UInt8]
    ) throws -> (CardholderVerification, [UInt8]) {
        let aip = input.options.applicationInterchangeProfile
        let amount = transaction.amountAuthorised
        let aboveLimit = input.candidate.indicators.limits.cvmRequired.map { amount > $0 } ?? false
        if aip[0] & 0x02 != 0 {
            return aboveLimit ? (.consumerDevice, [0x01, 0x00, 0x02]) : (.noCVM, [0x3F, 0x00, 0x02])
        }
        guard input.options.supportsCardholderVerification else { return (.noCVM, [0x3F, 0x00, 0x00]) }
        guard let listBytes = card[0x8E], listBytes.count > 8 else {
            tvr[0] |= 0x20  // ICC data missing
            return (.noCVM, [0x3F, 0x00, 0x00])
        }
        let list = try CVMList(bytes: listBytes, step: card.source(of: 0x8E))
        let context = CVMList.Context(
            amount: amount,
            type: transaction.type,
            inApplicationCurrency: card[0x9F42] == terminalData[0x5F2A],
            supportsOnlinePIN: aboveLimit && settings.supportsOnlinePIN,
            supportsSignature: aboveLimit && settings.supportsSignature,
            supportsNoCVM: !aboveLimit || settings.supportsNoCVM
        )
        let (cvm, results) = list.evaluate(context)
        if cvm == .failed {
            tvr[2] |= 0x80  // cardholder verification was not successful
            if let rule = list.rules.first(where: { !CVMList.knownCodes.contains($0.code) }), results[0] == rule.method
            {
                tvr[2] |= 0x40  // unrecognised CVM
            }
        }
        if cvm == .onlinePIN { tvr[2] |= 0x04 }  // online PIN entered
        return (cvm, results)
    }
}
