internal import EMVCommon
package import ProximaCore

/// The terminal side of an EMV contactless transaction over a `CardChannel`: Entry Point, then Kernel 3 (Visa
/// qVSDC) or Kernel 2 (Mastercard M/Chip), ending in an EMV Book A outcome with the data a processor needs.
///
/// The flow, with the sections it follows (EMV Contactless Books A–C, EMV 4.x Books 1–4):
///
/// 1. **Pre-processing** (Book B §3.1.1): per combination (``TerminalApplication``, the manifest's
///    `applications`) the indicators and TTQ copy (``EntryPointIndicators``) from its limits in the transaction
///    currency: status check, zero amount, contactless transaction limit (at or above: not allowed), floor limit
///    (above: online cryptogram), CVM required limit (at or above: CVM required). No combination allowed → Try
///    Another Interface (§3.1.1.13), before any command.
/// 2. **Combination selection** (Book B §3.3.2): SELECT `2PAY.SYS.DDF01`. Any status but `9000` leaves the
///    Candidate List empty (§3.3.2.3), which ends the application with "insert, swipe or try another card"
///    (§3.3.2.7): outcome End Application, reason ``EMVOutcome/Reason/noPaymentDirectory(_:)``. Otherwise the
///    directory entries (`61`: `4F`, `50`, `87`, `9F2A`) become candidates when a combination allowed by
///    pre-processing matches the AID with the requested kernel and this build implements the kernel
///    (``KernelImplementation``, §3.3.2.5), sorted by the merchant's `preferredAIDs`, then priority (§3.3.3.2). A `9000`
///    answer whose FCI is malformed fails the read (`cardReadFailed`, step `SELECT PPSE`). An AID whose
///    kernel this terminal does not run (American Express, Discover, JCB, UnionPay …) is no candidate; a card
///    with nothing else ends with ``EMVOutcome/Reason/noSupportedApplication(unsupported:tried:)``.
/// 3. **Final selection** (Book B §3.3.3): SELECT the AID. A status other than `9000` (`6A82`, `6A81`, `6283` …)
///    or a malformed FCI removes the candidate and selects the next one (§3.3.3.5); so does a Visa AID whose PDOL
///    lacks `9F66`, since that card wants Kernel 1 (§3.3.3.6).
/// 4. **Initiate application processing** (Book 3 §10.1, §6.5.8; C-2/C-3): the PDOL (`9F38`) filled from the
///    transaction and terminal data by Book 3 §5.4 (unknown tags zero-filled) and sent in GET PROCESSING OPTIONS
///    `80 A8 00 00 Lc 83 L data 00`. Status words map as Book C-3 §5.2.2.2 does: `6984` Try Another Interface,
///    `6985` Select Next (back to step 3), `6986` Try Again, others End Application. The answer is format 1 (`80`)
///    or 2 (`77`).
/// 5. **Read application data** (Book 3 §10.2): READ RECORD for every record of the AFL (`94`); records flagged
///    for offline data authentication are collected (§10.3). An answer without AFL reads nothing. Any READ RECORD
///    status but `9000`, a malformed record or a redundant data object ends the read (`cardReadFailed`).
/// 6. **Kernel 3 (qVSDC)**: the cryptogram (`9F26`, `9F27`, `9F36`, `9F10`) came with GPO; CVM from CTQ (`9F6C`)
///    and the combination's TTQ (Book C-3 §5.7).
///    **Kernel 2 (M/Chip)**: a card without EMV mode (AIP byte 2 bit 8) ends with "mag-stripe mode not supported"
///    right after GPO; CVM selection (Book C-2) with the CVM List (`8E`, Book 3 §10.5) and the CVM capability of
///    the CVM required limit, then
///    GENERATE AC `80 AE 80 00` asking for an ARQC with CDOL1 (`8C`) filled (Book 3 §6.5.5, §9.3). No CDA is
///    requested: this terminal performs no offline data authentication and says so in the TVR.
/// 7. **Outcome** (Book A §6.2): ARQC → Online Request, TC → Approved, AAC → Declined; ``EMVOutcome/cardData``
///    holds the processor tags.
///
/// Events (application selected, card read completed, PIN entry requested) go to ``onEvent`` with the tap's
/// context so the API layer can route them to the session of the lane.
package struct EMVPaymentCapability: Capability {
    package typealias Request = EMVTransaction
    package typealias Output = EMVOutcome

    package let identifier: CapabilityID = "payment.emv"
    package var settings: TerminalSettings
    /// Where `9F37` comes from; the OS CSPRNG unless a test injects one.
    package var unpredictableNumbers: UnpredictableNumberSource
    /// Called during a read; must return quickly (it runs between two APDUs).
    package var onEvent: @Sendable (EMVPaymentEvent, TapContext) -> Void
    /// The CA public keys for offline data authentication (fDDA, CDA); with none, an offline approval is never
    /// reported approved.
    package var certificationAuthorities: CertificationAuthorityKeys

    /// The most READ RECORD commands one transaction sends; a card whose AFL asks for more is refused.
    package static let maximumRecordCount = 64

    package init(
        settings: TerminalSettings = TerminalSettings(),
        unpredictableNumbers: UnpredictableNumberSource = .system,
        certificationAuthorities: CertificationAuthorityKeys = .none,
        onEvent: @escaping @Sendable (EMVPaymentEvent, TapContext) -> Void = { _, _ in }
    ) {
        self.settings = settings
        self.unpredictableNumbers = unpredictableNumbers
        self.certificationAuthorities = certificationAuthorities
        self.onEvent = onEvent
    }

    package var requirements: CapabilityRequirements {
        CapabilityRequirements(
            applicationIdentifiers: settings.supportedApplications.map(\.identifier),
            technologies: [.iso14443A, .iso14443B]
        )
    }

    /// Runs one transaction on the card in `channel`.
    ///
    /// - Returns: the outcome. Declines, "card not supported", "try another interface" and "try again" are
    ///   outcomes, not errors.
    /// - Throws: ``PaymentError`` with ``PaymentError/Code/cardReadFailed`` when the card's answers cannot be
    ///   used (naming the step), ``PaymentError/Code/invalidTransaction`` when `request` does not fit EMV data;
    ///   `ProximaError` from the channel (`cardRemoved`, `cardTimeout`, `readerVanished`, `cancelled`, …), its
    ///   reason prefixed with the step.
    package func run(_ request: EMVTransaction, on channel: any CardChannel, context: TapContext) async throws
        -> EMVOutcome
    {
        do {
            var session = try PaymentSession(
                transaction: request,
                settings: settings,
                unpredictableNumber: unpredictableNumbers.next(),
                certificationAuthorities: certificationAuthorities,
                channel: channel,
                context: context,
                onEvent: onEvent
            )
            return try await session.run()
        } catch let error as PaymentError {
            throw error.at(reader: channel.reader)
        }
    }
}

