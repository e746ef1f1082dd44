internal import EMVCommon
package import Foundation
package import ProximaCore
package import ProximaCrypto
package import ProximaKernel
internal import Synchronization

/// What an app's payment request becomes: the token and account checks, the order's validation, the tap on a
/// reader of the lane, the EMV transaction, and the card data sealed to the processor **inside the tap**, so clear
/// card data never leaves this module. The Apple-shaped API (`Proxima`) maps its names onto these calls.
///
/// A value type over a kernel and a lane; cheap to copy. One read at a time per ``PaymentReadSlot``.
package struct PaymentService: Sendable {
    package let kernel: Kernel
    package let lane: LaneID
    package let settings: PaymentSettings
    /// The reader's key, the sender key of every card data envelope (``ReaderKeyStore``).
    package let readerKey: P256.PrivateKey
    /// The reader key with the processor key, prepared once for every envelope this service seals.
    let envelopeKeys: HPKE.AuthenticatedSenderKeys
    /// The wall clock of card data (`readAt`, `expiresAt`), token validity and the transaction date.
    package let now: @Sendable () -> Date
    /// Where `9F37` comes from; the OS CSPRNG unless a test injects one.
    package var unpredictableNumbers: UnpredictableNumberSource = .system

    /// A service for `lane` of `kernel`; `nil` picks the manifest's first lane.
    /// - Throws: ``PaymentServiceError`` `unsupported` (no such lane, no lanes), `notAllowed` (no valid
    ///   `capabilities.payment`).
    package init(kernel: Kernel, lane: LaneID?, now: @escaping @Sendable () -> Date = { Date() })
        throws(PaymentServiceError)
    {
        let lanes = kernel.manifest.lanes.map(\.id)
        guard let chosen = lane ?? lanes.first else {
            throw PaymentServiceError(.unsupported, "the manifest has no lanes")
        }
        guard lanes.contains(chosen) else {
            throw PaymentServiceError(
                .unsupported,
                "lane \"\(chosen)\" is not in the manifest (lanes: \(lanes.map(\.rawValue).joined(separator: ", ")))"
            )
        }
        self.kernel = kernel
        self.lane = chosen
        let settings = try PaymentSettings(manifest: kernel.manifest)
        self.settings = settings
        let readerKey = try ReaderKeyStore(settings: settings, dataDirectory: kernel.manifest.dataDirectory)
            .loadOrCreate()
        self.readerKey = readerKey
        do {
            self.envelopeKeys = try HPKE.AuthenticatedSenderKeys(
                recipientKey: settings.processorPublicKey,
                senderKey: readerKey
            )
        } catch {
            throw PaymentServiceError(
                .sealingFailed,
                "preparing the reader key with the processor key failed: \(error)",
                underlying: error
            )
        }
        self.now = now
    }

    // MARK: Token and account

    /// The token verified against the processor key, issuer, audience and merchant claim.
    package func verify(_ token: String) throws(PaymentServiceError) -> VerifiedReaderToken {
        try ReaderTokenVerifier(settings: settings, now: now).verify(token)
    }

    var linkStore: AccountLinkStore { AccountLinkStore(directory: kernel.manifest.dataDirectory) }

    /// Whether the token's merchant is linked here, with its processor and this reader identifier.
    package func isLinked(_ token: String) throws(PaymentServiceError) -> Bool {
        let verified = try verify(token)
        return try linkStore.read()?.covers(verified, readerIdentifier: settings.readerIdentifier) ?? false
    }

    /// Links the token's merchant; `replacing` allows replacing another linked merchant (Apple's relink).
    /// Linking the linked merchant again does nothing.
    /// - Throws: token errors, `accountAlreadyLinked` (another merchant, without `replacing`),
    ///   `accountLinkingFailed`, `accountLinkingCheckFailed`.
    package func link(_ token: String, replacing: Bool) throws(PaymentServiceError) {
        let verified = try verify(token)
        let store = linkStore
        if !replacing, let existing = try store.read() {
            if existing.covers(verified, readerIdentifier: settings.readerIdentifier) { return }
            throw PaymentServiceError(
                .accountAlreadyLinked,
                "\(store.path) links \(existing); call relinkAccount(using:) to link merchant \(verified.merchantID)"
            )
        }
        try store.write(
            AccountLink(
                merchantID: verified.merchantID,
                processor: verified.issuer,
                readerIdentifier: settings.readerIdentifier,
                linkedAt: now()
            )
        )
    }

    /// The linked account, if any.
    package func linkedAccount() throws(PaymentServiceError) -> AccountLink? { try linkStore.read() }

    /// The token verified and its merchant linked here: what every read checks first.
    /// - Throws: token errors, `accountNotLinked`, `accountLinkingCheckFailed`.
    package func linkedMerchant(_ token: String) throws(PaymentServiceError) -> VerifiedReaderToken {
        try linked(try verify(token))
    }

    /// ``linkedMerchant(_:)`` for a token a session verified earlier (`verified` is what ``verify(_:)`` returned
    /// for `token` with this service): inside the token's validity window (``VerifiedReaderToken/isCurrent(at:)``)
    /// its signature and claims are not checked again; outside it the token goes through the full verification,
    /// which throws the reason (`tokenExpired`, `invalidToken`). The link is checked either way.
    /// - Throws: As ``linkedMerchant(_:)``.
    package func linkedMerchant(_ token: String, verifiedEarlier verified: VerifiedReaderToken)
        throws(PaymentServiceError) -> VerifiedReaderToken
    {
        try linked(verified.isCurrent(at: now()) ? verified : try verify(token))
    }

    /// `verified` when its merchant is linked here.
    private func linked(_ verified: VerifiedReaderToken) throws(PaymentServiceError) -> VerifiedReaderToken {
        let link = try linkStore.read()
        guard let link, link.covers(verified, readerIdentifier: settings.readerIdentifier) else {
            throw PaymentServiceError(
                .accountNotLinked,
                link.map {
                    "this kernel links \($0), not merchant \(verified.merchantID) with \(verified.issuer); "
                        + "call relinkAccount(using:) to change it"
                } ?? "merchant \(verified.merchantID) is not linked on this kernel; call linkAccount(using:) first"
            )
        }
        return verified
    }

    // MARK: Readiness

    /// Waits until a reader that may serve this lane (or `pinnedReader`) is present and healthy, for at most
    /// `timeout`, by the pool's own lane rule.
    package func waitUntilReady(pinnedReader: ReaderID?, timeout: Duration) async -> Bool {
        await kernel.waitUntilServable(lane: lane, pinnedReader: pinnedReader, timeout: timeout)
    }

    // MARK: Reading

    /// The order checked against ISO 4217: the currency and the amount in minor units.
    package func validate(_ order: PaymentOrder) throws(PaymentServiceError) -> (ISO4217Currency, Int64) {
        guard let currency = ISO4217Currency(alphabeticCode: order.currencyCode) else {
            throw PaymentServiceError(
                .invalidCurrency,
                "\"\(order.currencyCode)\" is not an active ISO 4217 currency code (such as USD, EUR, JPY)"
            )
        }
        let amount = order.kind == .verification ? 0 : try currency.minorUnitAmount(of: order.amount)
        return (currency, amount)
    }

    /// Reads a card for `order`: checks token and link, validates the order, takes `slot` (one read at a time),
    /// taps on the lane, runs the EMV transaction and seals the card data to the processor inside the tap.
    ///
    /// - Parameters:
    ///   - owner: Who may cancel the read through ``PaymentReadSlot/cancel(owner:)``.
    ///   - onEvent: Called as the read goes; must return quickly (it runs between two APDUs).
    /// - Returns: The sealed read; with ``PaymentReadOptions/includeFailedReads`` also reads that failed.
    /// - Throws: ``PaymentServiceError`` (checks, `readerBusy`, `readCancelled`, `sealingFailed`),
    ///   ``PaymentReadFailure`` (declined, not supported, …), the kernel's `ProximaError` (deadline, reader gone,
    ///   shutting down, …) or the capability's `PaymentError` (an unusable card answer, naming the step).
    package func read(
        _ order: PaymentOrder,
        token: String,
        slot: PaymentReadSlot,
        owner: ObjectIdentifier,
        options: PaymentReadOptions,
        onEvent: @escaping @Sendable (PaymentReadEvent) -> Void
    ) async throws -> SealedPaymentRead {
        let (_, read) = try await read(
            order,
            token: token,
            slot: slot,
            owner: owner,
            options: options,
            onEvent: onEvent,
            before: { _, _ in ((), proceed: true) }
        )
        // The prelude always proceeds, so the tap always ends in a payment.
        guard let read else { throw PaymentServiceError(.readCancelled, "the read ended without a payment") }
        return read
    }

    /// Reads a card like ``read(_:token:slot:owner:options:onEvent:)``, with `prelude` run first on the same
    /// channel in the same tap: one lease, one card presence (loyalty, then payment). When the prelude answers
    /// `proceed: false` the tap ends there and no payment is read (`nil`).
    ///
    /// - Throws: As ``read(_:token:slot:owner:options:onEvent:)``, and whatever `prelude` throws (which ends the
    ///   tap without a payment).
    package func read<Prelude: Sendable>(
        _ order: PaymentOrder,
        token: String,
        slot: PaymentReadSlot,
        owner: ObjectIdentifier,
        options: PaymentReadOptions,
        onEvent: @escaping @Sendable (PaymentReadEvent) -> Void,
        before prelude: @escaping @Sendable (any CardChannel, TapContext) async throws -> (Prelude, proceed: Bool)
    ) async throws -> (Prelude, SealedPaymentRead?) {
        try await read(
            order,
            merchant: try linkedMerchant(token),
            slot: slot,
            owner: owner,
            options: options,
            onEvent: onEvent,
            before: prelude
        )
    }

    /// Reads a card like ``read(_:token:slot:owner:options:onEvent:)`` for a merchant whose token and link were
    /// checked just before (``linkedMerchant(_:verifiedEarlier:)``): what a prepared session does on every read.
    package func read(
        _ order: PaymentOrder,
        merchant: VerifiedReaderToken,
        slot: PaymentReadSlot,
        owner: ObjectIdentifier,
        options: PaymentReadOptions,
        onEvent: @escaping @Sendable (PaymentReadEvent) -> Void
    ) async throws -> SealedPaymentRead {
        let (_, read) = try await read(
            order,
            merchant: merchant,
            slot: slot,
            owner: owner,
            options: options,
            onEvent: onEvent,
            before: { _, _ in ((), proceed: true) }
        )
        guard let read else { throw PaymentServiceError(.readCancelled, "the read ended without a payment") }
        return read
    }

    /// Reads a card like ``read(_:token:slot:owner:options:onEvent:before:)`` for a merchant whose token was
    /// verified and linked earlier: store and forward verifies the token when its offline session starts, and
    /// keeps reading after the token's `exp` for as long as the session lasts.
    package func read<Prelude: Sendable>(
        _ order: PaymentOrder,
        merchant: VerifiedReaderToken,
        slot: PaymentReadSlot,
        owner: ObjectIdentifier,
        options: PaymentReadOptions,
        onEvent: @escaping @Sendable (PaymentReadEvent) -> Void,
        before prelude: @escaping @Sendable (any CardChannel, TapContext) async throws -> (Prelude, proceed: Bool)
    ) async throws -> (Prelude, SealedPaymentRead?) {
        let (currency, minorUnits) = try validate(order)
        let cancelSignal = try slot.begin(owner: owner, lane: lane)
        defer { slot.end() }

        let events = ReadEventOrder(onEvent)
        let transaction = EMVTransaction(
            amountAuthorised: minorUnits,
            currencyCode: currency.numericCode,
            currencyExponent: currency.minorUnits,
            countryCode: settings.terminal.countryCode,
            type: order.kind == .refund ? .refund : .purchase,
            date: TransactionDate(now(), timeZone: .current)
        )
        let capability = EMVPaymentCapability(
            settings: settings.terminal,
            unpredictableNumbers: unpredictableNumbers,
            certificationAuthorities: settings.certificationAuthorities
        ) { event, _ in events.capability(event) }
        var sealingSettings = settings
        if let lifetime = options.cardDataLifetime { sealingSettings.cardDataTTL = lifetime }
        let sealing = Sealing(
            settings: sealingSettings,
            envelopeKeys: envelopeKeys,
            order: order,
            currency: currency,
            minorUnits: minorUnits,
            merchant: merchant,
            now: now,
            includeFailedReads: options.includeFailedReads
        )
        let tapOptions = TapOptions(
            reader: options.pinnedReader,
            timeout: options.timeout,
            onReadyForTap: { _ in events.readyForTap() }
        )
        let kernel = self.kernel
        let lane = self.lane
        let (before, ending) = try await slot.cancellable(cancelSignal, lane: lane, options: tapOptions) { tapOptions in
            try await kernel.tap(lane: lane, options: tapOptions) { channel, context in
                events.cardDetected()
                let (before, proceed) = try await prelude(channel, context)
                guard proceed else { return (before, TapEnding?.none) }
                let outcome = try await capability.run(transaction, on: channel, context: context)
                return (before, try sealing.seal(outcome, context: context))
            }
        }
        switch ending {
        case .sealed(let read)?: return (before, read)
        case .failed(let failure)?: throw failure
        case nil: return (before, nil)
        }
    }
}

/// The events of one read in order: `readyForTap` once (from the kernel's per-tap hook, or just before
/// `cardDetected` if the hook was missed), then the capability's. `Sendable`: its state sits behind a `Mutex`, and
/// events are reported under it so they cannot overtake each other.
final class ReadEventOrder: Sendable {
    private let report: @Sendable (PaymentReadEvent) -> Void
    private let readyForTapSent = Mutex(false)

    init(_ report: @escaping @Sendable (PaymentReadEvent) -> Void) { self.report = report }

    func readyForTap() {
        readyForTapSent.withLock { sent in
            guard !sent else { return }
            sent = true
            report(.readyForTap)
        }
    }

    func cardDetected() {
        readyForTapSent.withLock { sent in
            if !sent { report(.readyForTap) }
            sent = true
            report(.cardDetected)
        }
    }

    func capability(_ event: EMVPaymentEvent) {
        readyForTapSent.withLock { _ in
            switch event {
            case .cardReadCompleted: report(.removeCard)
            case .pinEntryRequested: report(.pinEntryRequested)
            case .applicationSelected: break
            }
        }
    }
}
