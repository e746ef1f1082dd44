extension StoreAndForwardService {
    /// Detaches the active batch's reads, kept for the next batch (Apple's `resetBatchState()`: the transmission
    /// failed or its result is unknown). A deletion token for the reset batch is refused afterwards.
    /// - Returns: The id of the batch that was reset.
    /// - Throws: ``StoreAndForwardError`` `batchNotFound`, `storeFailed`.
    package func resetBatch() async throws(StoreAndForwardError) -> String {
        try await store.resetBatch(now: now())
    }
}
