public import EMVCommon
public import ProximaCore

/// What the card-identity capability learned: enough to tell cards apart and route them, no card data.
public struct CardIdentity: Hashable, Sendable {
    public var technology: CardTechnology
    /// Length of the anti-collision UID (4, 7 or 10 bytes for Type A; random 4-byte UIDs start with 08).
    public var uidLength: Int
    /// The PPSE answer's status word (`6A82` when the card has no contactless payment directory).
    public var directoryStatus: StatusWord
    /// Applications from the PPSE directory, highest priority first; unprioritised ones keep directory order
    /// after them.
    public var applications: [PaymentDirectory.Entry]
}

/// Reads a card's identity: its technology and UID length from the channel, and the contactless payment
/// directory (SELECT `2PAY.SYS.DDF01`, EMV Contactless Book B §3.3) with each application's AID, label and
/// priority. The directory is parsed by the shared EMV module's ``PaymentDirectory``, so payment and identity read it alike.
///
/// A wiring check for new readers, and the exchange for cards that are not payment cards.
public struct CardIdentityCapability: Capability {
    public struct Request: Sendable {
        public init() {}
    }
    public typealias Output = CardIdentity

    public let identifier: CapabilityID = "identity"
    public let requirements = CapabilityRequirements()

    public init() {}

    /// - Throws: `PaymentError.cardReadFailed` at step `SELECT PPSE` for a malformed directory or an unexpected
    ///   status; transport errors as `ProximaError`.
    public func run(_ request: Request, on channel: any CardChannel, context: TapContext) async throws -> CardIdentity {
        let select = try CommandAPDU(
            cla: 0x00,
            ins: 0xA4,
            p1: 0x04,
            p2: 0x00,
            data: PaymentDirectory.name,
            expectedLength: 256
        )
        let response = try await channel.transceive(select)
        var applications: [PaymentDirectory.Entry] = []
        if response.status.isSuccess {
            let directory: PaymentDirectory
            do {
                directory = try PaymentDirectory(fci: response.data)
            } catch let error as PaymentError {
                throw error.at(reader: context.reader)
            }
            applications = directory.prioritizedEntries
        } else if response.status != .fileNotFound && response.status != .functionNotSupported {
            throw PaymentError(
                .cardReadFailed,
                step: "SELECT PPSE",
                "unexpected status \(response.status)",
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
}
