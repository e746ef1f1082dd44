internal import EMVCommon
internal import ProximaCore

extension PaymentSession {
    /// Reads every record of the AFL (EMV Book 3 §10.2) into `card`.
    ///
    /// - Returns: the static data to be authenticated (Book 3 §10.3): flagged records of SFI 1–10 without their
    ///   `70` tag and length, flagged records of SFI 11–30 whole.
    mutating func readRecords(_ afl: ApplicationFileLocator, into card: inout CardDataStore) async throws -> [UInt8] {
        guard afl.recordCount <= EMVPaymentCapability.maximumRecordCount else {
            throw CardAnswer.failure(
                Self.processingOptionsStep,
                "AFL lists \(afl.recordCount) records; at most \(EMVPaymentCapability.maximumRecordCount) are read"
            )
        }
        var oda: [UInt8] = []
        for entry in afl.entries {
            let sfi = entry.shortFileIdentifier
            for record in entry.records {
                let step = "READ RECORD SFI \(sfi) record \(record)"
                try checkCancellation(before: step)
                let command = try CommandAPDU(
                    cla: 0x00,
                    ins: 0xB2,
                    p1: record,
                    p2: sfi << 3 | 0x04,
                    expectedLength: 256
                )
                let response = try await transceive(command, step: step)
                guard response.status == .success else {
                    throw CardAnswer.failure(step, "card answered \(response.status)")
                }
                let objects = try CardAnswer.decodeAll(response.data, step: step)
                let flagged = entry.isForOfflineAuthentication(record)
                if let template = objects.first, template.tag == 0x70, objects.count == 1 {
                    try card.add(ProcessingOptions.primitives(of: template.children), step: step)
                    if flagged { oda += sfi <= 10 ? template.value : response.data }
                } else if sfi <= 10 {
                    // Book 3 §10.2: records of SFI 1–10 are one record template 70.
                    _ = try CardAnswer.template(response.data, step: step, expecting: [0x70], what: "record")
                } else if flagged {
                    oda += response.data
                }
            }
        }
        return oda
    }
}
