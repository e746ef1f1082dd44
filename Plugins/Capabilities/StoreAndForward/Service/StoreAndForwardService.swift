package import Foundation
package import PaymentCapability
internal import ProximaCore
package import ProximaKernel
internal import ProximaSystem

/// What an app's store-and-forward request becomes: an offline session started only when the processor was
/// reached recently, each read checked against the manifest's limits, run by the payment service (sealed to the
/// processor inside the tap, as online), then signed by the store key and committed durably; batches made,
/// resolved with the processor's deletion token, or reset. The steps are in `Steps/`, one file each.
///
/// A value type over the payment service, the settings and the store actor; cheap to copy.
package struct StoreAndForwardService: Sendable {
    package let payment: PaymentService
    package let settings: StoreAndForwardSettings
    package let store: ReadStore
    package let now: @Sendable () -> Date
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id` through `ProximaSystem`); injected by tests that
    /// restart the host.
    package let bootIdentifier: @Sendable () throws -> String

    /// The boot id of the running system: `BootIdentifier.current()`.
    package static let systemBootIdentifier: @Sendable () throws -> String = { try BootIdentifier.current() }

    /// The window of Apple's `decline()`: the last read, within 60 s.
    package static let declineWindow: Duration = .seconds(60)

    /// The service of `payment`'s kernel, with the manifest's `capabilities.storeAndForward` and the store in the
    /// kernel's data directory.
    /// - Throws: ``StoreAndForwardError`` `notAllowed` (no or invalid settings), `storeFailed`, `tampered`.
    package init(
        payment: PaymentService,
        now: @escaping @Sendable () -> Date = { Date() },
        bootIdentifier: @escaping @Sendable () throws -> String = StoreAndForwardService.systemBootIdentifier
    ) throws(StoreAndForwardError) {
        try self.init(
            payment: payment,
            settings: try StoreAndForwardSettings(manifest: payment.kernel.manifest),
            now: now,
            bootIdentifier: bootIdentifier
        )
    }

    /// A service with settings given in code.
    package init(
        payment: PaymentService,
        settings: StoreAndForwardSettings,
        now: @escaping @Sendable () -> Date = { Date() },
        bootIdentifier: @escaping @Sendable () throws -> String = StoreAndForwardService.systemBootIdentifier
    ) throws(StoreAndForwardError) {
        self.payment = payment
        self.settings = settings
        self.now = now
        self.bootIdentifier = bootIdentifier
        store = try ReadStore.shared(
            directory: payment.kernel.manifest.dataDirectory,
            readerIdentifier: payment.settings.readerIdentifier,
            now: now()
        )
    }

    /// The current boot id.
    /// - Throws: ``StoreAndForwardError`` `notAllowed` when it cannot be read (no `/proc`): without it a session
    ///   could outlive a restart, so none starts.
    package func currentBoot() throws(StoreAndForwardError) -> String {
        do {
            return try bootIdentifier()
        } catch {
            throw StoreAndForwardError(
                .notAllowed,
                "cannot read the kernel's boot id (\(error)): store and forward needs it to refuse sessions across a "
                    + "restart",
                underlying: error
            )
        }
    }

    /// The store of a manifest's data directory without a kernel: for `proxima store` and the processor tools.
    package static func store(manifest: Manifest, now: Date = Date()) throws -> ReadStore {
        let payment = try PaymentSettings(manifest: manifest)
        return try ReadStore.shared(
            directory: manifest.dataDirectory,
            readerIdentifier: payment.readerIdentifier,
            now: now
        )
    }
}

/// An offline session (Apple's `StoreAndForwardPaymentCardReaderSession` after `prepare()`): the merchant of a
/// token verified and linked when it started, and how long it reads.
package struct OfflineSession: Hashable, Sendable {
    package let id: String
    package let merchant: VerifiedReaderToken
    package let preparedAt: Date
    /// After this every read throws `sessionExpired`.
    package let expiresAt: Date
    /// The kernel's boot id when it was prepared: after a restart its reads throw `sessionInvalidated`.
    package let bootID: String
}

/// A read the store kept: the sealed read as the payment service returned it, and the store's totals after it.
package struct StoredPaymentRead: Hashable, Sendable {
    package var read: SealedPaymentRead
    package var record: StoredReadRecord
    package var totals: StoreTotals
}
