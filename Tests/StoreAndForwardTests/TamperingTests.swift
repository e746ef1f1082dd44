import Foundation
import Proxima
import ProximaCore
import ProximaCrypto
import ProximaKernel
import ProximaProcessorSandbox
import ProximaTestSupport
import StoreAndForwardCapability
import Testing

/// An edited row, an edited or reordered batch, and forged, expired, other-batch and replayed deletion tokens are
/// refused, and nothing is deleted.
@Suite struct TamperingTests {
    /// Runs `body` with `count` stored reads.
    func withStoredReads(
        _ count: Int,
        _ body: @Sendable (PaymentCardReader, PaymentCardReaderStore, Manifest) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path)
        try await Harness.withKernel(manifest) { kernel in
            let (reader, session) = try await Harness.offlineSession(kernel)
            for index in 1...count { try await session.readPaymentCard(Harness.purchase("\(index).00")) }
            try await body(reader, try reader.fetchPaymentCardReaderStore(), manifest)
        }
    }

    @Test func anEditedRowIsRefusedAndNothingIsBatched() async throws {
        try await withStoredReads(3) { reader, store, _ in
            let service = try reader.storeAndForwardService()
            // Lower the amount inside the signed body of the second read (the amount's text "2.00" → "1.00").
            try await service.store.executeForTesting(
                "UPDATE reads SET body = CAST(REPLACE(CAST(body AS TEXT), '2.00', '1.00') AS BLOB) WHERE seq = 2"
            )
            let error = await thrownError { try await store.fetchStoredPaymentCardReadResultBatch() }
            #expect(storeCode(error) == .tampered)
            #expect(try await service.store.activeBatch() == nil)
            // An edited envelope is caught by its digest.
            try await service.store.executeForTesting(
                "UPDATE reads SET body = (SELECT body FROM reads WHERE seq = 1) WHERE seq = 2"
            )
            #expect(
                storeCode(await thrownError { try await store.fetchStoredPaymentCardReadResultBatch() }) == .tampered
            )
        }
    }

    @Test func anEditedOrReorderedBatchIsRefusedByTheProcessor() async throws {
        try await withStoredReads(3) { _, store, manifest in
            let batch = try await store.fetchStoredPaymentCardReadResultBatch()
            let sandbox = try Harness.sandbox(manifest)
            let bytes = Array(batch.data)
            _ = try sandbox.openBatch(bytes)
            let container = try BatchContainer.parse(bytes)

            // One bit of an envelope.
            var flipped = bytes
            let offset = container.signedBytes.count / 2
            flipped[offset] ^= 0x01
            #expect(throws: ProximaError.self) { try sandbox.openBatch(flipped) }

            // Records reordered, everything else kept (the old batch signature no longer covers the bytes).
            var reordered = container
            reordered.entries.swapAt(0, 2)
            #expect(throws: ProximaError.self) { try sandbox.openBatch(reordered.bytes) }
            // Reordered and re-signed with another key: the records' signatures no longer match the certificate.
            let rogue = try P256.PrivateKey()
            let resigned = try BatchContainer.sign(
                id: container.id,
                readerIdentifier: container.readerIdentifier,
                createdAt: container.createdAt,
                entries: reordered.entries,
                certificate: container.certificate,
                key: rogue
            )
            #expect(throws: ProximaError.self) { try sandbox.openBatch(resigned.bytes) }
            // A record dropped.
            var dropped = container
            dropped.entries.removeLast()
            #expect(throws: ProximaError.self) { try sandbox.openBatch(dropped.bytes) }
            // Pinned to another certificate.
            let other = try X509Certificate.selfIssued(
                commonName: "other",
                privateKey: rogue,
                serialNumber: [1],
                notBefore: 0,
                notAfter: 2_000_000_000
            )
            #expect(throws: ProximaError.self) {
                try sandbox.openBatch(bytes, pinnedCertificate: other.derRepresentation)
            }
            _ = try sandbox.openBatch(bytes, pinnedCertificate: container.certificate)
        }
    }

    @Test func badDeletionTokensDeleteNothing() async throws {
        try await withStoredReads(2) { _, store, manifest in
            let sandbox = try Harness.sandbox(manifest)
            let batch = try await store.fetchStoredPaymentCardReadResultBatch()
            let bytes = Array(batch.data)

            // Forged: the right claims signed by a key that is not the processor's.
            let good = try sandbox.issueDeletionToken(for: bytes)
            let forgedSigner = JWTSigner(privateKey: try P256.PrivateKey())
            let claims = try JSONWebToken(compactSerialization: good.rawValue).claims.json
            let forged = StoreAndForwardBatchDeletionToken(rawValue: try forgedSigner.sign(claims: claims))
            #expect(
                storeCode(await thrownError { try await store.resolveBatch(batchDeletionToken: forged) })
                    == .storeAndForwardDeletionTokenInvalid
            )

            // Altered: one character of the payload.
            var parts = good.rawValue.split(separator: ".").map(String.init)
            parts[1] = String(parts[1].dropLast()) + (parts[1].last == "A" ? "B" : "A")
            let altered = StoreAndForwardBatchDeletionToken(rawValue: parts.joined(separator: "."))
            #expect(
                storeCode(await thrownError { try await store.resolveBatch(batchDeletionToken: altered) })
                    == .storeAndForwardDeletionTokenInvalid
            )

            // Expired.
            let expired = try sandbox.issueDeletionToken(
                for: bytes,
                lifetime: .seconds(60),
                now: Date().addingTimeInterval(-3600)
            )
            #expect(
                storeCode(await thrownError { try await store.resolveBatch(batchDeletionToken: expired) })
                    == .storeAndForwardDeletionTokenExpired
            )

            // For other bytes (the processor received something else): the digest does not match.
            var otherBytes = try BatchContainer.parse(bytes)
            otherBytes.entries.removeLast()
            let otherDigest = try sandbox.issueDeletionToken(for: otherBytes.bytes)
            #expect(
                storeCode(await thrownError { try await store.resolveBatch(batchDeletionToken: otherDigest) })
                    == .storeAndForwardDeletionTokenInvalid
            )

            // For another batch id.
            var otherBatch = try BatchContainer.parse(bytes)
            otherBatch.id = UUID().uuidString.lowercased()
            let otherID = try sandbox.issueDeletionToken(for: otherBatch.bytes)
            #expect(
                storeCode(await thrownError { try await store.resolveBatch(batchDeletionToken: otherID) })
                    == .storeAndForwardDeletionTokenInvalid
            )

            #expect(try await store.fetchStoredPaymentCardReadResultCount() == 2)

            // The sketch's handle without a recorded processor token: refused, nothing deleted.
            #expect(
                storeCode(await thrownError { try await store.delete(using: batch.deletionToken) })
                    == .storeAndForwardDeletionTokenInvalid
            )
            #expect(try await store.fetchStoredPaymentCardReadResultCount() == 2)

            // A token for a batch that was reset: refused afterwards, with or without another batch active.
            try await store.resetBatchState()
            #expect(
                storeCode(await thrownError { try await store.resolveBatch(batchDeletionToken: good) })
                    == .storeAndForwardDeletionTokenInvalid
            )
            let next = try await store.fetchStoredPaymentCardReadResultBatch()
            #expect(
                storeCode(await thrownError { try await store.resolveBatch(batchDeletionToken: good) })
                    == .storeAndForwardDeletionTokenInvalid
            )

            // The right token, recorded, then the handle deletes; the token cannot be used again.
            let right = try sandbox.issueDeletionToken(for: Array(next.data))
            try await store.record(right)
            #expect(try await store.delete(using: next.deletionToken) == 0)
            #expect(
                storeCode(await thrownError { try await store.resolveBatch(batchDeletionToken: right) })
                    == .storeAndForwardDeletionTokenInvalid
            )
        }
    }
}
