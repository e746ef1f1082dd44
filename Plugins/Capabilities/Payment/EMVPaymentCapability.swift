public import ProximaCore

/// The terminal side of an EMV contactless transaction over a `CardChannel`: Entry Point, then Kernel 3 (Visa
/// qVSDC) or Kernel 2 (Mastercard M/Chip), ending in an EMV Book A outcome with the data a processor needs.
///
/// The flow, with the sections it follows (EMV Contactless Books A–C, EMV 4.x Books 1–4):
///
/// 1. **Pre-processing** (Book B §3.1.1): the TTQ (`9F66`) for this transaction: "online cryptogram required"
///    for a zero amount (§3.1.1.11), "CVM required" at or above the reader CVM required limit (§3.1.1.8).
/// 2. **Combination selection** (Book B §3.3.2): SELECT `2PAY.SYS.DDF01`. Any status but `9000` leaves the
///    Candidate List empty (§3.3.2.3), which ends the application with "insert, swipe or try another card"
///    (§3.3.2.7): outcome End Application, reason ``EMVOutcome/Reason/noPaymentDirectory(_:)``. Otherwise the
///    directory entries (`61`: `4F`, `50`, `87`, `9F2A`) become candidates when the terminal supports the AID with
///    the requested kernel (§3.3.2.5), sorted by priority (§3.3.3.2); a preferred AID goes first. A `9000`
///    answer whose FCI is malformed fails the read (`cardReadFailed`, step `SELECT PPSE`). An AID whose
///    kernel this terminal does not run (American Express, Discover, JCB, UnionPay …) is no candidate; a card
///    with nothing else ends with ``EMVOutcome/Reason/noSupportedApplication(unsupported:)``.
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
///    and TTQ (Book C-3 §5.7).
///    **Kernel 2 (M/Chip)**: CVM from the CVM List (`8E`, Book 3 §10.5) above the CVM required limit, then
///    GENERATE AC `80 AE 80 00` asking for an ARQC with CDOL1 (`8C`) filled (Book 3 §6.5.5, §9.3). No CDA is
///    requested: this terminal performs no offline data authentication and says so in the TVR.
/// 7. **Outcome** (Book A §6.2): ARQC → Online Request, TC → Approved, AAC → Declined; ``EMVOutcome/cardData``
///    holds the processor tags.
///
/// Events (application selected, card read completed, PIN entry requested) go to ``onEvent`` with the tap's
/// context so the API layer can route them to the session of the lane.
public struct EMVPaymentCapability: Capability {
    public typealias Request = EMVTransaction
    public typealias Output = EMVOutcome

    public let identifier: CapabilityID = "payment.emv"
    public var settings: TerminalSettings
    /// Where `9F37` comes from; the OS CSPRNG unless a test injects one.
    public var unpredictableNumbers: UnpredictableNumberSource
    /// Called during a read; must return quickly (it runs between two APDUs).
    public var onEvent: @Sendable (EMVPaymentEvent, TapContext) -> Void

    /// The most READ RECORD commands one transaction sends; a card whose AFL asks for more is refused.
    public static let maximumRecordCount = 64

    public init(
        settings: TerminalSettings = TerminalSettings(),
        unpredictableNumbers: UnpredictableNumberSource = .system,
        onEvent: @escaping @Sendable (EMVPaymentEvent, TapContext) -> Void = { _, _ in }
    ) {
        self.settings = settings
        self.unpredictableNumbers = unpredictableNumbers
        self.onEvent = onEvent
    }

