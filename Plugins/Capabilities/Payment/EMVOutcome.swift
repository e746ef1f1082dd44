public import ProximaCore

/// A card scheme, known from the registered application provider identifier (RID, the first five AID bytes,
/// ISO/IEC 7816-5) and, for Maestro, the full AID.
public struct PaymentBrand: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let visa = PaymentBrand(rawValue: "visa")
    public static let mastercard = PaymentBrand(rawValue: "mastercard")
    public static let maestro = PaymentBrand(rawValue: "maestro")
    public static let americanExpress = PaymentBrand(rawValue: "amex")
    public static let discover = PaymentBrand(rawValue: "discover")
    public static let jcb = PaymentBrand(rawValue: "jcb")
    public static let unionPay = PaymentBrand(rawValue: "unionpay")
    public static let interac = PaymentBrand(rawValue: "interac")
    public static let unknown = PaymentBrand(rawValue: "unknown")

    static let visaRID: [UInt8] = [0xA0, 0x00, 0x00, 0x00, 0x03]
    static let mastercardRID: [UInt8] = [0xA0, 0x00, 0x00, 0x00, 0x04]
    static let maestroAID: [UInt8] = [0xA0, 0x00, 0x00, 0x00, 0x04, 0x30, 0x60]

    /// The registered RIDs this type knows, with the brand and its default kernel (EMV Book B §3.3.2.5 C: the
    /// kernel an AID gets when its directory entry has no Kernel Identifier; Book A Table 5-2 numbers them).
    static let registry: [(rid: [UInt8], brand: PaymentBrand, kernel: EMVKernel?)] = [
        (visaRID, .visa, .visa),
        (mastercardRID, .mastercard, .mastercard),
        ([0xA0, 0x00, 0x00, 0x00, 0x25], .americanExpress, .americanExpress),
        ([0xA0, 0x00, 0x00, 0x00, 0x65], .jcb, .jcb),
        ([0xA0, 0x00, 0x00, 0x01, 0x52], .discover, .discover),
        ([0xA0, 0x00, 0x00, 0x03, 0x24], .discover, .discover),
        ([0xA0, 0x00, 0x00, 0x03, 0x33], .unionPay, .unionPay),
        ([0xA0, 0x00, 0x00, 0x02, 0x77], .interac, nil),
    ]

    /// The brand of an application identifier; ``unknown`` for an RID not in the registry.
    public init(applicationIdentifier aid: [UInt8]) {
        if aid.starts(with: Self.maestroAID) {
            self = .maestro
            return
        }
        self = Self.registry.first { aid.starts(with: $0.rid) }?.brand ?? .unknown
    }

    public var description: String {
        switch self {
        case .visa: "Visa"
        case .mastercard: "Mastercard"
        case .maestro: "Maestro"
        case .americanExpress: "American Express"
        case .discover: "Discover"
        case .jcb: "JCB"
        case .unionPay: "UnionPay"
        case .interac: "Interac"
        default: rawValue
        }
    }
}

/// A contactless kernel, by its Kernel ID (EMV Book B §3.3.2.5 C, Book A Table 5-2): one byte for the EMVCo
/// kernels (`02` Mastercard, `03` Visa, …), three or more bytes for an extended (domestic) kernel.
public struct EMVKernel: Hashable, Sendable, CustomStringConvertible {
    public let identifier: [UInt8]
    public init(identifier: [UInt8]) { self.identifier = identifier }

    /// Kernel 1 (some Visa and JCB cards without TTQ in their PDOL); not implemented.
    public static let kernel1 = EMVKernel(identifier: [0x01])
    /// Kernel 2, Mastercard M/Chip (EMV Book C-2). Implemented.
    public static let mastercard = EMVKernel(identifier: [0x02])
    /// Kernel 3, Visa qVSDC (EMV Book C-3). Implemented.
    public static let visa = EMVKernel(identifier: [0x03])
    /// Kernel 4, American Express; not implemented.
    public static let americanExpress = EMVKernel(identifier: [0x04])
    /// Kernel 5, JCB; not implemented.
    public static let jcb = EMVKernel(identifier: [0x05])
    /// Kernel 6, Discover; not implemented.
    public static let discover = EMVKernel(identifier: [0x06])
    /// Kernel 7, UnionPay; not implemented.
    public static let unionPay = EMVKernel(identifier: [0x07])

