import Foundation
internal import PaymentCapability
internal import ProximaCore
package import StoreAndForwardCapability
internal import Synchronization

/// A session that reads payment cards while the processor cannot be reached, and stores each read durably until
/// a batch of them is forwarded (Apple's `StoreAndForwardPaymentCardReaderSession`, iOS 18.4).
///
/// Make it with ``PaymentCardReader/prepareStoreAndForward()`` after an online ``PaymentCardReaderSession`` was
/// prepared, or with ``init(reader:token:)`` and ``prepare()`` (the usage sketch's form). Each read is checked
/// against `capabilities.storeAndForward`'s limits, sealed to the processor inside the tap as online, signed by
/// the store key and committed to the store in the kernel's data directory before the call returns.
/// Forward the reads with ``PaymentCardReaderStore``.
public final class StoreAndForwardPaymentCardReaderSession: Sendable {
    public let reader: PaymentCardReader
    /// A session id, for logs and support.
    public var id: String { state.withLock { $0.offline?.id } ?? preparedID }
    private let preparedID = RandomUUID.lowercasedString()
    private let token: PaymentCardReader.Token?

    private struct State: Sendable {
        var merchant: VerifiedReaderToken?
        var offline: OfflineSession?
    }

    private let state: Mutex<State>

    /// A session on `reader` for the merchant of `token` (the usage sketch's form); call ``prepare()`` next.
    ///
    /// - Throws: ``PaymentCardReaderError`` — `notAllowed`, `emptyReaderToken`, `invalidReaderToken`,
    ///   `tokenExpired`.
    public init(reader: PaymentCardReader, token: PaymentCardReader.Token) async throws {
        _ = try reader.mapped { try reader.resolvedService().verify(token.rawValue) }
        self.reader = reader
        self.token = token
        state = Mutex(State())
    }

    init(reader: PaymentCardReader, merchant: VerifiedReaderToken) {
        self.reader = reader
        token = nil
        state = Mutex(State(merchant: merchant))
    }

    /// Starts the offline session: the token (or the reader's last online prepare) verified and linked, the
    /// processor reached within `onlineWithinHours`, and a reader of the lane present.
    ///
    /// - Throws: ``PaymentCardReaderError`` — `storeAndForwardNotAllowed` (no or invalid settings, disabled,
    ///   processor not reached recently, token or link refused), `notReady`.
    public func prepare() async throws {
        let service = try reader.storeAndForwardService()
        let offline: OfflineSession
        do {
            if let token {
                offline = try await service.startSession(token: token.rawValue)
            } else if let merchant = state.withLock({ $0.merchant }) {
                offline = try await service.startSession(merchant: merchant)
            } else {
                throw PaymentCardReaderError.storeAndForwardNotAllowed("the session has no merchant")
            }
        } catch {
            throw StoreAndForwardErrorMapping.apiError(error)
        }
        let timeout = reader.options.prepareTimeout
        guard await service.payment.waitUntilReady(pinnedReader: reader.options.pinnedReader, timeout: timeout) else {
            throw PaymentCardReaderError.notReady(
                "no reader of lane \(service.payment.lane) is present and healthy after \(timeout)"
            )
        }
        state.withLock { $0.offline = offline }
    }

    /// Reads a card and stores it for later forwarding.
    ///
    /// - Returns: The result, as online; its ``PaymentCardReadResult/paymentCardData`` is stored already and goes
    ///   to the processor in a batch.
    /// - Throws: ``PaymentCardReaderSession/ReadError`` — `notReady` (not prepared),
    ///   `storeAndForwardLimitExceeded` (the reason names the limit and figures), the read errors of
    ///   ``PaymentCardReaderSession/readPaymentCard(_:)-(PaymentCardTransactionRequest)``;
    ///   ``PaymentCardReaderError/storeAndForwardSessionExpired(_:)``.
    @discardableResult
    public func readPaymentCard(_ request: PaymentCardTransactionRequest) async throws -> PaymentCardReadResult {
        let service = try reader.storeAndForwardService()
        guard let offline = state.withLock({ $0.offline }) else {
            throw PaymentCardReaderSession.ReadError.notReady("the session is not prepared: call prepare() first")
        }
        let reader = self.reader
        let stored: StoredPaymentRead
        do {
            stored = try await service.read(
                PaymentOrder(
                    kind: request.type == .refund ? .refund : .purchase,
                    amount: request.amount,
                    currencyCode: request.currencyCode
                ),
                session: offline,
                slot: reader.readSlot,
                owner: ObjectIdentifier(self),
                options: PaymentReadOptions(
                    pinnedReader: reader.options.pinnedReader,
                    timeout: reader.options.readTimeout
                ),
                onEvent: { reader.emit(PaymentErrorMapping.event($0)) }
            )
        } catch {
            if let event = PaymentErrorMapping.finalEvent(of: error) { reader.emit(event) }
            throw StoreAndForwardErrorMapping.apiError(error)
        }
        reader.emit(.readCompleted)
        return PaymentCardReadResult(stored.read)
    }

