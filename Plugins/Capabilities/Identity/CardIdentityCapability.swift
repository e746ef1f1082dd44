public import ProximaCore

/// One application a card lists in its PPSE directory (EMV Book B §3.3, Book 1 §12.2.3).
public struct CardApplication: Hashable, Sendable {
    /// The application identifier (tag 4F).
    public var identifier: [UInt8]
    /// The application label (tag 50), as printable ASCII; empty if absent.
    public var label: String
    /// The application priority indicator (tag 87) low nibble: 1 is highest, `nil` when absent or 0.
    public var priority: Int?
    /// The kernel identifier (tag 9F2A), when present.
    public var kernelIdentifier: [UInt8]?

    public init(identifier: [UInt8], label: String, priority: Int?, kernelIdentifier: [UInt8]? = nil) {
        self.identifier = identifier
        self.label = label
        self.priority = priority
        self.kernelIdentifier = kernelIdentifier
    }
}

/// What the card-identity capability learned: enough to tell cards apart and route them, no card data.
public struct CardIdentity: Hashable, Sendable {
    public var technology: CardTechnology
    /// Length of the anti-collision UID (4, 7 or 10 bytes for Type A; random 4-byte UIDs start with 08).
    public var uidLength: Int
    /// The PPSE answer's status word (`6A82` when the card has no contactless payment directory).
    public var directoryStatus: StatusWord
    /// Applications from the PPSE directory, sorted by priority (highest first, unprioritised last).
    public var applications: [CardApplication]
}

/// Reads a card's identity: its technology and UID length from the channel, and the contactless payment
/// directory (SELECT `2PAY.SYS.DDF01`, EMV Book B §3.3) with each application's AID, label and priority.
///
/// It is the demo's exchange until the payment capability lands, and a wiring check for new readers.
public struct CardIdentityCapability: Capability {
    public struct Request: Sendable {
        public init() {}
    }
    public typealias Output = CardIdentity

    public let identifier: CapabilityID = "identity"
    public let requirements = CapabilityRequirements()

    /// `2PAY.SYS.DDF01`, the Proximity Payment System Environment name.
    public static let ppseName: [UInt8] = Array("2PAY.SYS.DDF01".utf8)

    public init() {}

    public func run(_ request: Request, on channel: any CardChannel, context: TapContext) async throws -> CardIdentity {
        let select = try CommandAPDU(cla: 0x00, ins: 0xA4, p1: 0x04, p2: 0x00, data: Self.ppseName, expectedLength: 256)
        let response = try await channel.transceive(select)
        var applications: [CardApplication] = []
        if response.status.isSuccess {
            applications = try Self.parseDirectory(response.data)
        } else if response.status != .fileNotFound && response.status != .functionNotSupported {
            throw ProximaError(
                .malformedData,
                "SELECT PPSE: unexpected status \(response.status)",
                reader: context.reader
            )
        }
        return CardIdentity(
            technology: channel.technology,
            uidLength: channel.uid.count,
            directoryStatus: response.status,
            applications: applications
        )
    }

    /// Parses a PPSE FCI: `6F` → `A5` → `BF0C` → `61` entries (EMV Book B Table 3-2).
    /// - Throws: `ProximaError.malformedData` naming the step and what is wrong.
    public static func parseDirectory(_ fci: [UInt8]) throws -> [CardApplication] {
        let template: TLV
        do {
            template = try TLV.decode(fci)
        } catch let error as ProximaError {
            throw ProximaError(.malformedData, "SELECT PPSE: \(error.reason)")
        }
        guard template.tag == 0x6F else {
            throw ProximaError(.malformedData, "SELECT PPSE: FCI template 6F expected, found \(template.tag)")
        }
        guard let directory = template.find(path: [0xA5, 0xBF0C]) else {
            throw ProximaError(.malformedData, "SELECT PPSE: FCI has no issuer discretionary data (A5 / BF0C)")
        }
        var applications: [CardApplication] = []
        for (index, entry) in directory.children.enumerated() where entry.tag == 0x61 {
            guard let aid = entry.child(0x4F)?.value, (5...16).contains(aid.count) else {
                throw ProximaError(.malformedData, "SELECT PPSE: directory entry \(index + 1) has no valid AID (4F)")
            }
            let label = entry.child(0x50).map {
                String(decoding: $0.value.filter { (0x20..<0x7F).contains($0) }, as: UTF8.self)
            }
            let priority = entry.child(0x87).flatMap { $0.value.first }.map { Int($0 & 0x0F) }
            applications.append(
                CardApplication(
                    identifier: aid,
                    label: label ?? "",
                    priority: priority == 0 ? nil : priority,
                    kernelIdentifier: entry.child(0x9F2A)?.value
                )
            )
        }
        // Stable sort: priority 1 first; unprioritised entries keep directory order after the others.
        return applications.enumerated().sorted { a, b in
            switch (a.element.priority, b.element.priority) {
            case (let x?, let y?) where x != y: x < y
            case (.some, .none): true
            case (.none, .some): false
            default: a.offset < b.offset
            }
        }.map(\.element)
    }
}
