internal import EMVCommon
internal import ProximaCore

extension PaymentSession {
    /// Runs the kernel on the selected application.
    ///
    /// - Returns: the final outcome, or `nil` for Select Next (the attempt is recorded).
    mutating func process(_ application: EMVApplication, fci: ApplicationFCI) async throws -> EMVOutcome? {
        let gpoStep = Self.processingOptionsStep
        try checkCancellation(before: gpoStep)
        addKernelTerminalData(for: application.kernel)
        let pdolData = fci.processingOptionsDOL?.fill(with: terminalData) ?? []
        processingOptionsData = pdolData
        let gpo = try CommandAPDU(
            cla: 0x80,
            ins: 0xA8,
            p1: 0x00,
            p2: 0x00,
            data: TLV(tag: 0x83, value: pdolData).bytes,
            expectedLength: 256
        )
        let response = try await transceive(gpo, step: gpoStep)
        if let status = EMVOutcome.Status.processingOptions(response.status) {
            if status == .selectNext {
                remove(application, step: gpoStep, problem: "status \(response.status): select next")
                return nil
            }
            return EMVOutcome(
                status: status,
                reason: .cardStatus(step: gpoStep, status: response.status),
                application: application
            )
        }
        let options = try ProcessingOptions(responseData: response.data)
        var card = CardDataStore()
        try card.add(options.dataObjects, step: gpoStep)
        let oda = try await readRecords(options.applicationFileLocator, into: &card)
        staticDataToAuthenticate = oda
        var offlineAuthenticationData = oda
        if card[0x9F4A] == [0x82] { offlineAuthenticationData += options.applicationInterchangeProfile }

        let result: KernelResult
        switch application.kernel {
        case .visa:
            onEvent(.cardReadCompleted, context)
            result = authenticatedOffline(
                try quickVSDC(card: card),
                application: application,
                card: card,
                options: options
            )
        case .discover, .unionPay:
            onEvent(.cardReadCompleted, context)
            result = try cryptogramFromProcessingOptions(application, options: options, card: card)
        case .mastercard, .americanExpress, .jcb:
            let answer =
                application.kernel == .mastercard
                ? try await mChip(application, options: options, card: &card)
                : try await cryptogramFromGenerateAC(application, options: options, card: &card)
            switch answer {
            case .completed(let mChipResult):
                onEvent(.cardReadCompleted, context)
                result = mChipResult
            case .ended(let status):
                return EMVOutcome(
                    status: .endApplication,
                    reason: .cardStatus(step: Self.generateACStep, status: status),
                    application: application
                )
            }
        default:
            remove(application, step: gpoStep, problem: "\(application.kernel) is not implemented")
            return nil
        }
        return try outcome(
            of: result,
            application: application,
            fci: fci,
            options: options,
            card: card,
            offlineAuthenticationData: offlineAuthenticationData
        )
    }
}
