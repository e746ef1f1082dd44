internal import EMVCommon
internal import ProximaCore

// Kernel 7, UnionPay QuickPass qUICS (EMV Contactless Book C-7). What this flow rests on: the public descriptions
// of C-7 (the normative text was not in reach) — qUICS follows Visa qVSDC: the PDOL asks for the TTQ (9F66), amounts,
// currency, date, type and unpredictable number; GET PROCESSING OPTIONS answers format 2 with AIP, AFL and the
// cryptogram; the Card Transaction Qualifiers (9F6C) and the TTQ decide the CVM as Book C-3 §5.7 does; an offline
// approval (TC) needs fDDA over 9F37, 9F02, 5F2A and 9F69; CTQ byte 1 b6 "go online if ODA fails" sends a failed
// one online when the reader can go online. The electronic cash (EC) balance and the UnionPay-specific GET DATA
// are not implemented.

extension PaymentSession {
    mutating func qUICS(_ application: EMVApplication, options: ProcessingOptions, card: CardDataStore) throws
        -> KernelResult
    {
        try cryptogramFromProcessingOptions(application, options: options, card: card, qualifiers: 0x9F6C, "qUICS")
    }
}
