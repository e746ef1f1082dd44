package import EMVCommon
package import ProximaCore

/// An application expiration date, month precision (tag `5F24` YYMMDD, or the YYMM of track 2).
package struct CardExpiry: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Four-digit year: EMV's two digits plus 2000.
    package var year: Int
    package var month: Int

    package init(year: Int, month: Int) {
        self.year = year
        self.month = month
    }

    package static func < (lhs: Self, rhs: Self) -> Bool { (lhs.year, lhs.month) < (rhs.year, rhs.month) }

    /// `MM/YY`, as printed on cards.
    package var description: String {
        let month = self.month < 10 ? "0\(self.month)" : "\(self.month)"
        let year = self.year % 100 < 10 ? "0\(self.year % 100)" : "\(self.year % 100)"
        return "\(month)/\(year)"
    }
}

/// An Application Effective Date (tag `5F25`, YYMMDD): the day from which the card may be used. Not secret, but
/// card data: its `description` withholds it, so it stays out of logs and errors.
package struct CardEffectiveDate: Hashable, Sendable, Comparable, CustomStringConvertible, CustomReflectable {
    /// Four-digit year: EMV's two digits plus 2000.
    package var year: Int
    package var month: Int
    package var day: Int

    package init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// The date of a `5F25` value: three BCD bytes YYMMDD with a valid month and day; `nil` for anything else.
    package init?(bcd value: [UInt8]) {
        guard value.count == 3, let year = BCD.value(value[0]), let month = BCD.value(value[1]),
            let day = BCD.value(value[2]), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        self.init(year: 2000 + year, month: month, day: day)
    }

    package static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    package var description: String { "effective date withheld" }

    /// Reflection (`dump`, `Mirror`) sees the withheld description only.
    package var customMirror: Mirror { Mirror(self, children: ["date": description], displayStyle: .struct) }
}

