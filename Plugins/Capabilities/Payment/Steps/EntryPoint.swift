internal import EMVCommon
internal import ProximaCore

/// A candidate of the Candidate List (EMV Book B §3.3.2.5): the card's application, the combination that runs it
/// and that combination's pre-processing indicators.
struct Candidate {
    var application: EMVApplication
    var combination: TerminalApplication
    var indicators: EntryPointIndicators
}

extension PaymentDirectory {
    /// The Candidate List (EMV Book B §3.3.2.5 and §3.3.3.2): each entry whose AID a configured combination
    /// matches with the kernel the card asks for (a requested kernel of `00`, or none for an RID without a
    /// default kernel, accepts the combination's), that this build implements and that pre-processing allowed;
    /// sorted by the merchant's preference (`preferred`, most preferred first), then by the card's priority (1
    /// first, absent or 0 last), ties in directory order.
    ///
    /// - Returns: the candidates; the entries no combination may run, each with why (for "card not supported").
    func candidates(
        combinations: [(TerminalApplication, EntryPointIndicators)],
        preferred: [[UInt8]]
    ) -> (candidates: [Candidate], unsupported: [EMVOutcome.CandidateAttempt]) {
        let step = "combination selection"
        var matched: [(entry: Entry, candidate: Candidate)] = []
        var unsupported: [EMVOutcome.CandidateAttempt] = []
        for entry in entries {
            let aid = entry.applicationIdentifier
            let request = Self.requestedKernel(for: entry)
            var requestedKernel = EMVKernel(identifier: [0x00])
            if case .kernel(let kernel) = request { requestedKernel = kernel }
            func application(_ kernel: EMVKernel) -> EMVApplication {
                EMVApplication(identifier: aid, label: entry.label, priority: entry.priority, kernel: kernel)
            }
            func refuse(_ problem: String) {
                unsupported.append(.init(application: application(requestedKernel), step: step, problem: problem))
            }
            if request == .skip {
                refuse("its Kernel Identifier (9F2A) is an extended kernel ID shorter than 3 bytes (Book B §3.3.2.5)")
                continue
            }
            let sameAID = combinations.filter { $0.0.matches(aid) }
            guard !sameAID.isEmpty else {
                let asks = request == .any ? "" : " (the card asks for \(requestedKernel))"
                refuse("no configured application matches this AID\(asks)")
                continue
            }
            let sameKernel = sameAID.filter { request == .any || request == .kernel($0.0.kernel) }
            guard !sameKernel.isEmpty else {
                let configured = Set(sameAID.map(\.0.kernel.description)).sorted().joined(separator: ", ")
                refuse("the card asks for \(requestedKernel); this AID is configured for \(configured)")
                continue
            }
            let implemented = sameKernel.filter { KernelImplementation.named($0.0.kernel) != nil }
            guard !implemented.isEmpty else {
                refuse("\(sameKernel[0].0.kernel) is configured for this AID but not implemented in this build")
                continue
            }
            guard let (combination, indicators) = implemented.first(where: { !$0.1.contactlessApplicationNotAllowed })
            else {
                let (combination, indicators) = implemented[0]
                unsupported.append(
                    .init(
                        application: application(combination.kernel),
                        step: "pre-processing",
                        problem: "contactless not allowed for this amount (\(indicators))"
                    )
                )
                continue
            }
            matched.append(
                (
                    entry,
                    Candidate(
                        application: application(combination.kernel),
                        combination: combination,
                        indicators: indicators
                    )
                )
            )
        }
        func rank(_ aid: [UInt8]) -> Int { preferred.firstIndex { aid.starts(with: $0) } ?? Int.max }
        let sorted = matched.sorted { a, b in
            let rankA = rank(a.entry.applicationIdentifier)
            let rankB = rank(b.entry.applicationIdentifier)
            if rankA != rankB { return rankA < rankB }
            return a.entry.precedes(b.entry)
        }
        return (sorted.map(\.candidate), unsupported)
    }
}

extension PaymentSession {
    mutating func run() async throws -> EMVOutcome {
        // Book B §3.1.1: the indicators of every combination; §3.1.1.13: none allowed → Try Another Interface.
        let combinations = settings.supportedApplications.map {
            ($0, $0.preProcessing(transaction, settings: settings))
        }
        if !combinations.isEmpty, combinations.allSatisfy({ $0.1.contactlessApplicationNotAllowed }) {
            return EMVOutcome(
                status: .tryAnotherInterface,
                reason: .contactlessNotAllowed(
                    combinations.map { "\($0.0): \($0.1)" }
                )
            )
        }
        let step = "SELECT PPSE"
        let ppse = try await transceive(try Self.select(PaymentDirectory.name), step: step)
        guard ppse.status == .success else {
            return EMVOutcome(status: .endApplication, reason: .noPaymentDirectory(ppse.status))
        }
        let directory = try PaymentDirectory(fci: ppse.data)
        var (candidates, unsupported) = directory.candidates(
            combinations: combinations,
            preferred: (transaction.preferredApplication.map { [$0] } ?? []) + settings.preferredApplications
        )
        while !candidates.isEmpty {
            let candidate = candidates.removeFirst()
            let application = candidate.application
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
            if var outcome = try await process(candidate, fci: fci) {
                outcome.attempts = attempts
                if outcome.cvm == .onlinePIN && outcome.status == .onlineRequest {
                    onEvent(.pinEntryRequested, context)
                }
                return outcome
            }
        }
        return EMVOutcome(
            status: .endApplication,
            reason: .noSupportedApplication(unsupported: unsupported, tried: attempts),
            attempts: attempts
        )
    }

    /// Book B §3.3.3.5: the candidate leaves the list; Entry Point goes on with the next.
    mutating func remove(_ application: EMVApplication, step: String, problem: String) {
        attempts.append(EMVOutcome.CandidateAttempt(application: application, step: step, problem: problem))
    }
}
