internal import ProximaCore

/// Why the store-and-forward service refused or could not finish a request: its settings, a limit, the store, a
/// batch or a deletion token.
///
/// A struct with a stable ``code`` and a human ``reason`` (what failed, where, the limit and the figures); the
/// cause stays in ``underlying`` (a `SQLiteError`, a `JWTError`, the payment service's error). A refusal by a limit
/// names it in ``limit`` (its JSON path, `capabilities.storeAndForward.maxStoredAmount.USD`). Never card data.
package struct StoreAndForwardError: Error, Hashable, Sendable, CustomStringConvertible {
    package let code: Code
    package let reason: String
    /// The JSON path of the limit that refused a read, for limit refusals.
    package let limit: String?
    package let underlying: (any Error)?

    package init(_ code: Code, _ reason: String, limit: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.reason = reason
        self.limit = limit
        self.underlying = underlying
    }

    package var description: String { "\(code): \(reason)" }

    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }

    package enum Code: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// No or an invalid `capabilities.storeAndForward`, store and forward disabled, or the processor not
        /// reached within `onlineWithinHours`.
        case notAllowed
        /// The offline session's `sessionHours` have passed: prepare a new one.
        case sessionExpired
        /// The host restarted since the session was prepared (its boot id is not the kernel's), or the session is
        /// not recorded in the store: prepare online, then a new session (Apple's
        /// `storeAndForwardSessionInvalidated`).
        case sessionInvalidated
        /// A limit refused the read (``StoreAndForwardError/limit`` names it).
        case limitExceeded
        /// The store could not be opened, read or written (the disk, the database, the store key).
        case storeFailed
        /// A stored row or the store's certificate does not verify: someone edited the database.
        case tampered
        /// A batch is active: resolve or reset it first.
        case batchAlreadyExists
        /// No batch with that id is active.
        case batchNotFound
        /// Size below zero or above the stored count.
        case batchSizeInvalid
        /// Nothing is stored.
        case resultsNotFound
        /// A deletion token that is not the processor's for the active batch (forged, altered, other batch,
        /// replayed, wrong digest).
        case deletionTokenInvalid
        case deletionTokenExpired
        /// Another process holds the store's write lock beyond the busy timeout.
        case busy
        /// `decline()` after 60 s, or of a read already batched.
        case declineFailed
        /// `decline()` with no read of the session to decline.
        case resultNotFound

        package var description: String { rawValue }
    }
}
