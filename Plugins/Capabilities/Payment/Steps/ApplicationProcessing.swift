internal import EMVCommon
internal import ProximaCore

extension PaymentSession {
    /// Runs the candidate's kernel (``KernelImplementation``) on the selected application: GET PROCESSING OPTIONS
    /// with the combination's TTQ, READ RECORD, then the kernel's own steps.
    ///
    /// - Returns: the final outcome, or `nil` for Select Next (the attempt is recorded).
    mutating func process(_ candidate: Candidate, fci: ApplicationFCI) async throws -> EMVOutcome? {
        let application = candidate.application
        let gpoStep = Self.processingOptionsStep
        guard let implementation = KernelImplementation.named(application.kernel) else {
            remove(application, step: gpoStep, problem: "\(application.kernel) is not implemented")
            return nil
        }
        selected = candidate
        terminalData[0x9F66] = candidate.indicators.terminalTransactionQualifiers
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
        let input = KernelImplementation.Input(candidate: candidate, fci: fci, options: options)
        if case .ended(let status, let reason)? = implementation.afterProcessingOptions(input) {
            return EMVOutcome(status: status, reason: reason, application: application)
        }
        var card = CardDataStore()
        try card.add(options.dataObjects, step: gpoStep)
        let oda = try await readRecords(options.applicationFileLocator, into: &card)
        staticDataToAuthenticate = oda
        var offlineAuthenticationData = oda
        if card[0x9F4A] == [0x82] { offlineAuthenticationData += options.applicationInterchangeProfile }

        switch try await implementation.run(&self, input, &card) {
        case .completed(let result):
            onEvent(.cardReadCompleted, context)
            return try outcome(
                of: result,
                application: application,
                fci: fci,
                options: options,
                card: card,
                offlineAuthenticationData: offlineAuthenticationData
            )
        case .ended(let status, let reason):
            return EMVOutcome(status: status, reason: reason, application: application)
        }
    }
}
