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
            run: { session, input, card in try session.quickVSDC(input, card: card) }
        ),
    ]

    /// The row of `kernel`, or `nil` when this build does not implement it.
    static func named(_ kernel: EMVKernel) -> KernelImplementation? { all.first { $0.kernel == kernel } }

    /// The Kernel IDs this build implements.
    static var implementedKernels: [EMVKernel] { all.map(\.kernel) }
}
