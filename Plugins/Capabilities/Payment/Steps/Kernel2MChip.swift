internal import EMVCommon
internal import ProximaCore

extension PaymentSession {
    /// Kernel 2 after the records: CVM, then GENERATE AC for an ARQC with CDOL1.
    ///
    /// - Returns: the cryptogram type and CVM, or the status word GENERATE AC was answered with instead of `9000`.
    mutating func mChip(
        _ application: EMVApplication,
        options: ProcessingOptions,
        card: inout CardDataStore
    ) async throws -> GenerateACResult {
        let step = Self.generateACStep
        guard let cdol1Bytes = card[0x8C] else { throw CardAnswer.failure(step, "card has no CDOL1 (8C)") }
        let cdol1: DataObjectList
        do {
            cdol1 = try DataObjectList(bytes: cdol1Bytes, maximumTotalLength: 252)
        } catch let error as ProximaError {
            throw CardAnswer.failure(card.source(of: 0x8C), "CDOL1 (8C): \(error.reason)")
        }

        // Cardholder verification (Book C-2; Book 3 §10.5 above the reader CVM required limit).
        var tvr: [UInt8] = [0x80, 0x00, 0x00, 0x00, 0x00]  // byte 1 bit 8: offline data authentication not performed
        let cvm: CardholderVerification
        let cvmResults: [UInt8]
        let amount = transaction.amountAuthorised
        // AIP byte 1 bit 2 (Book C-2): on-device cardholder verification supported (a phone or watch).
        let onDeviceCVM = options.applicationInterchangeProfile[0] & 0x02 != 0
        if let limit = settings.cvmRequiredLimit, amount > limit,
            options.supportsCardholderVerification || onDeviceCVM
        {
            if onDeviceCVM {
                (cvm, cvmResults) = (.consumerDevice, [0x01, 0x00, 0x02])
            } else if let listBytes = card[0x8E] {
                let list = try CVMList(bytes: listBytes, step: card.source(of: 0x8E))
                let context = CVMList.Context(
                    amount: amount,
                    type: transaction.type,
                    inApplicationCurrency: card[0x9F42] == terminalData[0x5F2A],
                    supportsOnlinePIN: settings.supportsOnlinePIN,
                    supportsSignature: settings.supportsSignature,
                    supportsNoCVM: settings.supportsNoCVM
                )
                (cvm, cvmResults) = list.evaluate(context)
            } else {
                tvr[0] |= 0x20  // ICC data missing
                (cvm, cvmResults) = (.noCVM, [0x3F, 0x00, 0x00])
            }
        } else {
            (cvm, cvmResults) = (.noCVM, [0x3F, 0x00, 0x00])
        }
        if cvm == .failed { tvr[2] |= 0x80 }  // cardholder verification was not successful
        if let expiry = card[0x5F24], expiry.count == 3, let today = terminalData[0x9A],
            expiry.lexicographicallyPrecedes(today)
        {
            tvr[1] |= 0x40  // expired application
        }
        terminalData[0x95] = tvr
        terminalData[0x9F34] = cvmResults

        let answer: GenerateACResponse
        let offlineAuthentication: OfflineAuthenticationResult
        let onlineIfFailed: Bool
        switch try await generateACWithCombinedAuthentication(
            .arqc,
            dol: cdol1,
            application: application,
            card: &card,
            aip: options.applicationInterchangeProfile
        ) {
        case .answered(let response, let result, let online):
            (answer, offlineAuthentication, onlineIfFailed) = (response, result, online)
        case .refused(let status): return .ended(status)
        }
        if answer.cryptogramType == .tc {
            throw CardAnswer.failure(step, "card returned a TC to a request for an ARQC (Book 3 §6.5.5.2: AAC or ARQC)")
        }
        // CDA that failed before GENERATE AC left an ARQC without CDA for the issuer to judge (TVR "CDA failed");
        // CDA that failed on the answer leaves no trustworthy cryptogram: declined (Book 2 §6.6.2).
        return .completed(
            KernelResult(
                type: answer.cryptogramType,
                cvm: cvm,
                offlineAuthentication: offlineAuthentication,
                onlineIfOfflineAuthenticationFails: onlineIfFailed
            )
        )
    }
}
