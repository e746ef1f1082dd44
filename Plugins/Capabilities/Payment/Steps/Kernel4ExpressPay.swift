internal import EMVCommon
internal import ProximaCore

// Kernel 4, American Express ExpressPay in EMV mode (EMV Contactless Book C-4). What this flow rests on: the
// public descriptions of C-4 (the normative text was not in reach): Entry Point hands over the AID; the PDOL may ask
// for the Enhanced Contactless Reader Capabilities (9F6E, 4 bytes) the reader sends; GPO answers AIP and AFL; the
// records carry CDOL1, the CVM List and the ODA data; one GENERATE AC gives the cryptogram ("partial online"), for
// the type terminal action analysis chooses (Steps/TerminalActionAnalysis.swift), with CDA when AIP byte 1 bit 1
// says the card supports it; a TC approves offline only when CDA succeeds; the CVM List is
// processed by EMV Book 3 §10.5 at or above the reader CVM required limit. Mag-stripe mode, the second GENERATE AC
// after an online response ("full online") and Delayed Authorisation are not implemented, and the 9F6E coding below
// says so to the card.

extension PaymentSession {
    /// 9F6E, Enhanced Contactless Reader Capabilities (Book C-4): byte 1 `38` = EMV full online mode not
    /// supported (b6), EMV partial online supported (b5), mobile supported (b4), no contact, no mag-stripe mode;
    /// byte 2 the CVMs (b8 mobile CVM, b7 online PIN, b6 signature, from Terminal Capabilities); byte 3 b7 "CVM
    /// required" at or above the reader CVM required limit, b8 "offline only" clear; byte 4 `03` the kernel version
    /// (C-4 2.x).
    func expressPayReaderCapabilities() -> [UInt8] {
        var cvms: UInt8 = 0x80
        if settings.supportsOnlinePIN { cvms |= 0x40 }
        if settings.supportsSignature { cvms |= 0x20 }
        var byte3: UInt8 = 0x00
        if let limit = settings.cvmRequiredLimit, transaction.amountAuthorised >= limit { byte3 |= 0x40 }
        return [0x38, cvms, byte3, 0x03]
    }
}
