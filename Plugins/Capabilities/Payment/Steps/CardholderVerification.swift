internal import EMVCommon
internal import ProximaCore

/// The cardholder verification the terminal must perform (or that was performed on the card or phone).
package enum CardholderVerification: String, Hashable, Sendable, CustomStringConvertible {
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

    package var description: String { rawValue }
}

/// A Cardholder Verification Method List (tag `8E`, EMV Book 3 §10.5 and Annex C3): amounts X and Y (4 bytes
/// each, in the application currency's minor units), then two-byte rules in the card's order of preference.
package struct CVMList: Hashable, Sendable {
    /// One CV Rule: the method (byte 1) and the condition under which it applies (byte 2).
    package struct Rule: Hashable, Sendable, CustomStringConvertible {
        /// Byte 1: bit 7 "apply succeeding rule if this one fails", bits 6–1 the CVM code.
        package var method: UInt8
        /// Byte 2: the condition code (`00` always, `03` if the terminal supports the CVM, `06`–`09` amounts …).
        package var condition: UInt8

        package init(method: UInt8, condition: UInt8) {
            self.method = method
            self.condition = condition
        }

        /// Bits 6–1: `00` fail, `01` plaintext PIN offline, `02` enciphered PIN online, `1E` signature, `1F` no
        /// CVM required, …
        package var code: UInt8 { method & 0x3F }
        /// Bit 7: when this CVM cannot be performed, try the next rule instead of failing.
        package var appliesNextRuleIfUnsuccessful: Bool { method & 0x40 != 0 }

        package var description: String { [method, condition].hexString }
    }

    /// Amount X, minor units of the application currency (`9F42`).
    package var amountX: UInt32
    /// Amount Y, minor units of the application currency.
    package var amountY: UInt32
    package var rules: [Rule]

    package init(amountX: UInt32 = 0, amountY: UInt32 = 0, rules: [Rule]) {
        self.amountX = amountX
        self.amountY = amountY
        self.rules = rules
    }

    /// Parses the value of tag `8E`.
    ///
    /// - Throws: ``PaymentError/Code/cardReadFailed`` at `step` when the value is shorter than 8 bytes or its
    ///   rules are not whole pairs.
    package init(bytes: [UInt8], step: String) throws {
        guard bytes.count >= 8, bytes.count % 2 == 0 else {
            throw CardAnswer.failure(
                step,
                "CVM List (8E) of \(bytes.count) bytes is not 8 bytes of amounts followed by 2-byte rules"
            )
        }
        func amount(_ start: Int) -> UInt32 { bytes[start..<(start + 4)].reduce(0) { $0 << 8 | UInt32($1) } }
        amountX = amount(0)
        amountY = amount(4)
        rules = stride(from: 8, to: bytes.count, by: 2).map { Rule(method: bytes[$0], condition: bytes[$0 + 1]) }
    }

    /// The CVM codes of EMV Book 3 Annex C3 Table 39 (others are "unrecognised CVM").
    static let knownCodes: Set<UInt8> = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x1E, 0x1F]

    /// What the terminal knows when it evaluates the list.
    struct Context {
        var amount: Int64
        var type: EMVTransactionType
        /// Whether the transaction currency equals the Application Currency Code (`9F42`); amount conditions
        /// apply only then.
        var inApplicationCurrency: Bool
        var supportsOnlinePIN: Bool
        var supportsSignature: Bool
        var supportsNoCVM: Bool
    }

    /// Cardholder verification by EMV Book 3 §10.5: the first rule whose condition holds and whose CVM the
    /// terminal can perform decides; a rule the terminal cannot perform fails verification unless its bit 7 asks
    /// for the next rule. Offline PIN is never performed here (no PIN pad with a card connection).
    ///
    /// - Returns: the method and the CVM Results (`9F34`): method, condition, result (`00` unknown — online PIN
    ///   and signature are checked later —, `01` failed, `02` successful).
    func evaluate(_ context: Context) -> (CardholderVerification, cvmResults: [UInt8]) {
        for rule in rules where Self.holds(rule.condition, rule: rule, context: context, list: self) {
            let method: CardholderVerification?
            switch rule.code {
            case 0x00: return (.failed, [rule.method, rule.condition, 0x01])
            case 0x02: method = context.supportsOnlinePIN ? .onlinePIN : nil
            case 0x1E: method = context.supportsSignature ? .signature : nil
            case 0x1F: method = context.supportsNoCVM ? .noCVM : nil
            default: method = nil
            }
            if let method {
                return (method, [rule.method, rule.condition, method == .noCVM ? 0x02 : 0x00])
            }
            if !rule.appliesNextRuleIfUnsuccessful { return (.failed, [rule.method, rule.condition, 0x01]) }
        }
        return (.failed, [0x3F, 0x00, 0x01])
    }

    /// Whether a CV Rule's condition code (EMV Book 3 Annex C3 Table 40) holds; unknown codes never hold.
    private static func holds(_ condition: UInt8, rule: Rule, context: Context, list: CVMList) -> Bool {
        let isCash = context.type.rawValue == 0x01
        let isCashback = context.type == .purchaseWithCashback
        switch condition {
        case 0x00: return true
        case 0x01: return false  // unattended cash: this terminal is attended
        case 0x02: return !isCash && !isCashback
        case 0x03:
            switch rule.code {
            case 0x02: return context.supportsOnlinePIN
            case 0x1E: return context.supportsSignature
            case 0x1F: return context.supportsNoCVM
            default: return false
            }
        case 0x04: return isCash
        case 0x05: return isCashback
        case 0x06: return context.inApplicationCurrency && context.amount < Int64(list.amountX)
        case 0x07: return context.inApplicationCurrency && context.amount > Int64(list.amountX)
        case 0x08: return context.inApplicationCurrency && context.amount < Int64(list.amountY)
        case 0x09: return context.inApplicationCurrency && context.amount > Int64(list.amountY)
        default: return false
        }
    }
}

