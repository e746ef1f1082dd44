internal import EMVCommon
internal import ProximaCore

// Kernel 5, JCB J/Speedy in EMV mode (EMV Contactless Book C-5). What this flow rests on: the public descriptions
// of C-5 (the normative text was not in reach): the PDOL asks for the Terminal Compatibility Indicator (9F52) and
// the Terminal Interchange Profile (9F53) besides the usual transaction data; GPO answers AIP and AFL (EMV mode);
// the records carry CDOL1, the CVM List and the ODA data; GENERATE AC asks for the cryptogram terminal action
// analysis chooses (Steps/TerminalActionAnalysis.swift), with CDA when the AIP says the card supports it; a TC
// approves offline only when CDA succeeds. The card's Cardholder Verification Status (9F50) is not
// interpreted: CVM is the CVM List by EMV Book 3 §10.5 at or above the reader CVM required limit. Legacy
// (mag-stripe) mode and issuer update processing are not implemented; 9F52 says EMV mode only.

enum JCBKernel {
    /// 9F52: b2 "EMV mode supported" only (no mag-stripe/legacy mode).
    static let terminalCompatibilityIndicator: UInt8 = 0x02
}

extension PaymentSession {
    /// 9F53, Terminal Interchange Profile (Book C-5): byte 1 b8 "CVM required" at or above the reader CVM required
    /// limit, b7 signature supported, b6 online PIN supported, b5 on-device CVM supported; byte 2 b8 "online
    /// capable"; byte 3 RFU.
    func jcbTerminalInterchangeProfile() -> [UInt8] {
        var byte1: UInt8 = 0x10
        if let limit = settings.cvmRequiredLimit, transaction.amountAuthorised >= limit { byte1 |= 0x80 }
        if settings.supportsSignature { byte1 |= 0x40 }
        if settings.supportsOnlinePIN { byte1 |= 0x20 }
        return [byte1, 0x80, 0x00]
    }
}