/// One transaction's state: terminal data, the candidates removed, the card data collected.
struct PaymentSession {
    let transaction: EMVTransaction
    let settings: TerminalSettings
    let channel: any CardChannel
    let context: TapContext
    let onEvent: @Sendable (EMVPaymentEvent, TapContext) -> Void
    /// The terminal's data objects for DOLs and for the processor.
    var terminalData: [TLVTag: [UInt8]]
    var attempts: [EMVOutcome.CandidateAttempt] = []
    /// The candidate the kernel runs, once final selection chose one.
    var selected: Candidate?
    let certificationAuthorities: CertificationAuthorityKeys
    /// The PDOL-related data sent in GET PROCESSING OPTIONS (CDA hashes it).
    var processingOptionsData: [UInt8] = []
    /// The records flagged for offline data authentication (Book 3 §10.3), without the AIP.
    var staticDataToAuthenticate: [UInt8] = []

    static let transceiveOptions = TransceiveOptions(maximumResponseLength: 4096, maximumGetResponseCount: 16)
    static let processingOptionsStep = "GET PROCESSING OPTIONS"
    static let generateACStep = "GENERATE AC"

    init(
        transaction: EMVTransaction,
        settings: TerminalSettings,
        unpredictableNumber: [UInt8],
        certificationAuthorities: CertificationAuthorityKeys = .none,
        channel: any CardChannel,
        context: TapContext,
        onEvent: @escaping @Sendable (EMVPaymentEvent, TapContext) -> Void
    ) throws {
        self.transaction = transaction
        self.settings = settings
        self.certificationAuthorities = certificationAuthorities
        self.channel = channel
        self.context = context
        self.onEvent = onEvent
        terminalData = try Self.terminalData(
            for: transaction,
            settings: settings,
            unpredictableNumber: unpredictableNumber
        )
    }

    // MARK: Exchanges

    static func select(_ name: [UInt8]) throws -> CommandAPDU {
        try CommandAPDU(cla: 0x00, ins: 0xA4, p1: 0x04, p2: 0x00, data: name, expectedLength: 256)
    }

    /// `channel.transceive` with the step named in every error: a GET RESPONSE chain the card never ends becomes
    /// `cardReadFailed`; transport errors keep their code.
    func transceive(_ command: CommandAPDU, step: String) async throws -> ResponseAPDU {
        do {
            return try await channel.transceive(command, options: Self.transceiveOptions)
        } catch let error as ProximaError {
            if error.code == .malformedData {
                throw PaymentError(.cardReadFailed, step: step, error.reason, reader: channel.reader)
            }
            throw ProximaError(
                error.code,
                "\(step): \(error.reason)",
                reader: error.reader ?? channel.reader,
                lane: error.lane ?? context.lane
            )
        }
    }

    func checkCancellation(before step: String) throws {
        guard Task.isCancelled else { return }
        throw ProximaError(.cancelled, "cancelled before \(step)", reader: channel.reader, lane: context.lane)
    }
}
