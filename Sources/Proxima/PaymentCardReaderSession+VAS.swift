import Foundation
internal import LoyaltyCapability
internal import PaymentCapability

extension PaymentCardReaderSession {
    /// Reads loyalty passes alone (Apple's `readVAS(_:)`): one tap, every merchant of `request` asked in turn.
    ///
    /// Checks the token and account link and that ``prepare()`` was called, as a payment read does.
    ///
    /// - Returns: One entry per merchant; a phone without the pass or without VAS gives
    ///   ``VASReadResult/ReadEntry/Status/vasDataNotFound``.
    /// - Throws: ``PaymentCardReaderError`` (`invalidVASMerchants`, token errors, `readerBusy`, …) or ``ReadError``
    ///   (`notReady`, `cardReadFailed` for a malformed answer or a cryptogram refused — unknown key, altered,
    ///   older than `maxCryptogramAgeSeconds` — `timedOut`, `readCancelled`, …).
    public func readVAS(_ request: VASRequest) async throws -> VASReadResult {
        let (payment, loyalty, _) = try checkedServices()
        let reader = self.reader
        do {
            let outcome = try await loyalty.readVAS(
                request.merchantRequests,
                slot: reader.readSlot,
                owner: ObjectIdentifier(self),
                options: readOptions(payment),
                onReadyForTap: { reader.emit(.readyForTap) }
            )
            reader.emit(.readCompleted)
            return VASReadResult(outcome)
        } catch {
            throw mappedReadError(error)
        }
    }

    /// Reads the passes of `vasRequest`, then the payment card, in **one tap** on one reader (the usage sketch's
    /// call): the result's ``PaymentCardReadResult/vasReadResult`` holds the passes.
    ///
    /// - Throws: As ``readPaymentCard(_:)-(PaymentCardTransactionRequest)`` and ``readVAS(_:)``. A payment that
    ///   fails after the passes were read throws the payment's error.
    @discardableResult
    public func readPaymentCard(_ request: PaymentCardTransactionRequest, vasRequest: VASRequest) async throws
        -> PaymentCardReadResult
    {
        let (result, vas) = try await combinedRead(request, vasRequest: vasRequest, stopOnVASResult: false)
        guard var result else {
            throw ReadError.readerServiceError("the combined read ended without a payment")
        }
        result.vasReadResult = vas
        return result
    }

    /// Apple's combined read: the passes, then — unless `stopOnVASResult` is `true` and a pass was read — the
    /// payment card, in one tap on one reader.
    ///
    /// - Returns: The payment result (`nil` when the tap stopped on a pass) and the passes.
    /// - Throws: As ``readPaymentCard(_:vasRequest:)``.
    public func readPaymentCard(
        _ request: PaymentCardTransactionRequest,
        vasRequest: VASRequest,
        stopOnVASResult: Bool
    ) async throws -> (PaymentCardReadResult?, VASReadResult?) {
        let (result, vas) = try await combinedRead(request, vasRequest: vasRequest, stopOnVASResult: stopOnVASResult)
        var withPasses = result
        withPasses?.vasReadResult = vas
        return (withPasses, vas)
    }

    // MARK: Reading

    private func combinedRead(
        _ request: PaymentCardTransactionRequest,
        vasRequest: VASRequest,
        stopOnVASResult: Bool
    ) async throws -> (PaymentCardReadResult?, VASReadResult) {
        let (payment, loyalty, merchant) = try checkedServices()
        let reader = self.reader
        let outcome: VASOutcome
        let read: SealedPaymentRead?
        do {
            (outcome, read) = try await loyalty.readWithPayment(
                vasRequest.merchantRequests,
                stopOnVASResult: stopOnVASResult,
                payment: payment,
                order: PaymentOrder(
                    kind: request.type == .refund ? .refund : .purchase,
                    amount: request.amount,
                    currencyCode: request.currencyCode
                ),
                merchant: merchant,
                slot: reader.readSlot,
                owner: ObjectIdentifier(self),
                options: readOptions(payment),
                onEvent: { reader.emit(PaymentErrorMapping.event($0)) }
            )
        } catch {
            throw mappedReadError(error)
        }
        let result = read.map(PaymentCardReadResult.init)
        reader.emit(result?.outcome == .failure ? .readNotCompleted : .readCompleted)
        return (result, VASReadResult(outcome))
    }

    /// The payment and loyalty services and the merchant after the checks every read makes: token, link,
    /// `prepare()`. As for a payment read, the token's signature was verified when the session began; here only its
    /// time window and the link are checked.
    private func checkedServices() throws -> (PaymentService, LoyaltyService, VerifiedReaderToken) {
        let payment = try reader.resolvedService()
        let earlier = verified.withLock { $0 }
        let merchant = try reader.mapped { try payment.linkedMerchant(token.rawValue, verifiedEarlier: earlier) }
        guard prepared.withLock({ $0 }) else {
            throw ReadError.notReady("the session is not prepared: call prepare() before reading")
        }
        do {
            return (payment, try reader.loyalty.resolve(payment), merchant)
        } catch {
            throw PaymentErrorMapping.apiError(error)
        }
    }

    private func readOptions(_ payment: PaymentService) -> PaymentReadOptions {
        PaymentReadOptions(
            pinnedReader: reader.options.pinnedReader,
            timeout: reader.options.readTimeout,
            includeFailedReads: reader.options.includeErrorInReadResult
        )
    }

    private func mappedReadError(_ error: any Error) -> any Error {
        let mapped = PaymentErrorMapping.apiError(error)
        if PaymentErrorMapping.needsPrepare(mapped) { prepared.withLock { $0 = false } }
        if let event = PaymentErrorMapping.finalEvent(of: error) { reader.emit(event) }
        return mapped
    }
}
