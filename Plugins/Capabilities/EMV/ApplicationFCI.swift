package import ProximaCore

/// The FCI of a selected application (EMV Book 1 §11.3.4 Table 45): `6F` { `84` DF Name, `A5` { `50` label,
/// `87` priority, `9F38` PDOL, `5F2D` language, `BF0C` … } }.
package struct ApplicationFCI: Hashable, Sendable {
    /// DF Name (`84`).
    package var dedicatedFileName: [UInt8]
    /// Processing Options Data Object List (`9F38`); `nil` when the card asks for nothing.
    package var processingOptionsDOL: DataObjectList?

    /// The most PDOL data that fits GET PROCESSING OPTIONS in a short APDU: `83 L` plus L bytes within Lc 255.
    package static let maximumPDOLLength = 252

    /// - Throws: ``PaymentError/Code/cardReadFailed`` at `step` for a malformed FCI, a DF Name that does not
    ///   match the AID selected, or a malformed or oversized PDOL.
    package init(_ data: [UInt8], selected aid: [UInt8], step: String) throws {
        let template = try CardAnswer.template(data, step: step, expecting: [0x6F], what: "FCI")
        guard let name = template.child(0x84)?.value else {
            throw CardAnswer.failure(step, "FCI has no DF Name (84)")
        }
        guard name.starts(with: aid) else {
            throw CardAnswer.failure(step, "FCI names DF \(name.hexString), not the AID selected")
        }
        guard let proprietary = template.child(0xA5) else {
            throw CardAnswer.failure(step, "FCI has no proprietary template (A5)")
        }
        dedicatedFileName = name
        if let pdol = proprietary.child(0x9F38) {
            do {
                processingOptionsDOL = try DataObjectList(bytes: pdol.value, maximumTotalLength: Self.maximumPDOLLength)
            } catch let error as ProximaError {
                throw CardAnswer.failure(step, "PDOL (9F38): \(error.reason)")
            }
        } else {
            processingOptionsDOL = nil
        }
    }

    /// Whether the PDOL asks for the Terminal Transaction Qualifiers (`9F66`): Kernel 3 needs them (EMV Book B
    /// §3.3.3.6).
    package var requestsTerminalTransactionQualifiers: Bool {
        processingOptionsDOL?.entries.contains { $0.tag == 0x9F66 } ?? false
    }
}
