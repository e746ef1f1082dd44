internal import EMVCommon
internal import ProximaCore

// Kernel 6, Discover D-PAS (EMV Contactless Book C-6). What this flow rests on: the public descriptions of C-6
// (the normative text was not in reach) — D-PAS contactless is built like Visa qVSDC: the PDOL asks for the TTQ
// (9F66) and transaction data, GET PROCESSING OPTIONS answers format 2 with AIP, AFL and the cryptogram (9F26, 9F27,
// 9F36, 9F10), the records carry the rest; the card's Card Processing Requirements (9F71) ask for a CVM with the
// layout of Visa's CTQ (byte 1 b8 online PIN, b7 signature, b6 go online if ODA fails; byte 2 b8 CDCVM performed),
// which is an assumption of this implementation; an offline approval needs fDDA (9F4B with 9F69), as Kernel 3.
// Mag-stripe mode (D-PAS "MS") is not implemented.

extension PaymentSession {
    mutating func dPAS(_ application: EMVApplication, options: ProcessingOptions, card: CardDataStore) throws
        -> KernelResult
    {
        // 9F71, the Card Processing Requirements, read with the layout of Visa's CTQ (see above).
        try cryptogramFromProcessingOptions(application, options: options, card: card, qualifiers: 0x9F71, "D-PAS")
    }
}
