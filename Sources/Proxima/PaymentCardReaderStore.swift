import Foundation
internal import ProximaCore
internal import ProximaCrypto
internal import StoreAndForwardCapability

/// The reads a ``StoreAndForwardPaymentCardReaderSession`` stored, and their batches (Apple's
/// `PaymentCardReaderStore`).
///
/// One batch is active at a time: fetch it, send its ``StoreAndForwardBatch/data`` (or its JSON) to the
/// processor, then ``resolveBatch(batchDeletionToken:)`` with the deletion token the processor returns — or
/// ``resetBatchState()`` when the transmission failed or its outcome is unknown. Nothing stored is lost, and
/// nothing is deleted without the processor's token for exactly that batch (`Docs/store-and-forward.md`).
///
/// The usage sketch's shape is the same store: ``allBatches()`` is the active batch (made of every stored read
/// when none is active), and ``delete(using:)`` with a batch's ``StoreAndForwardBatch/deletionToken`` handle
/// deletes it only once the processor's token for it has been recorded with ``record(_:)`` — or, where the
/// manifest sets `deletionTokens: "app"`, on the app's word (the weaker mode).
public struct PaymentCardReaderStore: Sendable {
    private let service: Result<StoreAndForwardService, StoreError>

    /// The store of the process-wide default kernel (the usage sketch's `PaymentCardReaderStore()`).
    public init() {
        do {
            self = try PaymentCardReader().fetchPaymentCardReaderStore()
        } catch {
            service = .failure(StoreAndForwardErrorMapping.storeError(error))
        }
    }

    init(service: StoreAndForwardService) { self.service = .success(service) }

    private init(failure: StoreError) { service = .failure(failure) }

    private func call<T>(_ body: (StoreAndForwardService) async throws -> T) async throws -> T {
        let service = try service.get()
        do {
            return try await body(service)
        } catch {
            throw StoreAndForwardErrorMapping.storeError(error)
        }
    }

    /// How many reads are stored (batched or not).
    public func fetchStoredPaymentCardReadResultCount() async throws -> Int {
        try await call { try await $0.store.totals().count }
    }

    /// The oldest `size` stored reads as the active batch, chronological (0 = all).
    /// - Throws: ``StoreError`` `storeAndForwardBatchAlreadyExists` (resolve or reset the active one first),
    ///   `storeAndForwardBatchSizeInvalid` (below 0 or above the count), `storeAndForwardResultsNotFound`,
    ///   `tampered` (a stored row was edited: nothing is batched).
    public func fetchStoredPaymentCardReadResultBatch(size: Int = 0) async throws -> StoreAndForwardBatch {
        try await call { try StoreAndForwardBatch(try await $0.makeBatch(size: size)) }
    }

    /// Detaches the active batch's reads: they stay stored and go into the next batch.
    /// - Throws: ``StoreError/storeAndForwardBatchNotFound(_:)`` when no batch is active.
    public func resetBatchState() async throws {
        _ = try await call { try await $0.resetBatch() }
    }

    /// Deletes the active batch with the processor's deletion token for it.
    /// - Returns: How many reads remain stored.
    /// - Throws: ``StoreError`` `storeAndForwardDeletionTokenInvalid` (forged, another batch, replayed, other
    ///   bytes), `storeAndForwardDeletionTokenExpired`, `storeAndForwardBatchNotFound`; nothing is deleted then.
    @discardableResult
    public func resolveBatch(batchDeletionToken: StoreAndForwardBatchDeletionToken) async throws -> Int {
        guard !batchDeletionToken.rawValue.isEmpty else { return try await delete(using: batchDeletionToken) }
        return try await call { try await $0.resolve(deletionToken: batchDeletionToken.rawValue) }
    }

    // MARK: The usage sketch's shape

    /// The active batch, or a new one of every stored read, or none when nothing is stored.
    public func allBatches() async throws -> [StoreAndForwardBatch] {
        try await call { service in try await service.currentOrNewBatch().map { try StoreAndForwardBatch($0) } }
            .map { [$0] } ?? []
    }