    /// The kernels this capability runs.
    public static let implemented: Set<EMVKernel> = [.mastercard, .visa]

    public var description: String {
        switch self {
        case .kernel1: "Kernel 1"
        case .mastercard: "Kernel 2 (Mastercard M/Chip)"
        case .visa: "Kernel 3 (Visa qVSDC)"
        case .americanExpress: "Kernel 4 (American Express)"
        case .jcb: "Kernel 5 (JCB)"
        case .discover: "Kernel 6 (Discover)"
        case .unionPay: "Kernel 7 (UnionPay)"
        default: "kernel \(identifier.hexString)"
        }
    }
}

/// A payment application a card offers: from its PPSE directory entry (EMV Book B §3.3.2), with the kernel
/// Entry Point chose for it.
public struct EMVApplication: Hashable, Sendable, CustomStringConvertible {
    /// The AID / ADF Name (tag `4F`) selected with SELECT.
    public var identifier: [UInt8]
    /// The Application Label (tag `50`), printable ASCII only; empty when absent.
    public var label: String
    /// The Application Priority Indicator (tag `87`) bits 4–1, 1 being highest; `nil` when absent or 0.
    public var priority: Int?
    /// The kernel: the card's Kernel Identifier (`9F2A`) or the default for the AID.
    public var kernel: EMVKernel
    public var brand: PaymentBrand { PaymentBrand(applicationIdentifier: identifier) }

    public init(identifier: [UInt8], label: String, priority: Int?, kernel: EMVKernel) {
        self.identifier = identifier
        self.label = label
        self.priority = priority
        self.kernel = kernel
    }

    public var description: String {
        let name = label.isEmpty ? "" : " \"\(label)\""
        return "\(identifier.hexString)\(name) (\(brand), \(kernel))"
    }
}

/// The type of application cryptogram, from bits 8–7 of the Cryptogram Information Data (`9F27`,
/// EMV Book 3 §6.5.5.4 Table 14).
public enum CryptogramType: String, Hashable, Sendable, CustomStringConvertible {
    /// Application Authentication Cryptogram (`00`): the card declines.
    case aac = "AAC"
    /// Transaction Certificate (`01`, `40`): the card approves offline.
    case tc = "TC"
    /// Authorisation Request Cryptogram (`10`, `80`): the card asks to go online.
    case arqc = "ARQC"

    /// The type in a CID byte; `nil` for bits `11` (RFU).
    public init?(cryptogramInformationData cid: UInt8) {
        switch cid & 0xC0 {
        case 0x00: self = .aac
        case 0x40: self = .tc
        case 0x80: self = .arqc
        default: return nil
        }
    }

    /// The P1 reference control bits of GENERATE AC that ask for this type (EMV Book 3 §6.5.5.2 Table 12).
    var referenceControl: UInt8 {
        switch self {
        case .aac: 0x00
        case .tc: 0x40
        case .arqc: 0x80
        }
    }

    public var description: String { rawValue }
}

/// The cardholder verification the terminal must perform (or that was performed on the card or phone).
public enum CardholderVerification: String, Hashable, Sendable, CustomStringConvertible {
    /// No CVM: below the CVM required limit, or the card and terminal agreed on "no CVM required".
    case noCVM
    /// The card requires an enciphered PIN checked online by the issuer: the terminal must capture a PIN and
    /// send it with the authorisation (the `pinEntryRequested` event).
    case onlinePIN
    /// The card requires a signature on the receipt.
    case signature
    /// The cardholder was verified on the consumer device (phone or watch passcode or biometrics, CDCVM).
    case consumerDevice
    /// A CVM was required but card and terminal share none; the issuer sees it in the CVM Results (`9F34`).
    case failed

    public var description: String { rawValue }
}

