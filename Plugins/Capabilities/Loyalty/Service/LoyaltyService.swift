package import Foundation
package import PaymentCapability
package import ProximaCore
package import ProximaKernel

/// What an app's loyalty request becomes: the merchants checked against `capabilities.loyalty`, the reader's
/// one-read slot, a tap on the lane, and the VAS capability on the phone — alone, or before the payment on the
/// same channel in the same tap (one lease, one card presence).
///
/// The decrypted pass data stays in ``VASOutcome`` (`package`); the API layer hands it to the app as
/// `customerVASData`, on purpose and nowhere else.
package struct LoyaltyService: Sendable {
    package let kernel: Kernel
    package let lane: LaneID
    package let settings: LoyaltySettings
    /// The clock cryptogram timestamps are checked against.
    package let now: @Sendable () -> Date

    /// A service for `lane` of `kernel` (the lane the payment service of the same reader uses).
    /// - Throws: ``LoyaltyError/Code/invalidRequest`` when the manifest has no valid `capabilities.loyalty`.
    package init(kernel: Kernel, lane: LaneID, now: @escaping @Sendable () -> Date = { Date() })
        throws(LoyaltyError)
    {
        self.kernel = kernel
        self.lane = lane
        self.settings = try LoyaltySettings(manifest: kernel.manifest)
        self.now = now
    }

    package var capability: AppleVASCapability { AppleVASCapability(settings: settings, now: now) }

    /// A VAS-only tap (mode ``VASMode/vasOnly``): every merchant of `request` read from the phone.
    ///
    /// - Parameters:
    ///   - slot: The reader's one-read slot, shared with payment reads.
    ///   - owner: Who may cancel the read through ``PaymentReadSlot/cancel(owner:)``.
    /// - Throws: ``LoyaltyError`` (request, answers, cryptograms), `PaymentServiceError` (`readerBusy`,
    ///   `readCancelled`), the kernel's `ProximaError` (deadline, reader gone, …).
    package func readVAS(
        _ merchants: [VASMerchantRequest],
        slot: PaymentReadSlot,
        owner: ObjectIdentifier,
        options: PaymentReadOptions,
        onReadyForTap: @escaping @Sendable () -> Void = {}
    ) async throws -> VASOutcome {
        let request = VASReadRequest(merchants: merchants, mode: .vasOnly)
        _ = try VASSession.merchants(of: request, in: settings)
        let cancelSignal = try slot.begin(owner: owner, lane: lane)
        defer { slot.end() }
        let capability = self.capability
        let kernel = self.kernel
        let lane = self.lane
        let tapOptions = TapOptions(
            reader: options.pinnedReader,
            timeout: options.timeout,
            onReadyForTap: { _ in onReadyForTap() }
        )
        return try await slot.cancellable(cancelSignal, lane: lane, options: tapOptions) { tapOptions in
            try await kernel.tap(lane: lane, options: tapOptions) { channel, context in
                try await capability.run(request, on: channel, context: context)
            }
        }
    }

    /// Loyalty, then payment, in one tap on one lease: the payment service's read with the VAS capability as the
    /// step before the payment on the same channel, for `merchant` (the token and link the caller checked, as
    /// `PaymentService.linkedMerchant(_:verifiedEarlier:)` does for a prepared session). With `stopOnVASResult` the mode is ``VASMode/vasOrPayment``
    /// and a successful pass ends the tap without a payment (`nil`); otherwise ``VASMode/vasAndPayment``.
    ///
    /// - Throws: As ``readVAS(_:slot:owner:options:onReadyForTap:)`` and as `PaymentService.read`. A payment
    ///   that fails after the pass was read throws the payment's error (the pass is not returned).
    package func readWithPayment(
        _ merchants: [VASMerchantRequest],
        stopOnVASResult: Bool,
        payment: PaymentService,
        order: PaymentOrder,
        merchant: VerifiedReaderToken,
        slot: PaymentReadSlot,
        owner: ObjectIdentifier,
        options: PaymentReadOptions,
        onEvent: @escaping @Sendable (PaymentReadEvent) -> Void
    ) async throws -> (VASOutcome, SealedPaymentRead?) {
        let request = VASReadRequest(merchants: merchants, mode: stopOnVASResult ? .vasOrPayment : .vasAndPayment)
        _ = try VASSession.merchants(of: request, in: settings)
        let capability = self.capability
        return try await payment.read(
            order,
            merchant: merchant,
            slot: slot,
            owner: owner,
            options: options,
            onEvent: onEvent
        ) { channel, context in
            let outcome = try await capability.run(request, on: channel, context: context)
            return (outcome, proceed: !(stopOnVASResult && outcome.hasSuccess))
        }
    }
}