    /// Records the processor's deletion token for the active batch (verified now), so that
    /// ``delete(using:)`` with the batch's handle deletes it.
    /// - Throws: As ``resolveBatch(batchDeletionToken:)``; nothing is deleted.
    public func record(_ processorToken: StoreAndForwardBatchDeletionToken) async throws {
        try await call { try await $0.recordDeletionToken(processorToken.rawValue) }
    }

    /// Deletes a batch: with the processor's token (as ``resolveBatch(batchDeletionToken:)``), or with a batch's
    /// ``StoreAndForwardBatch/deletionToken`` handle once the processor's token was recorded with ``record(_:)``
    /// (or in the manifest's weaker `deletionTokens: "app"` mode).
    /// - Returns: How many reads remain stored.
    /// - Throws: ``StoreError/storeAndForwardDeletionTokenInvalid(_:)`` for a handle whose batch has no processor
    ///   token recorded (processor mode): nothing is deleted.
    @discardableResult
    public func delete(using token: StoreAndForwardBatchDeletionToken) async throws -> Int {
        if !token.rawValue.isEmpty { return try await resolveBatch(batchDeletionToken: token) }
        guard let batchID = token.batchID else {
            throw StoreError.storeAndForwardDeletionTokenInvalid("the deletion token is empty; nothing deleted")
        }
        return try await call { try await $0.delete(batchID: batchID) }
    }
}

/// The processor's deletion token for a batch (Apple's `StoreAndForwardBatchDeletionToken`): an ES256 JWT naming
/// the batch id and the SHA-256 of its bytes (`Docs/store-and-forward-batch.md` §6). A batch's own
/// ``StoreAndForwardBatch/deletionToken`` is a handle with an empty ``rawValue`` naming the batch.
///
/// Its description never shows the token.
public struct StoreAndForwardBatchDeletionToken: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    /// The batch a handle names; `nil` for a processor token (its batch is inside it).
    public let batchID: String?

    public init(rawValue: String) {
        self.rawValue = rawValue
        batchID = nil
    }

    init(handleFor batchID: String) {
        rawValue = ""
        self.batchID = batchID
    }

    public var description: String {
        rawValue.isEmpty
            ? "StoreAndForwardBatchDeletionToken(handle of batch \(batchID ?? "?"))"
            : "StoreAndForwardBatchDeletionToken(\(rawValue.utf8.count) characters, redacted)"
    }
}

/// A batch of stored reads for the processor (Apple's `StoreAndForwardBatch`), signed by the store key.
///
/// ``data`` is the batch container `Docs/store-and-forward-batch.md` specifies byte for byte; the other fields are
/// its parts in base64, as Apple's JSON shape has them (`JSONEncoder` gives `id`, `count`, `payments`,
/// `signature`, `leafCertificate`, `intermediateCertificate`).
public struct StoreAndForwardBatch: Encodable, Identifiable, Hashable, Sendable {
    public let id: String
    public let count: Int
    /// Chronological.
    public let payments: [StoredPaymentCardReadResult]
    /// The batch signature: ECDSA P-256 / SHA-256 over the container's bytes before it, raw `r || s`, base64.
    public let signature: String
    /// The store's self-issued leaf certificate, DER in base64.
    public let leafCertificate: String
    /// Always empty: the store certificate is self-issued (the processor pins it per reader).
    public let intermediateCertificate: [String]
    /// The batch container: what to send the processor.
    public let data: Data
    /// A handle that deletes this batch once the processor's deletion token for it is recorded
    /// (``PaymentCardReaderStore/delete(using:)``).
    public var deletionToken: StoreAndForwardBatchDeletionToken { StoreAndForwardBatchDeletionToken(handleFor: id) }

    private enum CodingKeys: String, CodingKey {
        case id, count, payments, signature, leafCertificate, intermediateCertificate
    }

    init(_ batch: StoredBatch) throws {
        let container: BatchContainer
        do {
            container = try BatchContainer.parse(batch.container)
        } catch {
            throw StoreAndForwardError(.tampered, "the stored batch \(batch.id) does not parse: \(error.reason)")
        }
        id = batch.id
        count = container.entries.count
        payments = container.entries.map {
            StoredPaymentCardReadResult(
                id: $0.record.id,
                generalCardData: Base64.encode($0.body),
                paymentCardData: Base64.encode($0.envelope),
                signature: Base64.encode($0.signature)
            )
        }
        signature = Base64.encode(container.signature)
        leafCertificate = Base64.encode(container.certificate)
        intermediateCertificate = []
        data = Data(batch.container)
    }
}

