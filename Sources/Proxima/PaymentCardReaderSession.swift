import Foundation
import PaymentCapability
import ProximaCore
import ProximaCrypto
import ProximaKernel
import Synchronization

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
    private let prepared = Mutex(false)

    /// A session on `reader` for the merchant of `token`.
    ///
    /// - Throws: ``PaymentCardReaderError`` — `notAllowed` (no valid payment settings), `unsupported` (no such
    ///   lane), `emptyReaderToken`, `invalidReaderToken`, `tokenExpired`.
    public init(reader: PaymentCardReader, token: PaymentCardReader.Token) async throws {
        _ = try reader.verify(token, settings: try reader.settings())
        self.reader = reader
        self.token = token
        self.id = UUID().uuidString.lowercased()
    }

    /// Makes the session ready to read: checks the token again, that its merchant is linked, and waits until a
    /// reader of the lane is present (reporting ``PaymentCardReader/Event/updateProgress(_:)``).
    ///
    /// - Throws: ``PaymentCardReaderError`` — token errors, `accountNotLinked` (call
    ///   ``PaymentCardReader/linkAccount(using:)``), `accountLinkingCheckFailed`, `notReady` (no reader of the
    ///   lane became present within ``PaymentCardReader/Options-swift.struct/prepareTimeout``).
    public func prepare() async throws {
        prepared.withLock { $0 = false }
        let binding = try reader.resolvedBinding()
        reader.emit(.updateProgress(1))
        _ = try accountChecked()
        reader.emit(.updateProgress(50))
        guard await reader.waitForLaneReader(binding, timeout: reader.options.prepareTimeout) else {
            reader.emit(.notReady)
            throw PaymentCardReaderError.notReady(
                "no reader of lane \(binding.lane) is present and healthy after \(reader.options.prepareTimeout) "
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
        let merchant = try readyToRead()
        guard let currency = ISO4217Currency(alphabeticCode: request.currencyCode) else {
            throw ReadError.invalidCurrencyCode(
                "\"\(request.currencyCode)\" is not an active ISO 4217 currency code (such as USD, EUR, JPY)"
            )
        }
        let order = ReadOrder(
            kind: request.type == .refund ? .refund : .purchase,
            currency: currency,
            minorUnitAmount: try currency.minorUnitAmount(of: request.amount),
            merchant: merchant
        )
        return try await read(order)
    }

    /// Checks a card without a charge: a zero-amount purchase asking the card for an online cryptogram.
    /// - Throws: As ``readPaymentCard(_:)-(PaymentCardTransactionRequest)``.
    @discardableResult
    public func readPaymentCard(_ request: PaymentCardVerificationRequest) async throws -> PaymentCardReadResult {
        let merchant = try readyToRead()
        guard let currency = ISO4217Currency(alphabeticCode: request.currencyCode) else {
            throw ReadError.invalidCurrencyCode("\"\(request.currencyCode)\" is not an active ISO 4217 currency code")
        }
        return try await read(
            ReadOrder(kind: .verification, currency: currency, minorUnitAmount: 0, merchant: merchant)
        )
    }

    /// Cancels this session's read in progress (Apple's `cancelRead()`); the read throws
    /// ``ReadError/readCancelled(_:)`` unless the card had already been read.
    ///
    /// - Returns: Whether a read of this session was in progress.
    @discardableResult
    public func cancelRead() async throws -> Bool {
        let owner = ObjectIdentifier(self)
        let signal = reader.activeRead.withLock { active -> AsyncStream<Void>.Continuation? in
            guard active?.owner == owner else { return nil }
            active?.cancelRequested = true
            return active?.cancel
        }
        guard let signal else { return false }
        signal.yield()
        return true
    }

    // MARK: Reading

    /// What one read is for, validated.
    struct ReadOrder: Sendable {
        var kind: CardDataEnvelope.Contents.Kind
        var currency: ISO4217Currency
        var minorUnitAmount: Int64
        var merchant: VerifiedReaderToken
    }

    /// What the tap returns.
    struct TapOutput: Sendable {
        var outcome: EMVOutcome
        var context: TapContext
    }

    /// The account checks of a read: settings, token, link. Returns the verified token.
    private func accountChecked() throws(PaymentCardReaderError) -> VerifiedReaderToken {
        let settings = try reader.settings()
        let verified = try reader.verify(token, settings: settings)
        let link = try reader.linkStore().read()
        guard let link, link.covers(verified, readerIdentifier: settings.readerIdentifier) else {
            throw .accountNotLinked(
                link.map {
                    "this kernel links \($0), not merchant \(verified.merchantID) with \(verified.issuer); "
                        + "call relinkAccount(using:) to change it"
                } ?? "merchant \(verified.merchantID) is not linked on this kernel; call linkAccount(using:) first"
            )
        }
        return verified
    }

    private func readyToRead() throws -> VerifiedReaderToken {
        let verified = try accountChecked()
        guard prepared.withLock({ $0 }) else {
            throw ReadError.notReady("the session is not prepared: call prepare() before reading")
        }
        return verified
    }

    private func read(_ order: ReadOrder) async throws -> PaymentCardReadResult {
        let binding = try reader.resolvedBinding()
        let settings = try reader.settings()
        let (cancelSignal, cancelContinuation) = AsyncStream.makeStream(of: Void.self)
        let owner = ObjectIdentifier(self)
        let busy = reader.activeRead.withLock { active -> Bool in
            guard active == nil else { return true }
            active = PaymentCardReader.ActiveRead(owner: owner, cancel: cancelContinuation)
            return false
        }
        guard !busy else {
            throw PaymentCardReaderError.readerBusy(
                "another read is in progress on this reader (lane \(binding.lane)); one read at a time"
            )
        }
        defer {
            reader.activeRead.withLock { $0 = nil }
            cancelContinuation.finish()
        }

        let progress = ReadProgress(reader: reader)
        let captured = CapturedPaymentError()
        let transaction = EMVTransaction(
            amountAuthorised: order.minorUnitAmount,
            currencyCode: order.currency.numericCode,
            currencyExponent: order.currency.minorUnits,
            countryCode: settings.terminal.countryCode,
            type: order.kind == .refund ? .refund : .purchase,
            date: TransactionDate(reader.now(), timeZone: .current)
        )
        let capability = EMVPaymentCapability(settings: settings.terminal) { event, _ in progress.capability(event) }
        let kernel = binding.kernel
        let lane = binding.lane
        let options = TapOptions(
            reader: reader.options.pinnedReader,
            timeout: reader.options.readTimeout,
            onReadyForTap: { _ in progress.readyForTap() }
        )

        enum Ending: Sendable {
            case tapped(Result<TapOutput, any Error>)
            case cancelRequested
        }
        let tapResult: Result<TapOutput, any Error> = await withTaskGroup(of: Ending?.self) { group in
            group.addTask {
                for await _ in cancelSignal { return .cancelRequested }
                return nil
            }
            group.addTask {
                do {
                    let output = try await kernel.tap(lane: lane, options: options) { channel, context in
                        progress.cardDetected()
                        do {
                            let outcome = try await capability.run(transaction, on: channel, context: context)
                            return TapOutput(outcome: outcome, context: context)
                        } catch let error as PaymentError {
                            captured.set(error)
                            throw error
                        }
                    }
                    return .tapped(.success(output))
                } catch {
                    return .tapped(.failure(error))
                }
            }
            var result: Result<TapOutput, any Error> = .failure(CancellationError())
            while let ending = await group.next() {
                switch ending {
                case .tapped(let tapped)?:
                    result = tapped
                    group.cancelAll()
                case .cancelRequested?:
                    group.cancelAll()
                case nil:
                    continue
                }
            }
            return result
        }

        let output: TapOutput
        switch tapResult {
        case .success(let value):
            output = value
        case .failure(let error):
            let cancelRequested = reader.activeRead.withLock { $0?.cancelRequested ?? false }
            let mapped = PaymentErrorMapping.readFailure(
                error,
                capabilityError: captured.value,
                readCancelled: cancelRequested,
                lane: lane
            )
            if PaymentErrorMapping.needsPrepare(mapped) {
                prepared.withLock { $0 = false }
                progress.finish(.notReady)
            } else if let readError = mapped as? ReadError, [.cancelled, .readCancelled].contains(readError.code) {
                progress.finish(.readCancelled)
            } else {
                progress.finish(.readNotCompleted)
            }
            throw mapped
        }
        return try result(of: output, order: order, settings: settings)
    }

    /// The API result of a tap's EMV outcome, or the read error it means.
    private func result(of output: TapOutput, order: ReadOrder, settings: PaymentSettings) throws
        -> PaymentCardReadResult
    {
        let outcome = output.outcome
        let context = output.context
        let failure = PaymentErrorMapping.outcomeFailure(outcome, reader: context.reader, lane: context.lane)
        if let failure, !reader.options.includeErrorInReadResult {
            switch failure.code {
            case .paymentCardDeclined: progress(.readCompleted)
            case .cardReadFailed where outcome.status == .tryAgain: progress(.readRetry)
            default: progress(.readNotCompleted)
            }
            throw failure
        }
        let readAt = reader.now()
        let expiresAt = readAt.addingTimeInterval(TimeInterval(settings.cardDataTTL.components.seconds))
        let transactionID = UUID().uuidString.lowercased()
        let emv = EMVCardData.processorTags.compactMap { tag in
            outcome.cardData.tags[tag].map { TLV(tag: tag, value: $0) }
        }
        var paymentCardData: String?
        if !emv.isEmpty {
            let contents = CardDataEnvelope.Contents(
                transactionID: transactionID,
                kind: order.kind,
                amount: order.currency.format(minorUnitAmount: order.minorUnitAmount),
                currencyCode: order.currency.alphabeticCode,
                merchantID: order.merchant.merchantID,
                readerIdentifier: settings.readerIdentifier,
                lane: context.lane.rawValue,
                device: context.reader.rawValue,
                readAt: readAt,
                expiresAt: expiresAt,
                outcome: outcome.status.rawValue,
                cardholderVerification: outcome.cvm.rawValue,
                emv: emv
            )
            do {
                paymentCardData = Base64.encode(try CardDataEnvelope.seal(contents, to: settings.processorPublicKey))
            } catch {
                progress(.readNotCompleted)
                throw ReadError.readerServiceError(
                    "sealing the card data to the processor key failed [lane \(context.lane)]: \(error)"
                )
            }
        }
        let general: PaymentCardReadResult.GeneralCardData? =
            if let brand = outcome.brand, let lastFour = outcome.lastFourDigits, let expiry = outcome.expiry {
                PaymentCardReadResult.GeneralCardData(
                    brand: brand.description,
                    lastFourDigits: lastFour,
                    expirationMonth: expiry.month,
                    expirationYear: expiry.year
                )
            } else {
                nil
            }
        let readOutcome: PaymentCardReadResult.ReadOutcome =
            switch failure?.code {
            case nil: .success
            case .paymentCardDeclined?: .cardDeclined
            default: .failure
            }
        progress(readOutcome == .failure ? .readNotCompleted : .readCompleted)
        return PaymentCardReadResult(
            id: transactionID,
            paymentCardData: paymentCardData,
            generalCardData: general,
            outcome: readOutcome,
            isPINRequired: outcome.cvm == .onlinePIN && readOutcome == .success,
            applicationTypeIdentifier: outcome.selectedApplicationIdentifier?.hexString,
            lane: context.lane.rawValue,
            device: context.reader.rawValue,
            paymentCardDataExpiresAt: expiresAt
        )
    }

    private func progress(_ event: PaymentCardReader.Event) { reader.emit(event) }
}

/// The `PaymentError` a capability threw inside a tap, kept because the kernel may hand the error on wrapped.
/// `Sendable`: its one value sits behind a `Mutex`.
final class CapturedPaymentError: Sendable {
    private let error = Mutex<PaymentError?>(nil)
    func set(_ value: PaymentError) { error.withLock { $0 = value } }
    var value: PaymentError? { error.withLock { $0 } }
}

/// The events of one read, in order: readyForTap (the kernel's per-tap hook, once this read's reader is leased),
/// then from inside the tap cardDetected, removeCard and pinEntryRequested, then the end of the read.
///
/// `readyForTap` is emitted once, under the lock, and `cardDetected` emits it first if it was somehow missed, so
/// the order holds. `Sendable`: its state sits behind a `Mutex`, and events are yielded under it.
final class ReadProgress: Sendable {
    private let reader: PaymentCardReader
    private let readyForTapSent = Mutex(false)

    init(reader: PaymentCardReader) { self.reader = reader }

    func readyForTap() {
        readyForTapSent.withLock { sent in
            guard !sent else { return }
            sent = true
            reader.emit(.readyForTap)
        }
    }

    func cardDetected() {
        readyForTapSent.withLock { sent in
            if !sent { reader.emit(.readyForTap) }
            sent = true
            reader.emit(.cardDetected)
        }
    }

    func capability(_ event: EMVPaymentEvent) {
        readyForTapSent.withLock { _ in
            switch event {
            case .cardReadCompleted: reader.emit(.removeCard)
            case .pinEntryRequested: reader.emit(.pinEntryRequested)
            case .applicationSelected: break
            }
        }
    }

    func finish(_ event: PaymentCardReader.Event) {
        readyForTapSent.withLock { _ in reader.emit(event) }
    }
}