    /// The session's expiry and how many successful reads it performed (Apple's `status()`: "the number of
    /// successful reads the framework performed using a Store and Forward session"): this session's reads, not
    /// the store's (that is ``PaymentCardReaderStore/fetchStoredPaymentCardReadResultCount()``). The count is
    /// the store's, kept in the transaction that commits each read: a declined read is not counted; a read
    /// forwarded and resolved since still is.
    /// - Throws: ``PaymentCardReaderSession/ReadError/notReady(_:)`` before ``prepare()``;
    ///   ``PaymentCardReaderError/storeAndForwardSessionInvalidated(_:)`` when the store has no record of it.
    public func status() async throws -> StoreAndForwardStatus {
        guard let offline = state.withLock({ $0.offline }) else {
            throw PaymentCardReaderSession.ReadError.notReady("the session is not prepared: call prepare() first")
        }
        let service = try reader.storeAndForwardService()
        do {
            let record = try await service.status(of: offline)
            return StoreAndForwardStatus(expiration: record.expiresAt, readCount: record.readCount)
        } catch {
            throw StoreAndForwardErrorMapping.apiError(error)
        }
    }

    /// Removes the session's last read from the store: within 60 s of the read and before it is batched (Apple's
    /// `decline()`).
    /// - Throws: ``PaymentCardReaderSession/ReadError`` `storeAndForwardDeclineFailed`,
    ///   `storeAndForwardResultNotFound`.
    public func decline() async throws {
        let service = try reader.storeAndForwardService()
        guard let offline = state.withLock({ $0.offline }) else {
            throw PaymentCardReaderSession.ReadError.storeAndForwardResultNotFound("the session is not prepared")
        }
        do {
            _ = try await service.declineLast(session: offline.id)
        } catch {
            throw StoreAndForwardErrorMapping.apiError(error)
        }
    }
}

/// An offline session's status (Apple's `StoreAndForwardStatus`).
public struct StoreAndForwardStatus: Hashable, Sendable {
    /// After this the session's reads throw ``PaymentCardReaderError/storeAndForwardSessionExpired(_:)``.
    public let expiration: Date
    /// Successful reads this session stored (declined ones not counted; resolved ones still counted).
    public let readCount: Int
}

extension PaymentCardReader {
    /// An offline session for the merchant of this reader's last online prepare (Apple's
    /// `prepareStoreAndForward()`): a store-and-forward session needs a prior online session.
    ///
    /// - Throws: ``PaymentCardReaderError/storeAndForwardNotAllowed(_:)`` without a prior online prepare, without
    ///   valid settings, or when the processor was not reached within `onlineWithinHours`; `notReady`.
    public func prepareStoreAndForward() async throws -> StoreAndForwardPaymentCardReaderSession {
        guard let merchant = storeAndForward.lastOnlineMerchant else {
            throw PaymentCardReaderError.storeAndForwardNotAllowed(
                "no online session was prepared on this reader: prepare a PaymentCardReaderSession with a "
                    + "processor token first"
            )
        }
        let session = StoreAndForwardPaymentCardReaderSession(reader: self, merchant: merchant)
        try await session.prepare()
        return session
    }

    /// The store of this reader's kernel (Apple's `fetchPaymentCardReaderStore()`).
    /// - Throws: ``PaymentCardReaderStore/StoreError/notAllowed(_:)`` without valid settings or store.
    public func fetchPaymentCardReaderStore() throws -> PaymentCardReaderStore {
        do {
            return PaymentCardReaderStore(service: try storeAndForwardService())
        } catch {
            throw StoreAndForwardErrorMapping.storeError(error)
        }
    }

    /// The store-and-forward service of this reader's kernel and lane, made once.
    package func storeAndForwardService() throws -> StoreAndForwardService {
        try storeAndForward.service { () throws -> StoreAndForwardService in
            let payment = try resolvedService()
            do {
                return try StoreAndForwardService(payment: payment)
            } catch {
                throw StoreAndForwardErrorMapping.apiError(error)
            }
        }
    }
}

/// A reader's store-and-forward state: its service, made on first use, and the merchant of its last online
/// prepare. `Sendable`: its values sit behind a `Mutex`.
final class StoreAndForwardState: Sendable {
    private struct Values: Sendable {
        var service: StoreAndForwardService?
        var merchant: VerifiedReaderToken?
    }

    private let values = Mutex(Values())

    init() {}

    func recordOnlinePrepare(_ merchant: VerifiedReaderToken) { values.withLock { $0.merchant = merchant } }

    var lastOnlineMerchant: VerifiedReaderToken? { values.withLock { $0.merchant } }

    func service(_ make: () throws -> StoreAndForwardService) throws -> StoreAndForwardService {
        if let service = values.withLock({ $0.service }) { return service }
        let service = try make()
        values.withLock { $0.service = $0.service ?? service }
        return service
    }
}
