internal import EMVCommon
internal import ProximaCore

extension PaymentDirectory {
    /// The Candidate List (EMV Book B §3.3.2.5 and §3.3.3.2): each entry whose AID the terminal supports with the
    /// kernel the card asks for (a requested kernel of `00` accepts the terminal's), sorted by priority (1 first,
    /// absent or 0 last), ties in directory order; entries matching `preferred` move ahead of the rest.
    ///
    /// - Returns: the candidates, and the entries no supported kernel can run (for a "card not supported" reason).
    func candidates(
        supported: [TerminalApplication],
        preferred: [UInt8]?
    ) -> (candidates: [EMVApplication], unsupported: [EMVApplication]) {
        var matched: [(entry: Entry, application: EMVApplication)] = []
        var unsupported: [EMVApplication] = []
        for entry in entries {
            let request = Self.requestedKernel(for: entry)
            if request == .skip { continue }
            let combination = supported.first { combination in
                guard entry.applicationIdentifier.starts(with: combination.identifier),
                    EMVKernel.implemented.contains(combination.kernel)
                else { return false }
                return request == .any || request == .kernel(combination.kernel)
            }
            var requestedKernel = EMVKernel(identifier: [0x00])
            if case .kernel(let kernel) = request { requestedKernel = kernel }
            let application = EMVApplication(
                identifier: entry.applicationIdentifier,
                label: entry.label,
                priority: entry.priority,
                kernel: combination?.kernel ?? requestedKernel
            )
            if combination != nil {
                matched.append((entry, application))
            } else {
                unsupported.append(application)
            }
        }
        let sorted = matched.sorted { a, b in
            let preferA = preferred.map { a.entry.applicationIdentifier.starts(with: $0) } ?? false
            let preferB = preferred.map { b.entry.applicationIdentifier.starts(with: $0) } ?? false
            if preferA != preferB { return preferA }
            return a.entry.precedes(b.entry)
        }
        return (sorted.map(\.application), unsupported)
    }
}

extension PaymentSession {
    mutating func run() async throws -> EMVOutcome {
        let step = "SELECT PPSE"
        let ppse = try await transceive(try Self.select(PaymentDirectory.name), step: step)
        guard ppse.status == .success else {
            return EMVOutcome(status: .endApplication, reason: .noPaymentDirectory(ppse.status))
        }
        let directory = try PaymentDirectory(fci: ppse.data)
        var (candidates, unsupported) = directory.candidates(
            supported: settings.supportedApplications,
            preferred: transaction.preferredApplication
        )
        while !candidates.isEmpty {
            let application = candidates.removeFirst()
            let selectStep = "SELECT \(application.identifier.hexString)"
            try checkCancellation(before: selectStep)
            let response = try await transceive(try Self.select(application.identifier), step: selectStep)
            guard response.status == .success else {
                remove(application, step: selectStep, problem: "status \(response.status)")
                continue
            }
            let fci: ApplicationFCI
            do {
                fci = try ApplicationFCI(response.data, selected: application.identifier, step: selectStep)
            } catch let error as PaymentError {
                remove(application, step: selectStep, problem: error.reason)
                continue
            }
            if application.kernel == .visa && !fci.requestsTerminalTransactionQualifiers {
                remove(
                    application,
                    step: selectStep,
                    problem:
                        "PDOL does not ask for TTQ (9F66): the card needs Kernel 1, which this terminal does not run"
                )
                continue
            }
            onEvent(.applicationSelected(application), context)
            if var outcome = try await process(application, fci: fci) {
                outcome.attempts = attempts
                if outcome.cvm == .onlinePIN && outcome.status == .onlineRequest {
                    onEvent(.pinEntryRequested, context)
                }
                return outcome
            }
        }
        return EMVOutcome(
            status: .endApplication,
            reason: .noSupportedApplication(unsupported: unsupported),
            attempts: attempts
        )
    }

    /// Book B §3.3.3.5: the candidate leaves the list; Entry Point goes on with the next.
    mutating func remove(_ application: EMVApplication, step: String, problem: String) {
        attempts.append(EMVOutcome.CandidateAttempt(application: application, step: step, problem: problem))
    }
}