/// An application expiration date, month precision (tag `5F24` YYMMDD, or the YYMM of track 2).
public struct CardExpiry: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Four-digit year: EMV's two digits plus 2000.
    public var year: Int
    public var month: Int

    public init(year: Int, month: Int) {
        self.year = year
        self.month = month
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { (lhs.year, lhs.month) < (rhs.year, rhs.month) }

    /// `MM/YY`, as printed on cards.
    public var description: String {
        let month = self.month < 10 ? "0\(self.month)" : "\(self.month)"
        let year = self.year % 100 < 10 ? "0\(self.year % 100)" : "\(self.year % 100)"
        return "\(month)/\(year)"
    }
}

/// The EMV data objects a payment processor needs to authorise the transaction (EMV Book 4 §12.2, "online
/// request"): track 2 equivalent data, PAN, expiry, cryptogram and its inputs, terminal and transaction data.
///
/// This is card data: it leaves the kernel only encrypted to the processor. Its `description`, debug description
/// and reflection show tag names and counts only, never a value.
public struct EMVCardData: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The data objects by tag: those of ``processorTags`` that the card and terminal provided.
    public var tags: [TLVTag: [UInt8]]
    /// The records the AFL flagged for offline data authentication, concatenated as EMV Book 3 §10.3 builds the
    /// static data to be authenticated (record template `70` excluded for SFI 1–10), followed by the AIP when the
    /// card's SDA Tag List (`9F4A`) asks for it. This terminal performs no offline data authentication; the bytes
    /// are kept for a processor or a later CDA/fDDA step.
    public var offlineAuthenticationData: [UInt8]
    /// How many records the AFL flagged for offline data authentication.
    public var offlineAuthenticationRecordCount: Int

    public init(
        tags: [TLVTag: [UInt8]] = [:],
        offlineAuthenticationData: [UInt8] = [],
        offlineAuthenticationRecordCount: Int = 0
    ) {
        self.tags = tags
        self.offlineAuthenticationData = offlineAuthenticationData
        self.offlineAuthenticationRecordCount = offlineAuthenticationRecordCount
    }

    public subscript(tag: TLVTag) -> [UInt8]? { tags[tag] }

    /// The tags collected for the processor, in the order of ``encoded``: `57`, `5A`, `5F24`, `5F34`, `9F26`,
    /// `9F27`, `9F10`, `9F36`, `9F37`, `82`, `84`, `95`, `9A`, `9C`, `9F02`, `5F2A`, `9F1A`, `9F33`, `9F34`,
    /// `9F6E`, `9F7C`, then `9F03`, `9F21`, `9F35`, `9F40`, `9F66`, `9F6C`, `5F36`.
    public static let processorTags: [TLVTag] = [
        0x57, 0x5A, 0x5F24, 0x5F34, 0x9F26, 0x9F27, 0x9F10, 0x9F36, 0x9F37, 0x82, 0x84, 0x95, 0x9A, 0x9C, 0x9F02,
        0x5F2A, 0x9F1A, 0x9F33, 0x9F34, 0x9F6E, 0x9F7C, 0x9F03, 0x9F21, 0x9F35, 0x9F40, 0x9F66, 0x9F6C, 0x5F36,
    ]

    /// The data objects as BER-TLV, in ``processorTags`` order: what an authorisation message's field 55 carries.
    public var encoded: [UInt8] {
        Self.processorTags.flatMap { tag in tags[tag].map { TLV(tag: tag, value: $0).bytes } ?? [] }
    }

    /// Tag names only.
    public var description: String {
        let present = Self.processorTags.filter { tags[$0] != nil }.map(\.description)
        return "EMVCardData(\(present.count) tags: \(present.joined(separator: " ")); values withheld)"
    }

    public var debugDescription: String { description }

    /// Reflection (`dump`, `Mirror`) sees the masked description only.
    public var customMirror: Mirror { Mirror(self, children: ["summary": description], displayStyle: .struct) }
}