/// Kernel 3 cardholder verification from the Card Transaction Qualifiers (`9F6C`) and the reader's TTQ (`9F66`),
/// after EMV Book C-3 §5.7 (Visa qVSDC). The TTQ is the combination's copy from Entry Point pre-processing:
/// byte 2 bit 7 "CVM required" is set at or above the Reader CVM Required Limit (Book B §3.1.1.12).
///
/// With a CTQ: consumer device CVM performed (byte 2 bit 8) → CDCVM; online PIN required (byte 1 bit 8) and the
/// reader supports online PIN (TTQ byte 1 bit 3) and the card asks to go online → online PIN; signature required
/// (byte 1 bit 7) and supported (TTQ byte 1 bit 2) → signature; a CVM the card requires or the reader requires
/// but none possible → failed; otherwise no CVM. Without a CTQ, when a CVM is required: signature, else online
/// PIN for an online transaction, else failed.
enum QualifiersCVM {
    /// - Parameters:
    ///   - ctq: the card's CTQ (2 bytes) or `nil` when it sent none.
    ///   - ttq: the TTQ as sent in the PDOL.
    ///   - online: whether the card asked to go online (ARQC): online PIN is only possible then.
    /// - Returns: the method and the CVM Results (`9F34`) the terminal records.
    static func evaluate(ctq: [UInt8]?, ttq: [UInt8], online: Bool = true)
        -> (CardholderVerification, cvmResults: [UInt8])
    {
        let onlinePINPossible = online && ttq.count > 0 && ttq[0] & 0x04 != 0
        let signatureSupported = ttq.count > 0 && ttq[0] & 0x02 != 0
        let cvmRequired = ttq.count > 1 && ttq[1] & 0x40 != 0
        let failed: (CardholderVerification, [UInt8]) = (.failed, [0x3F, 0x00, 0x01])
        if let ctq, ctq.count >= 2 {
            if ctq[1] & 0x80 != 0 { return (.consumerDevice, [0x01, 0x00, 0x02]) }
            if ctq[0] & 0x80 != 0 && onlinePINPossible { return (.onlinePIN, [0x02, 0x00, 0x00]) }
            if ctq[0] & 0x40 != 0 && signatureSupported { return (.signature, [0x1E, 0x00, 0x00]) }
            if ctq[0] & 0xC0 != 0 || cvmRequired { return failed }
            return (.noCVM, [0x1F, 0x00, 0x02])
        }
        guard cvmRequired else { return (.noCVM, [0x1F, 0x00, 0x02]) }
        if signatureSupported { return (.signature, [0x1E, 0x00, 0x00]) }
        if onlinePINPossible { return (.onlinePIN, [0x02, 0x00, 0x00]) }
        return failed
    }
}
