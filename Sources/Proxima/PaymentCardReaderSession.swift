import Foundation
internal import PaymentCapability
internal import ProximaCore
internal import Synchronization

/// A session for reading payment cards with a verified processor token (Apple's `PaymentCardReaderSession`).
///
/// Create it with ``init(reader:token:)`` and call ``prepare()``, or use ``PaymentCardReader/prepare(using:)``.
/// One session may read many cards, one at a time. After ``PaymentCardReaderError/backgrounded(_:)`` (the kernel
/// stopped during a read) call ``prepare()`` again.
public final class PaymentCardReaderSession: Sendable {
    public let reader: PaymentCardReader
    /// A session id, for logs and support.
    public let id: String
    let token: PaymentCardReader.Token
    let prepared = Mutex(false)
    /// The token as the session verified it (at init, again in ``prepare()``): reads check only its validity
    /// window and the link, not its signature (`PaymentService.linkedMerchant(_:verifiedEarlier:)`).
    let verified: Mutex<VerifiedReaderToken>

    /// A session on `reader` for the merchant of `token`.
    ///
    /// - Throws: ``PaymentCardReaderError`` — `notAllowed` (no valid payment settings), `unsupported` (no such
    ///   lane), `emptyReaderToken`, `invalidReaderToken`, `tokenExpired`.
    public init(reader: PaymentCardReader, token: PaymentCardReader.Token) async throws {
        let verified = try reader.mapped { try reader.resolvedService().verify(token.rawValue) }
        self.reader = reader
        self.token = token
        self.verified = Mutex(verified)
        self.id = RandomUUID.lowercasedString()
    }

    /// Makes the session ready to read: checks the token again, that its merchant is linked, and waits until a
    /// reader of the lane is present (reporting ``PaymentCardReader/Event/updateProgress(_:)``).
    ///
    /// - Throws: ``PaymentCardReaderError`` — token errors, `accountNotLinked` (call
    ///   ``PaymentCardReader/linkAccount(using:)``), `accountLinkingCheckFailed`, `notReady` (no reader of the
    ///   lane became present within ``PaymentCardReader/Options-swift.struct/prepareTimeout``).
    public func prepare() async throws {
        prepared.withLock { $0 = false }
        let service = try reader.resolvedService()
        reader.emit(.updateProgress(1))
        let merchant = try reader.mapped { try service.linkedMerchant(token.rawValue) }
        verified.withLock { $0 = merchant }
        reader.storeAndForward.recordOnlinePrepare(merchant)
        reader.emit(.updateProgress(50))
        let timeout = reader.options.prepareTimeout
        guard await service.waitUntilReady(pinnedReader: reader.options.pinnedReader, timeout: timeout) else {
            reader.emit(.notReady)
            throw PaymentCardReaderError.notReady(
                "no reader of lane \(service.lane) is present and healthy after \(timeout) "
                    + "(is the kernel running, and are its readers connected?)"
            )
        }
        prepared.withLock { $0 = true }
        reader.emit(.updateProgress(100))
    }

    /// Reads a card for `request` on the reader's lane.
    ///
    /// Checks, in order: the payment settings, the token (it may have expired since ``prepare()``), the account
    /// link, that ``prepare()`` was called, the request (ISO 4217 currency and amount), that no other read runs on
    /// the reader; then it waits for a reader of the lane and a card, runs the EMV transaction, and seals the card
    /// data to the processor (`Docs/card-data-envelope.md`).
    ///
    /// The result is discardable only so that code written against the usage sketch compiles; a read whose
    /// result is dropped sends nothing to the processor.
    ///
    /// - Returns: The result; its ``PaymentCardReadResult/paymentCardData`` goes to the processor.
    /// - Throws: ``PaymentCardReaderError`` (`notAllowed`, token errors, `accountNotLinked`, `readerBusy`,
    ///   `unsupported`, `backgrounded`) or ``ReadError`` (`notReady`, `invalidCurrencyCode`, `invalidAmount`,
    ///   `cancelled`, `readCancelled`, `cardReadFailed`, `cardNotSupported`, `paymentCardDeclined`,
    ///   `readerNotAvailable`, `timedOut`, `readerServiceError`).
    @discardableResult
    public func readPaymentCard(_ request: PaymentCardTransactionRequest) async throws -> PaymentCardReadResult {
        try await read(
            PaymentOrder(
                kind: request.type == .refund ? .refund : .purchase,
                amount: request.amount,
                currencyCode: request.currencyCode
            )
        )
    }

    /// Checks a card without a charge: a zero-amount purchase asking the card for an online cryptogram.
    /// - Throws: As ``readPaymentCard(_:)-(PaymentCardTransactionRequest)``.
    @discardableResult
    public func readPaymentCard(_ request: PaymentCardVerificationRequest) async throws -> PaymentCardReadResult {
        try await read(PaymentOrder(kind: .verification, amount: 0, currencyCode: request.currencyCode))
    }

    /// Cancels this session's read in progress (Apple's `cancelRead()`); the read throws
    /// ``ReadError/readCancelled(_:)`` unless the card had already been read.
    ///
    /// - Returns: Whether a read of this session was in progress.
    @discardableResult
    public func cancelRead() async throws -> Bool {
        reader.readSlot.cancel(owner: ObjectIdentifier(self))
    }

    // MARK: Reading

    /// One read through the payment service; this layer only keeps Apple's `prepare()` rule and maps names.
    private func read(_ order: PaymentOrder) async throws -> PaymentCardReadResult {
        let service = try reader.resolvedService()
        // Token and link first (a token may have expired since prepare()), then the prepare() rule, as Apple orders
        // them. The token was verified when the session began; here only its time window is checked (a token
        // outside it is verified again, which names the reason), then the link.
        let earlier = verified.withLock { $0 }
        let merchant = try reader.mapped { try service.linkedMerchant(token.rawValue, verifiedEarlier: earlier) }
        guard prepared.withLock({ $0 }) else {
            throw ReadError.notReady("the session is not prepared: call prepare() before reading")
        }
        let reader = self.reader
        let read: SealedPaymentRead
        do {
            read = try await service.read(
                order,
                merchant: merchant,
                slot: reader.readSlot,
                owner: ObjectIdentifier(self),
                options: PaymentReadOptions(
                    pinnedReader: reader.options.pinnedReader,
                    timeout: reader.options.readTimeout,
                    includeFailedReads: reader.options.includeErrorInReadResult
                ),
                onEvent: { reader.emit(PaymentErrorMapping.event($0)) }
            )
        } catch {
            let mapped = PaymentErrorMapping.apiError(error)
            if PaymentErrorMapping.needsPrepare(mapped) { prepared.withLock { $0 = false } }
            if let event = PaymentErrorMapping.finalEvent(of: error) { reader.emit(event) }
            throw mapped
        }
        let result = PaymentCardReadResult(read)
        reader.emit(result.outcome == .failure ? .readNotCompleted : .readCompleted)
        return result
    }
}
