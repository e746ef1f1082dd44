internal import EMVCommon
package import ProximaCore

/// The EMV data objects a payment processor needs to authorise the transaction (EMV Book 4 §12.2, "online
/// request"): track 2 equivalent data, PAN, expiry, cryptogram and its inputs, terminal and transaction data.
///
/// This is card data: it leaves the kernel only encrypted to the processor. Its `description`, debug description
/// and reflection show tag names and counts only, never a value.
package struct EMVCardData: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The data objects by tag: those of ``processorTags`` that the card and terminal provided.
    package var tags: [TLVTag: [UInt8]]
    /// The records the AFL flagged for offline data authentication, concatenated as EMV Book 3 §10.3 builds the
    /// static data to be authenticated (record template `70` excluded for SFI 1–10), followed by the AIP when the
    /// card's SDA Tag List (`9F4A`) asks for it. This terminal performs no offline data authentication; the bytes
    /// are kept for a processor or a later CDA/fDDA step.
    package var offlineAuthenticationData: [UInt8]
    /// How many records the AFL flagged for offline data authentication.
    package var offlineAuthenticationRecordCount: Int

    package init(
        tags: [TLVTag: [UInt8]] = [:],
        offlineAuthenticationData: [UInt8] = [],
        offlineAuthenticationRecordCount: Int = 0
    ) {
        self.tags = tags
        self.offlineAuthenticationData = offlineAuthenticationData
        self.offlineAuthenticationRecordCount = offlineAuthenticationRecordCount
    }

    package subscript(tag: TLVTag) -> [UInt8]? { tags[tag] }

    /// The tags collected for the processor, in the order of ``encoded``: `57`, `5A`, `5F24`, `5F34`, `9F26`,
    /// `9F27`, `9F10`, `9F36`, `9F37`, `82`, `84`, `95`, `9A`, `9C`, `9F02`, `5F2A`, `9F1A`, `9F33`, `9F34`,
    /// `9F6E`, `9F7C`, then `9F03`, `9F21`, `9F35`, `9F40`, `9F66`, `9F6C`, `5F36`, and `9F71` (D-PAS Card
    /// Processing Requirements).
    package static let processorTags: [TLVTag] = [
        0x57, 0x5A, 0x5F24, 0x5F34, 0x9F26, 0x9F27, 0x9F10, 0x9F36, 0x9F37, 0x82, 0x84, 0x95, 0x9A, 0x9C, 0x9F02,
        0x5F2A, 0x9F1A, 0x9F33, 0x9F34, 0x9F6E, 0x9F7C, 0x9F03, 0x9F21, 0x9F35, 0x9F40, 0x9F66, 0x9F6C, 0x5F36,
        0x9F71,
    ]

    /// The data objects as BER-TLV, in ``processorTags`` order: what an authorisation message's field 55 carries.
    package var encoded: [UInt8] {
        Self.processorTags.flatMap { tag in tags[tag].map { TLV(tag: tag, value: $0).bytes } ?? [] }
    }

    /// Tag names only.
    package var description: String {
        let present = Self.processorTags.filter { tags[$0] != nil }.map(\.description)
        return "EMVCardData(\(present.count) tags: \(present.joined(separator: " ")); values withheld)"
    }

    package var debugDescription: String { description }

    /// Reflection (`dump`, `Mirror`) sees the masked description only.
    package var customMirror: Mirror { Mirror(self, children: ["summary": description], displayStyle: .struct) }
}
