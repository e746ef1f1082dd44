package import EMVCommon
internal import ProximaCore

/// One combination of the reader (EMV Book B §3.3.2.5, "Combinations" of AID and kernel): the applications it
/// accepts, the kernel it runs for them, and that combination's own limits and TTQ (Book B §3.1, Table 3-1
/// "Entry Point Configuration Data"). The manifest's `capabilities.payment.applications` lists them.
package struct TerminalApplication: Hashable, Sendable, CustomStringConvertible {
    /// The AID, or with ``partialSelection`` a prefix of the AIDs it matches (EMV Book 1 §12.3.1).
    package var identifier: [UInt8]
    /// The kernel this terminal runs for those AIDs.
    package var kernel: EMVKernel
    /// Whether a card AID longer than ``identifier`` that starts with it matches (Application Selection
    /// Indicator, Book B §3.3.2.5 B): `A000000003` then matches every Visa AID. When `false` only the exact AID
    /// matches.
    package var partialSelection: Bool
    /// A name for messages and the app (`CB`); empty: the card's label or the brand.
    package var label: String
    /// The reader limits of this combination per transaction currency, by ISO 4217 numeric code.
    package var limits: [Int: ReaderLimits]
    /// Terminal Transaction Qualifiers (`9F66`, 4 bytes) of this combination; `nil` uses the terminal's
    /// (``TerminalSettings/terminalTransactionQualifiers``). Book B §3.1.1.2 clears byte 2 bits 8–7 and sets them
    /// again per transaction.
    package var terminalTransactionQualifiers: [UInt8]?
    /// Status Check Support flag (Book B §3.1.1.3): a purchase of one unit of the currency asks for an online
    /// cryptogram.
    package var statusCheckSupported: Bool
    /// Zero Amount Allowed flag (Book B §3.1.1.4); `false` makes a zero-amount card check not allowed here.
    package var zeroAmountAllowed: Bool
    /// The acquirer's Terminal Action Codes for this combination (Book 3 §10.7), used by the kernels that ask for
    /// their cryptogram with GENERATE AC (2, 4, 5); ``TerminalActionCodes/conservative`` when not configured.
    package var actionCodes: TerminalActionCodes = .conservative

    package init(
        identifier: [UInt8],
        kernel: EMVKernel,
        partialSelection: Bool = true,
        label: String = "",
        limits: [Int: ReaderLimits] = [:],
        terminalTransactionQualifiers: [UInt8]? = nil,
        statusCheckSupported: Bool = false,
        zeroAmountAllowed: Bool = true
    ) {
        self.identifier = identifier
        self.kernel = kernel
        self.partialSelection = partialSelection
        self.label = label
        self.limits = limits
        self.terminalTransactionQualifiers = terminalTransactionQualifiers
        self.statusCheckSupported = statusCheckSupported
        self.zeroAmountAllowed = zeroAmountAllowed
    }

    /// Whether the card's AID is one of this combination's.
    package func matches(_ aid: [UInt8]) -> Bool {
        partialSelection ? aid.starts(with: identifier) : aid == identifier
    }

    /// Every implemented kernel on its scheme's AIDs (``KernelImplementation/all``): what the terminal accepts
    /// when the manifest lists no `applications`.
    package static var defaults: [TerminalApplication] { KernelImplementation.all.flatMap(\.defaultApplications) }

    package var description: String {
        (label.isEmpty ? "" : "\(label) ") + "\(identifier.hexString)\(partialSelection ? "…" : "") → \(kernel)"
    }
}

/// The reader limits of one combination in one currency (EMV Book B §3.1, Table 3-1), in minor units; `nil`
/// where not configured.
package struct ReaderLimits: Hashable, Sendable {
    /// Reader Contactless Transaction Limit: at or above it the combination is not allowed (§3.1.1.5).
    package var contactlessTransaction: Int64?
    /// Reader CVM Required Limit: at or above it a CVM is required (§3.1.1.8).
    package var cvmRequired: Int64?
    /// Reader Contactless Floor Limit: above it the transaction goes online (§3.1.1.6).
    package var floor: Int64?

    package init(contactlessTransaction: Int64? = nil, cvmRequired: Int64? = nil, floor: Int64? = nil) {
        self.contactlessTransaction = contactlessTransaction
        self.cvmRequired = cvmRequired
        self.floor = floor
    }
}

/// The Entry Point Pre-Processing Indicators of one combination for one transaction (EMV Book B §3.1.1), and the
/// TTQ copy they produce.
package struct EntryPointIndicators: Hashable, Sendable, CustomStringConvertible {
    /// The amount is one unit of the currency and the combination supports status check (§3.1.1.3).
    package var statusCheckRequested = false
    /// Amount, Authorised is zero and the combination allows it (§3.1.1.4).
    package var zeroAmount = false
    /// Amount, Authorised reaches the Reader Contactless Transaction Limit (§3.1.1.5).
    package var contactlessTransactionLimitExceeded = false
    /// The combination may not run this transaction: the limit above, a zero amount it does not allow, or a zero
    /// amount on an offline-only reader (§3.1.1.4, §3.1.1.5, §3.1.1.11).
    package var contactlessApplicationNotAllowed = false
    /// Amount, Authorised is above the Reader Contactless Floor Limit (§3.1.1.6).
    package var floorLimitExceeded = false
    /// Amount, Authorised reaches the Reader CVM Required Limit (§3.1.1.8).
    package var cvmRequiredLimitExceeded = false
    /// The Copy of TTQ with byte 2 bit 8 (online cryptogram required) and bit 7 (CVM required) set per
    /// §3.1.1.9–§3.1.1.12.
    package var terminalTransactionQualifiers: [UInt8] = [0, 0, 0, 0]
    /// The limits that applied (those of the transaction currency).
    package var limits = ReaderLimits()

    package init() {}

    package var description: String {
        var set: [String] = []
        if statusCheckRequested { set.append("status check requested") }
        if zeroAmount { set.append("zero amount") }
        if contactlessTransactionLimitExceeded { set.append("contactless transaction limit exceeded") }
        if contactlessApplicationNotAllowed { set.append("contactless application not allowed") }
        if floorLimitExceeded { set.append("floor limit exceeded") }
        if cvmRequiredLimitExceeded { set.append("CVM required limit exceeded") }
        return (set.isEmpty ? "none" : set.joined(separator: ", ")) + ", TTQ \(terminalTransactionQualifiers.hexString)"
    }
}
