import ProximaCore

/// Why the ID verification service refused or could not finish a request: its configuration, the reader token,
/// the request, or the lane. A read that reached the holder and failed a check throws the capability's
/// ``MobileDocumentError`` instead (naming the check).
///
/// A struct with a stable ``code`` and a human ``reason``; the cause stays in ``underlying``. Never holds a token,
/// a key or an identity element.
package struct MobileDocumentServiceError: Error, Hashable, Sendable, CustomStringConvertible {
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
        /// No usable `capabilities.mobileDocument` block, no way to verify reader tokens, or no default kernel.
        case notAllowed
        /// The lane is not in the manifest.
        case unsupported
        /// The token is empty, or its signature, issuer, audience or validity window was refused.
        case invalidToken
        case tokenExpired
        /// No element, an element twice, or an element the document type does not have.
        case invalidRequest
        /// A request before `prepare()`, or no reader of the lane became ready in time.
        case notReady
        /// Another document read of the same session is in progress: one read at a time.
        case busy
        /// A display request on a lane without an attendant display.
        case noDisplay

        package var description: String { rawValue }
    }
}
