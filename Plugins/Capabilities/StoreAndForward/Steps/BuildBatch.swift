extension StoreAndForwardService {
    /// Makes the active batch of the oldest `size` stored reads (0 = all), chronological, signed (Apple's
    /// `fetchStoredPaymentCardReadResultBatch(size:)`). One batch is active at a time.
    /// - Throws: ``StoreAndForwardError`` `batchAlreadyExists`, `resultsNotFound`, `batchSizeInvalid`, `tampered`.
    package func makeBatch(size: Int) async throws(StoreAndForwardError) -> StoredBatch {
        try await store.makeBatch(size: size, readerIdentifier: payment.settings.readerIdentifier, now: now())
    }

    /// The active batch, else a new one of every stored read, else none: the usage sketch's `allBatches()`.
    package func currentOrNewBatch() async throws(StoreAndForwardError) -> StoredBatch? {
        if let active = try await store.activeBatch() { return active }
        guard try await store.totals().unbatched > 0 else { return nil }
        return try await makeBatch(size: 0)
    }
}