/// Something the capability reports while a read is in progress; the API layer turns these into its events.
public enum EMVPaymentEvent: Hashable, Sendable {
    /// Entry Point selected this application and hands it to its kernel.
    case applicationSelected(EMVApplication)
    /// The card is no longer needed (after the last READ RECORD for Kernel 3, after GENERATE AC for Kernel 2):
    /// the "remove card" moment.
    case cardReadCompleted
    /// The card requires online PIN for an online request: the terminal should prompt for it and send the
    /// enciphered PIN with the authorisation (Apple's `pinEntryRequested`). Reported after the read, before
    /// ``EMVPaymentCapability/run(_:on:context:)`` returns; not reported for a decline.
    case pinEntryRequested
}

/// The result of a contactless EMV transaction: an outcome of EMV Book A §6.2 with the data a processor needs.
///
/// Printing an outcome (`description`, `debugDescription`, `dump`) shows the status, brand, last four digits and
/// expiry only; the PAN and track data stay in ``cardData`` and are never printed.
public struct EMVOutcome: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The outcomes of EMV Contactless Book A §6.2 (Table 6-1) a kernel or Entry Point ends with.
    public enum Status: String, Hashable, Sendable, CustomStringConvertible {
        /// The card produced an ARQC: send ``EMVOutcome/cardData`` to the processor for authorisation.
        case onlineRequest
        /// The card approved offline (TC).
        case approved
        /// The card declined (AAC).
        case declined
        /// Use the contact chip or magnetic stripe instead (GET PROCESSING OPTIONS answered `6984`).
        case tryAnotherInterface
        /// The transaction ends; present another card (`6A81`, no supported application, another status word).
        case endApplication
        /// Entry Point removes the application and selects the next candidate (`6985`). Entry Point consumes
        /// it: a final outcome never has this status; it appears in ``EMVOutcome/attempts``.
        case selectNext
        /// Present the card again, e.g. after the cardholder unlocked a phone (`6986`, "see phone").
        case tryAgain

        /// The outcome of a GET PROCESSING OPTIONS status word other than `9000`, as Kernel 3 maps them (EMV Book
        /// C-3 §5.2.2.2; openemv `emv_c3_initiate_kernel_processing_test.c`): `6984` Try Another Interface, `6985`
        /// Select Next, `6986` Try Again, anything else (`6A81` included) End Application. Kernel 2 uses the same
        /// table here. `nil` for `9000`.
        public static func processingOptions(_ status: StatusWord) -> Status? {
            switch status.rawValue {
            case 0x9000: nil
            case 0x6984: .tryAnotherInterface
            case 0x6985: .selectNext
            case 0x6986: .tryAgain
            default: .endApplication
            }
        }

        public var description: String {
            switch self {
            case .onlineRequest: "online request"
            case .approved: "approved"
            case .declined: "declined"
            case .tryAnotherInterface: "try another interface"
            case .endApplication: "end application"
            case .selectNext: "select next"
            case .tryAgain: "try again"
            }
        }
    }

    /// Why the transaction ended with its status.
    public enum Reason: Hashable, Sendable, CustomStringConvertible {
        /// The card's cryptogram decided: ARQC → online request, TC → approved, AAC → declined.
        case cryptogram(CryptogramType)
        /// SELECT PPSE was not answered with `9000` (e.g. `6A82`: no contactless payment directory). EMV Book B
        /// §3.3.2.3 then leaves the Candidate List empty and §3.3.2.7 ends the application with "Insert, Swipe or
        /// Try Another Card". The card is not supported on this interface.
        case noPaymentDirectory(StatusWord)
        /// No application the card offers is one this terminal supports, or every candidate was removed during
        /// final selection (EMV Book B §3.3.2.7). The applications listed are those the terminal could not run
        /// (e.g. American Express on Kernel 4); ``EMVOutcome/attempts`` lists the removed candidates.
        case noSupportedApplication(unsupported: [EMVApplication])
        /// The card answered `step` with a status word that ends the transaction.
        case cardStatus(step: String, status: StatusWord)

        public var description: String {
            switch self {
            case .cryptogram(let type): "card returned \(type)"
            case .noPaymentDirectory(let status): "no contactless payment directory (SELECT PPSE: \(status))"
            case .noSupportedApplication(let unsupported):
                unsupported.isEmpty
                    ? "card not supported: no application could be selected"
                    : "card not supported: "
                        + unsupported.map { "\($0.brand) \($0.identifier.hexString) needs \($0.kernel)" }
                        .joined(separator: "; ")
            case .cardStatus(let step, let status): "\(step): card answered \(status)"
            }
        }
    }

    /// A candidate application Entry Point removed during final selection (EMV Book B §3.3.3.5), and why.
    public struct CandidateAttempt: Hashable, Sendable, CustomStringConvertible {
        public var application: EMVApplication
        /// The step that removed it (`SELECT A0000000031010`, `GET PROCESSING OPTIONS`).
        public var step: String
        /// What happened, e.g. `status 6A82` or `FCI: template 6F expected, found 70`. Never card data.
        public var problem: String

        public init(application: EMVApplication, step: String, problem: String) {
            self.application = application
            self.step = step
            self.problem = problem
        }

        public var description: String { "\(application.identifier.hexString): \(step): \(problem)" }
    }

    public var status: Status
    public var reason: Reason
    /// The application the kernel ran, when one was selected.
    public var application: EMVApplication?
    /// The cardholder verification the terminal must perform.
    public var cvm: CardholderVerification
    /// The cryptogram type the card returned, when it returned one.
    public var cryptogramType: CryptogramType?
    /// The last four PAN digits (from `5A`, else track 2 `57`): what a receipt and the app may show.
    public var lastFourDigits: String?
    /// The application expiration date (from `5F24`, else track 2).
    public var expiry: CardExpiry?
    /// The data for the processor. Empty when no application got as far as a cryptogram.
    public var cardData: EMVCardData
    /// Candidates removed before the final one (or before giving up), in order.
    public var attempts: [CandidateAttempt]

    public init(
        status: Status,
        reason: Reason,
        application: EMVApplication? = nil,
        cvm: CardholderVerification = .noCVM,
        cryptogramType: CryptogramType? = nil,
        lastFourDigits: String? = nil,
        expiry: CardExpiry? = nil,
        cardData: EMVCardData = EMVCardData(),
        attempts: [CandidateAttempt] = []
    ) {
        self.status = status
        self.reason = reason
        self.application = application
        self.cvm = cvm
        self.cryptogramType = cryptogramType
        self.lastFourDigits = lastFourDigits
        self.expiry = expiry
        self.cardData = cardData
        self.attempts = attempts
    }

    /// The AID of the application the kernel ran.
    public var selectedApplicationIdentifier: [UInt8]? { application?.identifier }
    /// The brand of the application the kernel ran.
    public var brand: PaymentBrand? { application?.brand }

    /// Whether the card has nothing this terminal can run (no PPSE, or no mutually supported application): the
    /// API layer's "card not supported".
    public var isCardNotSupported: Bool {
        switch reason {
        case .noPaymentDirectory, .noSupportedApplication: true
        case .cryptogram, .cardStatus: false
        }
    }

    /// Status, reason, brand, last four, expiry and CVM; never the PAN or track data.
    public var description: String {
        var parts = ["\(status)", "\(reason)"]
        if let application { parts.append("\(application.brand) \(application.identifier.hexString)") }
        if let lastFourDigits { parts.append("•••• \(lastFourDigits)") }
        if let expiry { parts.append("exp \(expiry)") }
        if cryptogramType != nil { parts.append("CVM \(cvm)") }
        return "EMVOutcome(" + parts.joined(separator: ", ") + ")"
    }

    public var debugDescription: String {
        description + (attempts.isEmpty ? "" : " attempts: " + attempts.map(\.description).joined(separator: "; "))
            + " \(cardData)"
    }

    /// Reflection (`dump`, `Mirror`) sees the masked fields only.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "status": status.description,
                "reason": reason.description,
                "application": application?.description ?? "none",
                "lastFourDigits": lastFourDigits ?? "none",
                "expiry": expiry?.description ?? "none",
                "cvm": cvm.description,
                "cardData": cardData.description,
                "attempts": attempts.map(\.description),
            ],
            displayStyle: .struct
        )
    }
}