    public var requirements: CapabilityRequirements {
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
    public func run(_ request: EMVTransaction, on channel: any CardChannel, context: TapContext) async throws
        -> EMVOutcome
    {
        do {
            var session = try PaymentSession(
                transaction: request,
                settings: settings,
                unpredictableNumber: unpredictableNumbers.next(),
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

    static let transceiveOptions = TransceiveOptions(maximumResponseLength: 4096, maximumGetResponseCount: 16)
    static let processingOptionsStep = "GET PROCESSING OPTIONS"
    static let generateACStep = "GENERATE AC"

    init(
        transaction: EMVTransaction,
        settings: TerminalSettings,
        unpredictableNumber: [UInt8],
        channel: any CardChannel,
        context: TapContext,
        onEvent: @escaping @Sendable (EMVPaymentEvent, TapContext) -> Void
    ) throws {
        self.transaction = transaction
        self.settings = settings
        self.channel = channel
        self.context = context
        self.onEvent = onEvent
        terminalData = try Self.terminalData(
            for: transaction,
            settings: settings,
            unpredictableNumber: unpredictableNumber
        )
    }

    /// The terminal and transaction data objects (EMV Book 3 Annex A formats); fails when a value does not fit.
    static func terminalData(
        for transaction: EMVTransaction,
        settings: TerminalSettings,
        unpredictableNumber: [UInt8]
    ) throws -> [TLVTag: [UInt8]] {
        func numeric(_ value: Int64, digits: Int, _ name: String) throws -> [UInt8] {
            guard let bcd = BCD.numeric(value, digits: digits) else {
                throw PaymentError(
                    .invalidTransaction,
                    step: "transaction data",
                    "\(name) \(value) does not fit \(digits) decimal digits"
                )
            }
            return bcd
        }
        func ascii(_ text: String) -> [UInt8] { Array(text.utf8.filter { (0x20..<0x7F).contains($0) }) }
        guard let date = transaction.date.dateBCD, let time = transaction.date.timeBCD else {
            throw PaymentError(
                .invalidTransaction,
                step: "transaction data",
                "transaction date \(transaction.date) is not a valid date and time in 2000-2099"
            )
        }
        var data = settings.additionalData
        data[0x9F02] = try numeric(transaction.amountAuthorised, digits: 12, "Amount, Authorised")
        data[0x9F03] = try numeric(transaction.amountOther, digits: 12, "Amount, Other")
        data[0x5F2A] = try numeric(Int64(transaction.currencyCode), digits: 4, "currency code")
        data[0x5F36] = try numeric(Int64(transaction.currencyExponent), digits: 2, "currency exponent")
        data[0x9F1A] = try numeric(Int64(transaction.countryCode ?? settings.countryCode), digits: 4, "country code")
        data[0x9A] = date
        data[0x9F21] = time
        data[0x9C] = [transaction.type.rawValue]
        data[0x9F37] = unpredictableNumber
        data[0x9F35] = [settings.terminalType]
        data[0x9F33] = settings.terminalCapabilities
        data[0x9F40] = settings.additionalTerminalCapabilities
        data[0x95] = [0x00, 0x00, 0x00, 0x00, 0x00]
        data[0x9F15] = try numeric(Int64(settings.merchantCategoryCode), digits: 4, "merchant category code")
        data[0x9F1C] = ascii(settings.terminalIdentification)
        if !settings.merchantNameAndLocation.isEmpty { data[0x9F4E] = ascii(settings.merchantNameAndLocation) }
        if let merchant = settings.merchantIdentifier { data[0x9F16] = ascii(merchant) }
        // Book B §3.1.1: the configured TTQ, then "online cryptogram required" for a zero amount (§3.1.1.11) and
        // "CVM required" at or above the reader CVM required limit (§3.1.1.8).
        var ttq = DataObjectList.fitted(settings.terminalTransactionQualifiers, length: 4)
        if transaction.amountAuthorised == 0 { ttq[1] |= 0x80 }
        if let limit = settings.cvmRequiredLimit, transaction.amountAuthorised >= limit { ttq[1] |= 0x40 }
        data[0x9F66] = ttq
        return data
    }

    // MARK: Entry Point

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

    // MARK: Kernel processing

    /// Runs the kernel on the selected application.
    ///
    /// - Returns: the final outcome, or `nil` for Select Next (the attempt is recorded).
    mutating func process(_ application: EMVApplication, fci: ApplicationFCI) async throws -> EMVOutcome? {
        let gpoStep = Self.processingOptionsStep
        try checkCancellation(before: gpoStep)
        let pdolData = fci.processingOptionsDOL?.fill(with: terminalData) ?? []
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
        var offlineAuthenticationData = oda
        if card[0x9F4A] == [0x82] { offlineAuthenticationData += options.applicationInterchangeProfile }

        let result: KernelResult
        switch application.kernel {
        case .visa:
            onEvent(.cardReadCompleted, context)
            result = try quickVSDC(card: card)
        case .mastercard:
            switch try await mChip(options: options, card: &card) {
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

        let identity = try CardIdentity(card: card)
        var tags: [TLVTag: [UInt8]] = [:]
        for tag in EMVCardData.processorTags {
            if Self.terminalTags.contains(tag) {
                tags[tag] = terminalData[tag]
            } else {
                tags[tag] = card[tag]
            }
        }
        if application.kernel != .visa { tags[0x9F66] = nil }
        tags[0x82] = options.applicationInterchangeProfile
        tags[0x84] = fci.dedicatedFileName
        let status: EMVOutcome.Status =
            switch result.type {
            case .arqc: .onlineRequest
            case .tc: .approved
            case .aac: .declined
            }
        return EMVOutcome(
            status: status,
            reason: .cryptogram(result.type),
            application: application,
            cvm: result.cvm,
            cryptogramType: result.type,
            lastFourDigits: identity.lastFourDigits,
            expiry: identity.expiry,
            cardData: EMVCardData(
                tags: tags,
                offlineAuthenticationData: offlineAuthenticationData,
                offlineAuthenticationRecordCount: options.applicationFileLocator.offlineAuthenticationRecordCount
            )
        )
    }

    /// Tags whose value is the terminal's, never the card's.
    static let terminalTags: Set<TLVTag> = [
        0x9F37, 0x95, 0x9A, 0x9C, 0x9F02, 0x9F03, 0x5F2A, 0x9F1A, 0x9F33, 0x9F34, 0x9F35, 0x9F40, 0x9F66, 0x9F21,
        0x5F36,
    ]

    struct KernelResult {
        var type: CryptogramType
        var cvm: CardholderVerification
    }

    enum GenerateACResult {
        case completed(KernelResult)
        /// GENERATE AC was answered with this status, not `9000`.
        case ended(StatusWord)
    }

    /// Reads every record of the AFL (EMV Book 3 §10.2) into `card`.
    ///
    /// - Returns: the static data to be authenticated (Book 3 §10.3): flagged records of SFI 1–10 without their
    ///   `70` tag and length, flagged records of SFI 11–30 whole.
    mutating func readRecords(_ afl: ApplicationFileLocator, into card: inout CardDataStore) async throws -> [UInt8] {
        guard afl.recordCount <= EMVPaymentCapability.maximumRecordCount else {
            throw CardAnswer.failure(
                Self.processingOptionsStep,
                "AFL lists \(afl.recordCount) records; at most \(EMVPaymentCapability.maximumRecordCount) are read"
            )
        }
        var oda: [UInt8] = []
        for entry in afl.entries {
            let sfi = entry.shortFileIdentifier
            for record in entry.records {
                let step = "READ RECORD SFI \(sfi) record \(record)"
                try checkCancellation(before: step)
                let command = try CommandAPDU(
                    cla: 0x00,
                    ins: 0xB2,
                    p1: record,
                    p2: sfi << 3 | 0x04,
                    expectedLength: 256
                )
                let response = try await transceive(command, step: step)
                guard response.status == .success else {
                    throw CardAnswer.failure(step, "card answered \(response.status)")
                }
                let objects = try CardAnswer.decodeAll(response.data, step: step)
                let flagged = entry.isForOfflineAuthentication(record)
                if let template = objects.first, template.tag == 0x70, objects.count == 1 {
                    try card.add(ProcessingOptions.primitives(of: template.children), step: step)
                    if flagged { oda += sfi <= 10 ? template.value : response.data }
                } else if sfi <= 10 {
                    // Book 3 §10.2: records of SFI 1–10 are one record template 70.
                    _ = try CardAnswer.template(response.data, step: step, expecting: [0x70], what: "record")
                } else if flagged {
                    oda += response.data
                }
            }
        }
        return oda
    }

    /// Kernel 3 after the records: the cryptogram from the GPO answer, CVM from CTQ and TTQ (EMV Book C-3).
    mutating func quickVSDC(card: CardDataStore) throws -> KernelResult {
        let step = Self.processingOptionsStep
        func required(_ tag: TLVTag, _ name: String, count: ClosedRange<Int>) throws -> [UInt8] {
            guard let value = card[tag] else {
                throw CardAnswer.failure(step, "qVSDC card returned no \(name) (\(tag))")
            }
            guard count.contains(value.count) else {
                throw CardAnswer.failure(
                    card.source(of: tag),
                    "\(name) (\(tag)) has \(value.count) bytes, expected \(count.lowerBound)-\(count.upperBound)"
                )
            }
            return value
        }
        _ = try required(0x9F26, "Application Cryptogram", count: 8...8)
        _ = try required(0x9F36, "ATC", count: 2...2)
        let iad = try required(0x9F10, "Issuer Application Data", count: 1...32)
        let type: CryptogramType
        if let cid = card[0x9F27] {
            guard cid.count == 1, let decoded = CryptogramType(cryptogramInformationData: cid[0]) else {
                throw CardAnswer.failure(
                    card.source(of: 0x9F27),
                    "CID (9F27) \(cid.hexString) names no cryptogram type"
                )
            }
            type = decoded
        } else {
            // Book C-3: without 9F27, IAD byte 5 bits 6-5 give the type (Visa CVR byte 2).
            guard iad.count >= 5, let decoded = CryptogramType(cryptogramInformationData: (iad[4] & 0x30) << 2) else {
                throw CardAnswer.failure(step, "no CID (9F27) and the IAD (9F10) names no cryptogram type")
            }
            type = decoded
        }
        let (cvm, results) = QualifiersCVM.evaluate(ctq: card[0x9F6C], ttq: terminalData[0x9F66] ?? [])
        terminalData[0x9F34] = results
        return KernelResult(type: type, cvm: cvm)
    }

    /// Kernel 2 after the records: CVM, then GENERATE AC for an ARQC with CDOL1.
    ///
    /// - Returns: the cryptogram type and CVM, or the status word GENERATE AC was answered with instead of `9000`.
    mutating func mChip(options: ProcessingOptions, card: inout CardDataStore) async throws -> GenerateACResult {
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

        try checkCancellation(before: step)
        let values = card.values.merging(terminalData) { _, terminal in terminal }
        let command = try CommandAPDU(
            cla: 0x80,
            ins: 0xAE,
            p1: CryptogramType.arqc.referenceControl,
            p2: 0x00,
            data: cdol1.fill(with: values),
            expectedLength: 256
        )
        let response = try await transceive(command, step: step)
        guard response.status == .success else { return .ended(response.status) }
        let answer = try GenerateACResponse(responseData: response.data)
        if answer.cryptogramType == .tc {
            throw CardAnswer.failure(step, "card returned a TC to a request for an ARQC (Book 3 §6.5.5.2: AAC or ARQC)")
        }
        card.replace(0x9F27, [answer.cryptogramInformationData], step: step)
        card.replace(0x9F36, answer.applicationTransactionCounter, step: step)
        card.replace(0x9F26, answer.applicationCryptogram, step: step)
        if !answer.issuerApplicationData.isEmpty { card.replace(0x9F10, answer.issuerApplicationData, step: step) }
        return .completed(KernelResult(type: answer.cryptogramType, cvm: cvm))
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

extension DataObjectList {
    /// `value` padded with trailing zeros or truncated to `length` bytes.
    static func fitted(_ value: [UInt8], length: Int) -> [UInt8] {
        value.count >= length ? Array(value.prefix(length)) : value + Array(repeating: 0, count: length - value.count)
    }
}

/// The card's data objects from the GPO answer and the records, with the step each came from.
struct CardDataStore {
    private(set) var values: [TLVTag: [UInt8]] = [:]
    private var sources: [TLVTag: String] = [:]

    subscript(tag: TLVTag) -> [UInt8]? { values[tag] }

    /// The step a tag came from, for error messages.
    func source(of tag: TLVTag) -> String { sources[tag] ?? PaymentSession.processingOptionsStep }

    /// Adds primitive objects. A tag seen before with another value is a redundant data object (Book 3 §10.2):
    /// the read fails. The same value twice is tolerated.
    mutating func add(_ objects: [TLV], step: String) throws {
        for object in objects {
            if let existing = values[object.tag] {
                guard existing == object.value else {
                    throw CardAnswer.failure(
                        step,
                        "data object \(object.tag) appears again with another value (first in \(source(of: object.tag)))"
                    )
                }
                continue
            }
            values[object.tag] = object.value
            sources[object.tag] = step
        }
    }

    /// Sets a value that a later step legitimately renews (GENERATE AC's cryptogram and ATC).
    mutating func replace(_ tag: TLVTag, _ value: [UInt8], step: String) {
        values[tag] = value
        sources[tag] = step
    }
}

/// The masked card identity: last four PAN digits and expiry, from `5A`/`5F24` or track 2 (`57`).
struct CardIdentity {
    var lastFourDigits: String
    var expiry: CardExpiry?

    /// - Throws: ``PaymentError/Code/cardReadFailed`` at the step the data came from when neither PAN nor track 2
    ///   is present or either is not well formed (12–19 digits; track 2 with a `D` separator and YYMM).
    init(card: CardDataStore) throws {
        var pan: String?
        var trackExpiry: CardExpiry?
        if let value = card[0x57] {
            let nibbles = value.flatMap { [$0 >> 4, $0 & 0x0F] }
            guard let separator = nibbles.firstIndex(of: 0x0D), nibbles[..<separator].allSatisfy({ $0 <= 9 }),
                separator + 4 <= nibbles.count, nibbles[separator + 1..<separator + 5].allSatisfy({ $0 <= 9 })
            else {
                throw CardAnswer.failure(
                    card.source(of: 0x57),
                    "Track 2 Equivalent Data (57) has no PAN, D separator and YYMM"
                )
            }
            pan = String(nibbles[..<separator].map { Character(Unicode.Scalar(0x30 + $0)) })
            let digits = nibbles[separator + 1..<separator + 5].map(Int.init)
            trackExpiry = CardExpiry(year: 2000 + digits[0] * 10 + digits[1], month: digits[2] * 10 + digits[3])
        }
        if let value = card[0x5A] {
            let nibbles = value.flatMap { [$0 >> 4, $0 & 0x0F] }
            let digits = nibbles.prefix { $0 != 0x0F }
            guard digits.allSatisfy({ $0 <= 9 }), nibbles.dropFirst(digits.count).allSatisfy({ $0 == 0x0F }) else {
                throw CardAnswer.failure(card.source(of: 0x5A), "PAN (5A) is not decimal digits padded with F")
            }
            pan = String(digits.map { Character(Unicode.Scalar(0x30 + $0)) })
        }
        guard let pan else {
            throw CardAnswer.failure(
                PaymentSession.processingOptionsStep,
                "card returned neither PAN (5A) nor Track 2 Equivalent Data (57)"
            )
        }
        guard (12...19).contains(pan.count) else {
            throw CardAnswer.failure(
                card.source(of: card[0x5A] != nil ? 0x5A : 0x57),
                "PAN has \(pan.count) digits, expected 12-19"
            )
        }
        lastFourDigits = String(pan.suffix(4))
        if let value = card[0x5F24], value.count == 3, let year = BCD.value(value[0]), let month = BCD.value(value[1]),
            (1...12).contains(month)
        {
            expiry = CardExpiry(year: 2000 + year, month: month)
        } else {
            expiry = trackExpiry
        }
    }
}
