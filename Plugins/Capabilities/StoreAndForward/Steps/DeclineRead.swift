extension StoreAndForwardService {
    /// Removes the last read of `session` (`nil`: the store's last read) (Apple's `decline()`): only within 60 s of the read and before it is
    /// batched.
    /// - Returns: The declined read's id.
    /// - Throws: ``StoreAndForwardError`` `resultNotFound`, `declineFailed`, `storeFailed`.
    package func declineLast(session: String?) async throws(StoreAndForwardError) -> String {
        try await store.declineLast(session: session, now: now(), window: Self.declineWindow)
    }
}