/// Something the capability reports while a read is in progress; the API layer turns these into its events.
package enum EMVPaymentEvent: Hashable, Sendable {
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
package struct EMVOutcome: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The outcomes of EMV Contactless Book A §6.2 (Table 6-1) a kernel or Entry Point ends with.
    package enum Status: String, Hashable, Sendable, CustomStringConvertible {
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
        package static func processingOptions(_ status: StatusWord) -> Status? {
            switch status.rawValue {
            case 0x9000: nil
            case 0x6984: .tryAnotherInterface
            case 0x6985: .selectNext
            case 0x6986: .tryAgain
            default: .endApplication
            }
        }

        package var description: String {
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
    package enum Reason: Hashable, Sendable, CustomStringConvertible {
        /// The card's cryptogram decided: ARQC → online request, TC → approved, AAC → declined.
        case cryptogram(CryptogramType)
        /// SELECT PPSE was not answered with `9000` (e.g. `6A82`: no contactless payment directory). EMV Book B
        /// §3.3.2.3 then leaves the Candidate List empty and §3.3.2.7 ends the application with "Insert, Swipe or
        /// Try Another Card". The card is not supported on this interface.
        case noPaymentDirectory(StatusWord)
        /// No application the card offers is one this terminal may run, or every candidate was removed during
        /// final selection (EMV Book B §3.3.2.7): `unsupported` are the directory entries no configured
        /// combination runs, each with why (no combination for the AID, another kernel, a kernel not
        /// implemented, not allowed for this amount); `tried` are the candidates removed after SELECT or GET
        /// PROCESSING OPTIONS, each with the step and the card's answer.
        case noSupportedApplication(unsupported: [CandidateAttempt], tried: [CandidateAttempt])
        /// Pre-processing allowed no combination for this transaction (EMV Book B §3.1.1.13): the amount reaches
        /// every contactless transaction limit, or a zero amount is not allowed. One line per combination.
        case contactlessNotAllowed([String])
        /// A Kernel 2 card whose AIP (byte 2 bit 8 clear) offers only mag-stripe mode, which this terminal does not
        /// run (EMV Book C-2): the card cannot be read contactless here; tapping again will not help.
        case magStripeModeNotSupported(aip: [UInt8])
        /// The card answered `step` with a status word that ends the transaction.
        case cardStatus(step: String, status: StatusWord)
        /// Offline data authentication (fDDA or CDA, EMV Book 2 §6) failed or was not possible, so the card's
        /// cryptogram was not accepted as it stood: declined, or sent online where the kernel allows it. The text
        /// names the check (``OfflineAuthenticationFailure``), never card data.
        case offlineDataAuthenticationFailed(String)

        package var description: String {
            switch self {
            case .cryptogram(let type): "card returned \(type)"
            case .noPaymentDirectory(let status): "no contactless payment directory (SELECT PPSE: \(status))"
            case .noSupportedApplication(let unsupported, let tried):
                tried.isEmpty && unsupported.isEmpty
                    ? "card not supported: the card offers no application"
                    : "card not supported: " + (tried + unsupported).map(\.description).joined(separator: "; ")
            case .contactlessNotAllowed(let combinations):
                "contactless not allowed for this transaction (insert the card, or pay less): "
                    + combinations.joined(separator: "; ")
            case .magStripeModeNotSupported(let aip):
                "mag-stripe mode not supported: the card (AIP \(aip.hexString)) offers only mag-stripe mode, which "
                    + "this terminal does not run; insert the card or use another one"
            case .cardStatus(let step, let status): "\(step): card answered \(status)"
            case .offlineDataAuthenticationFailed(let problem): "offline data authentication failed: \(problem)"
            }
        }
    }

    /// A candidate application Entry Point removed during final selection (EMV Book B §3.3.3.5), and why.
    package struct CandidateAttempt: Hashable, Sendable, CustomStringConvertible {
        package var application: EMVApplication
        /// The step that removed it (`SELECT A0000000031010`, `GET PROCESSING OPTIONS`).
        package var step: String
        /// What happened, e.g. `status 6A82` or `FCI: template 6F expected, found 70`. Never card data.
        package var problem: String

        package init(application: EMVApplication, step: String, problem: String) {
            self.application = application
            self.step = step
            self.problem = problem
        }

        package var description: String {
            "\(application.identifier.hexString) (\(application.brand)): \(step): \(problem)"
        }
    }

    package var status: Status
    package var reason: Reason
    /// The application the kernel ran, when one was selected.
    package var application: EMVApplication?
    /// The cardholder verification the terminal must perform.
    package var cvm: CardholderVerification
    /// The cryptogram type the card returned, when it returned one.
    package var cryptogramType: CryptogramType?
    /// The last four PAN digits (from `5A`, else track 2 `57`): what a receipt and the app may show.
    package var lastFourDigits: String?
    /// The application expiration date (from `5F24`, else track 2).
    package var expiry: CardExpiry?
    /// The Application Effective Date (`5F25`), when the card gave a well-formed one. Never printed.
    package var effectiveDate: CardEffectiveDate?
    /// The data for the processor. Empty when no application got as far as a cryptogram.
    package var cardData: EMVCardData
    /// Candidates removed before the final one (or before giving up), in order.
    package var attempts: [CandidateAttempt]

    package init(
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
    package var selectedApplicationIdentifier: [UInt8]? { application?.identifier }
    /// The brand of the application the kernel ran.
    package var brand: PaymentBrand? { application?.brand }

    /// Whether the card has nothing this terminal can run (no PPSE, or no mutually supported application): the
    /// API layer's "card not supported".
    package var isCardNotSupported: Bool {
        switch reason {
        case .noPaymentDirectory, .noSupportedApplication, .magStripeModeNotSupported, .contactlessNotAllowed: true
        case .cryptogram, .cardStatus, .offlineDataAuthenticationFailed: false
        }
    }

    /// Status, reason, brand, last four, expiry and CVM; never the PAN or track data.
    package var description: String {
        var parts = ["\(status)", "\(reason)"]
        if let application { parts.append("\(application.brand) \(application.identifier.hexString)") }
        if let lastFourDigits { parts.append("•••• \(lastFourDigits)") }
        if let expiry { parts.append("exp \(expiry)") }
        if cryptogramType != nil { parts.append("CVM \(cvm)") }
        return "EMVOutcome(" + parts.joined(separator: ", ") + ")"
    }

    package var debugDescription: String {
        description + (attempts.isEmpty ? "" : " attempts: " + attempts.map(\.description).joined(separator: "; "))
            + " \(cardData)"
    }

    /// Reflection (`dump`, `Mirror`) sees the masked fields only.
    package var customMirror: Mirror {
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
