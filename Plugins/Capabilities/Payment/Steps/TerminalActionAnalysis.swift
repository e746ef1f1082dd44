internal import EMVCommon
internal import ProximaCore

// Terminal risk management and terminal action analysis for the kernels whose cryptogram comes from GENERATE AC
// (Kernels 2, 4 and 5): the TVR bits of EMV Book 3 §10.4.3 (application dates) and §10.6.1 (floor limit), then
// §10.7, which decides the cryptogram the terminal asks for — AAC, ARQC, or a TC that lets the card approve offline.
// An offline approval still needs CDA to succeed on the card's answer (Steps/Outcome.swift); without CDA the
// default action codes below send the transaction online ("offline data authentication was not performed").

/// The acquirer's Terminal Action Codes of one combination (EMV Book 3 §10.7), 5 bytes each, bit for bit over the
/// TVR (`95`): a TVR bit set in `denial` declines offline, in `online` sends the transaction online, in
/// `defaultAction` declines when the terminal cannot go online. Manifest: the combination's `terminalActionCodes`.
package struct TerminalActionCodes: Hashable, Sendable {
    package var denial: [UInt8]
    package var online: [UInt8]
    package var defaultAction: [UInt8]

    package init(denial: [UInt8], online: [UInt8], defaultAction: [UInt8]) {
        self.denial = denial
        self.online = online
        self.defaultAction = defaultAction
    }

    /// The codes of a combination the manifest gives none: never decline on the terminal's own account, and treat
    /// every TVR bit as a reason to go online (or to decline offline). An offline approval is then asked for only
    /// with a clean TVR: below the floor limit, CDA possible, the application in its dates, the CVM successful.
    /// Acquirers publish their own codes; they belong in the manifest.
    package static let conservative = TerminalActionCodes(
        denial: [0x00, 0x00, 0x00, 0x00, 0x00],
        online: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
        defaultAction: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
    )
}

extension PaymentSession {
    /// The TVR before GENERATE AC (Book 3 §10.4.3, §10.6.1): "offline data authentication was not performed"
    /// until CDA says otherwise, "expired application" (`5F24` before the transaction date), "application not
    /// yet effective" (`5F25` after it) and "transaction exceeds floor limit" (Entry Point's indicator).
    mutating func terminalRiskManagement(_ candidate: Candidate, card: CardDataStore) {
        terminalData[0x95] = [0x80, 0x00, 0x00, 0x00, 0x00]
        if let today = terminalData[0x9A] {
            if let expiry = card[0x5F24], expiry.count == 3, expiry.lexicographicallyPrecedes(today) {
                setTVR(byte: 1, setting: 0x40)  // expired application
            }
            if let effective = card[0x5F25], effective.count == 3, today.lexicographicallyPrecedes(effective) {
                setTVR(byte: 1, setting: 0x20)  // application not yet effective
            }
        }
        if candidate.indicators.floorLimitExceeded { setTVR(byte: 3, setting: 0x80) }  // exceeds floor limit
    }

    /// Terminal action analysis (Book 3 §10.7) on the TVR as it stands, with the combination's action codes and the
    /// card's Issuer Action Codes (`9F0E` denial, `9F0F` online, `9F0D` default; absent or malformed: denial all
    /// zeros, the other two all ones, as §10.7 prescribes for absent codes):
    ///
    /// 1. a TVR bit in TAC-Denial or IAC-Denial: AAC;
    /// 2. a reader that can go online: a status check or a zero amount (Entry Point, Book B §3.1.1.3–4), or a TVR
    ///    bit in TAC-Online or IAC-Online: ARQC; otherwise TC. The floor limit counts through its TVR bit, as the
    ///    codes weigh it (Book C-2), not through Entry Point's TTQ copy, which Kernels 3, 6 and 7 read;
    /// 3. an offline-only reader: a TVR bit in TAC-Default or IAC-Default: AAC; otherwise TC.
    func terminalActionAnalysis(_ candidate: Candidate, card: CardDataStore) -> CryptogramType {
        let tvr = terminalData[0x95] ?? [0, 0, 0, 0, 0]
        let codes = candidate.combination.actionCodes
        func issuerCode(_ tag: TLVTag, absent: UInt8) -> [UInt8] {
            guard let value = card[tag], value.count == 5 else { return Array(repeating: absent, count: 5) }
            return value
        }
        func matches(_ terminal: [UInt8], _ issuer: [UInt8]) -> Bool {
            zip(tvr, zip(terminal, issuer)).contains { bits, codes in bits & (codes.0 | codes.1) != 0 }
        }
        if matches(codes.denial, issuerCode(0x9F0E, absent: 0x00)) { return .aac }
        if readerIsOnlineCapable {
            if candidate.indicators.statusCheckRequested || candidate.indicators.zeroAmount { return .arqc }
            return matches(codes.online, issuerCode(0x9F0F, absent: 0xFF)) ? .arqc : .tc
        }
        return matches(codes.defaultAction, issuerCode(0x9F0D, absent: 0xFF)) ? .aac : .tc
    }
}
