internal import EMVCommon
internal import ProximaCore

/// The kernels this capability runs, one row per EMVCo Kernel ID (EMV Book B §3.3.2.5 C, Book A Table 5-2): the
/// scheme AIDs it takes when the manifest lists no `applications`, and the steps it runs after Entry Point. A
/// new kernel is a new row (and its step files); Entry Point, the settings' validation and the defaults follow.
struct KernelImplementation: Sendable {
    /// What a kernel returns after GET PROCESSING OPTIONS and READ RECORD.
    enum Ending {
        /// A cryptogram: the outcome follows from its type.
        case completed(PaymentSession.KernelResult)
        /// The transaction ends here without one (a status word, a mode this terminal does not run).
        case ended(EMVOutcome.Status, EMVOutcome.Reason)
    }

    /// What the kernel knows when it takes over.
    struct Input {
        var candidate: Candidate
        var fci: ApplicationFCI
        var options: ProcessingOptions
    }

    var kernel: EMVKernel
    /// The AIDs (or RID prefixes) of the kernel's scheme, accepted when `capabilities.payment.applications` is
    /// absent.
    var defaultApplications: [TerminalApplication]
    /// Called right after GET PROCESSING OPTIONS, before any READ RECORD: a non-`nil` ending stops the
    /// transaction (Kernel 2: a card without EMV mode).
    var afterProcessingOptions: @Sendable (Input) -> Ending? = { _ in nil }
    /// The kernel's own steps after the records are read.
    var run: @Sendable (inout PaymentSession, Input, inout CardDataStore) async throws -> Ending

    /// Every kernel this build implements, by Kernel ID.
    static let all: [KernelImplementation] = [
        KernelImplementation(
            kernel: .mastercard,
            defaultApplications: [TerminalApplication(identifier: PaymentBrand.mastercardRID, kernel: .mastercard)],
            afterProcessingOptions: PaymentSession.mChipMode,
            run: { session, input, card in try await session.mChip(input, card: &card) }
        ),
        KernelImplementation(
            kernel: .visa,
            defaultApplications: [TerminalApplication(identifier: PaymentBrand.visaRID, kernel: .visa)],
            run: { session, input, card in
                session.withOfflineAuthentication(try session.quickVSDC(input, card: card), input, card: card)
            }
        ),
        KernelImplementation(
            kernel: .americanExpress,
            defaultApplications: [
                TerminalApplication(identifier: [0xA0, 0x00, 0x00, 0x00, 0x25], kernel: .americanExpress)
            ],
            run: { session, input, card in
                try await session.cryptogramFromGenerateAC(input, card: &card)
            }
        ),
        KernelImplementation(
            kernel: .jcb,
            defaultApplications: [TerminalApplication(identifier: [0xA0, 0x00, 0x00, 0x00, 0x65], kernel: .jcb)],
            run: { session, input, card in
                try await session.cryptogramFromGenerateAC(input, card: &card)
            }
        ),
        KernelImplementation(
            kernel: .discover,
            defaultApplications: [
                TerminalApplication(identifier: [0xA0, 0x00, 0x00, 0x01, 0x52], kernel: .discover),
                TerminalApplication(identifier: [0xA0, 0x00, 0x00, 0x03, 0x24], kernel: .discover),
            ],
            run: { session, input, card in
                .completed(
                    try session.cryptogramFromProcessingOptions(
                        input.candidate.application,
                        options: input.options,
                        card: card
                    )
                )
            }
        ),
        KernelImplementation(
            kernel: .unionPay,
            defaultApplications: [TerminalApplication(identifier: [0xA0, 0x00, 0x00, 0x03, 0x33], kernel: .unionPay)],
            run: { session, input, card in
                .completed(
                    try session.cryptogramFromProcessingOptions(
                        input.candidate.application,
                        options: input.options,
                        card: card
                    )
                )
            }
        ),
    ]

    /// The row of `kernel`, or `nil` when this build does not implement it.
    static func named(_ kernel: EMVKernel) -> KernelImplementation? { all.first { $0.kernel == kernel } }

    /// The Kernel IDs this build implements.
    static var implementedKernels: [EMVKernel] { all.map(\.kernel) }
}

extension PaymentSession {
    /// Kernel 3's ending with fDDA applied to a completed read (an offline approval needs it).
    mutating func withOfflineAuthentication(
        _ ending: KernelImplementation.Ending,
        _ input: KernelImplementation.Input,
        card: CardDataStore
    ) -> KernelImplementation.Ending {
        guard case .completed(let result) = ending else { return ending }
        return .completed(
            authenticatedOffline(result, application: input.candidate.application, card: card, options: input.options)
        )
    }
}
