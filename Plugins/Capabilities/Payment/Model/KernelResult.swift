internal import EMVCommon
internal import ProximaCore

extension PaymentSession {
    struct KernelResult {
        var type: CryptogramType
        var cvm: CardholderVerification
        /// fDDA or CDA, when the kernel performed it (Steps/OfflineDataAuthentication.swift).
        var offlineAuthentication: OfflineAuthenticationResult = .notPerformed
        /// Whether a failed ODA sends the transaction online (card and reader allow it) rather than declining it.
        var onlineIfOfflineAuthenticationFails = false
    }
}
