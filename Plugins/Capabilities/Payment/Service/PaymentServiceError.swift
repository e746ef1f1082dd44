internal import ProximaCore

/// Why the payment service refused or could not finish a request: its configuration, the token, the account
/// link, the order, or a read that ended without card data for the processor.
///
/// A struct with a stable ``code`` and a human ``reason`` (what failed, where, what to do), as Proxima's other
/// errors; the error that caused it stays in ``underlying`` (a `JWTError`, a `SystemFile.Failure`, the kernel's
/// `ProximaError`, the capability's `PaymentError`). The API layer maps codes to Apple's error cases in one
/// place. Never holds a token, a key or card data.
package struct PaymentServiceError: Error, Hashable, Sendable, CustomStringConvertible {
    package let code: Code
    package let reason: String
    package let underlying: (any Error)?

    package init(_ code: Code, _ reason: String, underlying: (any Error)? = nil) {
        self.code = code
        self.reason = reason
        self.underlying = underlying
    }

    package var description: String { "\(code): \(reason)" }

    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }

    package enum Code: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// No usable `capabilities.payment` block, or the default manifest could not be loaded.
        case notAllowed
        /// The lane is not in the manifest.
        case unsupported
        case emptyToken
        /// Signature, issuer, audience, validity window or merchant claim refused.
        case invalidToken
        case tokenExpired
        /// The token's merchant is not the one linked on this kernel.
        case accountNotLinked
        /// Another merchant is linked; relink to replace it.
        case accountAlreadyLinked
        /// The link file could not be written.
        case accountLinkingFailed
        /// The link file exists but cannot be read or parsed.
        case accountLinkingCheckFailed
        /// A session read before `prepare()`, or no reader of the lane became ready in time.
        case notReady
        /// Another read of the same reader is in progress: one read at a time.
        case readerBusy
        /// Not an active ISO 4217 currency.
        case invalidCurrency
        /// Zero, negative, more decimals than the currency has, or more than 12 digits.
        case invalidAmount
        /// The read was cancelled through its ``PaymentReadSlot``.
        case readCancelled
        /// Sealing the card data to the processor key failed.
        case sealingFailed

        package var description: String { rawValue }
    }
}