/// One stored read of a batch (Apple's `StoredPaymentCardReadResult`).
public struct StoredPaymentCardReadResult: Encodable, Identifiable, Hashable, Sendable {
    /// The transaction id (`txn` inside the envelope).
    public let id: String
    /// The signed record body (metadata and masked card, `Docs/store-and-forward-batch.md` §3), base64.
    public let generalCardData: String
    /// The card data envelope sealed to the processor, base64 (as ``PaymentCardReadResult/paymentCardData``).
    public let paymentCardData: String
    /// The record signature: ECDSA P-256 / SHA-256 over `PXR1` and the record body, raw `r || s`, base64.
    public let signature: String
}

extension PaymentCardReaderStore {
    /// Why a store call failed (Apple's `PaymentCardReaderStore.StoreError` case names, plus Proxima's
    /// `storeFailed` and `tampered`). Every case carries a reason naming what and where; equality compares the
    /// case only.
    public enum StoreError: Error, Hashable, Sendable, CustomStringConvertible {
        /// Never thrown by this build (tokens are verified offline); kept for code written against Apple's API.
        case networkError(String)
        /// No valid `capabilities.storeAndForward` or payment settings.
        case notAllowed(String)
        /// Never thrown on Linux; kept for code written against Apple's API.
        case passcodeDisabled(String)
        case storeAndForwardBatchNotFound(String)
        case storeAndForwardResultsNotFound(String)
        case storeAndForwardBatchSizeInvalid(String)
        case storeAndForwardBatchAlreadyExists(String)
        case storeAndForwardDeletionTokenExpired(String)
        case storeAndForwardDeletionTokenInvalid(String)
        /// Another process holds the store's lock; try again.
        case busy(String)
        /// The store could not be opened, read or written.
        case storeFailed(String)
        /// A stored row, batch or the store's certificate does not verify: the database was edited.
        case tampered(String)

        public enum Code: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            case networkError, notAllowed, passcodeDisabled, storeAndForwardBatchNotFound
            case storeAndForwardResultsNotFound, storeAndForwardBatchSizeInvalid, storeAndForwardBatchAlreadyExists
            case storeAndForwardDeletionTokenExpired, storeAndForwardDeletionTokenInvalid, busy, storeFailed, tampered
            public var description: String { rawValue }
        }

        public var code: Code {
            switch self {
            case .networkError: .networkError
            case .notAllowed: .notAllowed
            case .passcodeDisabled: .passcodeDisabled
            case .storeAndForwardBatchNotFound: .storeAndForwardBatchNotFound
            case .storeAndForwardResultsNotFound: .storeAndForwardResultsNotFound
            case .storeAndForwardBatchSizeInvalid: .storeAndForwardBatchSizeInvalid
            case .storeAndForwardBatchAlreadyExists: .storeAndForwardBatchAlreadyExists
            case .storeAndForwardDeletionTokenExpired: .storeAndForwardDeletionTokenExpired
            case .storeAndForwardDeletionTokenInvalid: .storeAndForwardDeletionTokenInvalid
            case .busy: .busy
            case .storeFailed: .storeFailed
            case .tampered: .tampered
            }
        }

        public var reason: String {
            switch self {
            case .networkError(let reason), .notAllowed(let reason), .passcodeDisabled(let reason),
                .storeAndForwardBatchNotFound(let reason), .storeAndForwardResultsNotFound(let reason),
                .storeAndForwardBatchSizeInvalid(let reason), .storeAndForwardBatchAlreadyExists(let reason),
                .storeAndForwardDeletionTokenExpired(let reason), .storeAndForwardDeletionTokenInvalid(let reason),
                .busy(let reason), .storeFailed(let reason), .tampered(let reason):
                reason
            }
        }

        public var errorName: String { code.rawValue }
        public var description: String { reason.isEmpty ? errorName : "\(errorName): \(reason)" }
        public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
        public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    }
}

extension PaymentCardReaderStore.StoreError: LocalizedError {
    public var errorDescription: String? { description }
}
