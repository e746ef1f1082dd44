import Foundation
internal import LoyaltyCapability
internal import PaymentCapability
internal import ProximaCore
internal import Synchronization

/// A request to read loyalty passes (Apple's `VASRequest`): the merchants whose Wallet passes to read, alone
/// (``PaymentCardReaderSession/readVAS(_:)``) or before a payment card in the same tap
/// (``PaymentCardReaderSession/readPaymentCard(_:vasRequest:)``).
///
/// Every merchant's ``Merchant/id`` is a pass type identifier configured with its private keys under
/// `capabilities.loyalty.appleVAS.merchants`, or the Google Smart Tap collector ID of
/// `capabilities.loyalty.smartTap` in decimal. With `smartTap` configured, an Android phone's pass is read on every
/// request and comes back as one more entry whose id is the collector ID, so one request serves both wallets.
public final class VASRequest: Sendable {
    /// A merchant whose pass to read (Apple's `VASRequest.Merchant`).
    public struct Merchant: Hashable, Sendable {
        /// The pass type identifier (`pass.com.example.loyalty`).
        public var id: String
        /// Sent to the phone as the signup URL (`9F29`) for customers without the pass: https, at most 64
        /// characters.
        public var url: URL?
        /// The merchant's name as customers know it.
        public var localizedName: String

        public init(id: String, url: URL? = nil, localizedName: String) {
            self.id = id
            self.url = url
            self.localizedName = localizedName
        }
    }

    public let vasMerchants: [Merchant]
    /// What the passes are, for customers ("Loyalty card").
    public let localizedVASType: String

    /// Apple's initialiser.
    public init(vasMerchants: [Merchant], localizedVASType: String) {
        self.vasMerchants = vasMerchants
        self.localizedVASType = localizedVASType
    }

    /// One merchant, as the usage sketch writes it: `merchantIdentifier` is the pass type identifier and
    /// `localizedDescription` both the merchant's name and the pass type's.
    public convenience init(merchantIdentifier: String, localizedDescription: String) {
        self.init(
            vasMerchants: [Merchant(id: merchantIdentifier, localizedName: localizedDescription)],
            localizedVASType: localizedDescription
        )
    }

    var merchantRequests: [VASMerchantRequest] {
        vasMerchants.map { VASMerchantRequest(passTypeIdentifier: $0.id, signupURL: $0.url?.absoluteString) }
    }
}

/// What a loyalty read returned (Apple's `VASReadResult`): one entry per merchant of the request, in its order.
public struct VASReadResult: Hashable, Sendable, Identifiable, CustomStringConvertible {
    /// One merchant's pass (Apple's `VASReadResult.ReadEntry`).
    public struct ReadEntry: Hashable, Sendable, Identifiable, CustomStringConvertible {
        /// How the phone answered for this merchant (Apple's `ReadEntry.Status`; the wire status words are in
        /// `Plugins/Capabilities/Loyalty/Model/VASModels.swift`).
        public enum Status: String, Hashable, Sendable, CaseIterable {
            case success, vasDataNotFound, vasDataNotActivated, wrongP1P2, wrongCommandLength
            case userInterventionRequired, incorrectData, unsupportedApplicationVersion
        }

        /// The merchant: the pass type identifier (Apple VAS), or the collector ID in decimal (Google Smart Tap).
        public let id: String
        /// The customer's pass data, decrypted (a loyalty number, usually UTF-8); only for ``Status/success``.
        /// Handed to the app on purpose: Proxima never logs it, and ``description`` shows only its length.
        public let customerVASData: Data?
        public let status: Status

        init(_ entry: VASEntry) {
            id = entry.passTypeIdentifier
            customerVASData = entry.message.map { Data($0) }
            status = Status(rawValue: entry.status.rawValue) ?? .incorrectData
        }

        public var description: String {
            "\(id) \(status.rawValue)" + (customerVASData.map { " (\($0.count) bytes)" } ?? "")
        }
    }

    /// A read id, for logs and support.
    public let id: String
    public let entries: [ReadEntry]

    init(_ outcome: VASOutcome) {
        id = RandomUUID.lowercasedString()
        entries = outcome.entries.map(ReadEntry.init)
    }

    public var description: String {
        "VASReadResult(\(id), " + entries.map(\.description).joined(separator: "; ") + ")"
    }
}

/// The reader's loyalty service, made once (its keys loaded once) on first use. `Sendable`: its one value sits
/// behind a `Mutex`.
final class LoyaltyServiceCache: Sendable {
    private let service = Mutex<Result<LoyaltyService, LoyaltyError>?>(nil)

    func resolve(_ payment: PaymentService) throws(LoyaltyError) -> LoyaltyService {
        let result = service.withLock { cached in
            if let cached { return cached }
            let made = Result { () throws(LoyaltyError) in
                try LoyaltyService(kernel: payment.kernel, lane: payment.lane, now: payment.now)
            }
            cached = made
            return made
        }
        return try result.get()
    }
}
