internal import EMVCommon
internal import ProximaCore

extension PaymentSession {
    /// Kernel 3 after the records: the cryptogram from the GPO answer, CVM from CTQ and the TTQ that
    /// pre-processing set from the combination's limits (EMV Book C-3 §5.7).
    mutating func quickVSDC(_ input: KernelImplementation.Input, card: CardDataStore) throws
        -> KernelImplementation.Ending
    {
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
        let (cvm, results) = QualifiersCVM.evaluate(
            ctq: card[0x9F6C],
            ttq: input.candidate.indicators.terminalTransactionQualifiers,
            online: type == .arqc
        )
        terminalData[0x9F34] = results
        return .completed(KernelResult(type: type, cvm: cvm))
    }
}
