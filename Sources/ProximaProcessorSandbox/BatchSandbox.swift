internal import Foundation
internal import PaymentCapability
public import Proxima
internal import ProximaCore
internal import ProximaCrypto
internal import StoreAndForwardCapability

/// A store-and-forward batch as the processor opens it: every signature verified, every envelope opened with the
/// processor key and matched against its signed record. What `proxima psp batch-open` prints.
public struct OpenedBatch: Hashable, Sendable, CustomStringConvertible {
    public let id: String
    public let readerIdentifier: String
    public let createdAt: Date
    /// The SHA-256 of the container, base64url: what the deletion token names.
    public let digest: String
    /// Chronological.
    public let reads: [OpenedCardData]

    public var description: String {
        var lines = ["batch \(id) from \(readerIdentifier): \(reads.count) reads, digest \(digest)"]
        for read in reads {
            lines.append("  \(read.transactionID)  \(read.kind) \(read.amount) \(read.currencyCode)  lane \(read.lane)")
        }
        return lines.joined(separator: "\n")
    }
}

extension PaymentProcessorSandbox {
    /// Verifies and opens a batch container (`StoreAndForwardBatch.data`): the batch and record signatures under
    /// the certificate it carries (or `pinnedCertificate`, DER), each envelope's digest, then each envelope with
    /// the sandbox key, whose transaction id, type, amount and currency must be its record's.
    ///
    /// - Parameter now: The processor's clock: stored envelopes are valid for `storedReadValidityHours`.
    /// - Throws: `ProximaError.malformedData` naming the record or field that does not verify or open.
    public func openBatch(_ data: [UInt8], pinnedCertificate: [UInt8]? = nil, now: Date = Date()) throws -> OpenedBatch
    {
        let container: BatchContainer
        do {
            container = try BatchContainer.parse(data)
            try container.verify(trustedCertificate: pinnedCertificate)
        } catch {
            throw ProximaError(.malformedData, "batch container: \(error.reason)", underlying: error)
        }
        var reads: [OpenedCardData] = []
        for (index, entry) in container.entries.enumerated() {
            let contents: CardDataEnvelope.Contents
            do {
                contents = try CardDataEnvelope.open(
                    entry.envelope,
                    privateKey: privateKey,
                    readerKeys: readerKeys,
                    now: now
                )
            } catch {
                throw ProximaError(.malformedData, "batch record \(index): envelope: \(error)", underlying: error)
            }
            let record = entry.record
            guard contents.transactionID == record.id, contents.amount == record.amount,
                contents.currencyCode == record.currencyCode, contents.kind.rawValue == record.kind.name
            else {
                throw ProximaError(
                    .malformedData,
                    "batch record \(index) (\(record.id)): its envelope is for another transaction or amount"
                )
            }
            reads.append(OpenedCardData(contents: contents))
        }
        return OpenedBatch(
            id: container.id,
            readerIdentifier: container.readerIdentifier,
            createdAt: Date(timeIntervalSince1970: TimeInterval(container.createdAt)),
            digest: Base64.urlEncode(try BatchContainer.digest(data)),
            reads: reads
        )
    }

    /// The processor's deletion token for a batch it received (`Docs/store-and-forward-batch.md` §6): ES256 JWT
    /// with `iss` the token issuer, `aud` the reader identifier, `iat`, `exp`, a fresh `jti`, `batch_id` and
    /// `batch_digest`. Issue it only after the batch opened (``openBatch(_:pinnedCertificate:now:)``).
    /// - Throws: `ProximaError.malformedData` when `data` is not a batch container.
    public func issueDeletionToken(
        for data: [UInt8],
        lifetime: Duration = .seconds(3600),
        now: Date = Date()
    ) throws -> StoreAndForwardBatchDeletionToken {
        let container: BatchContainer
        do {
            container = try BatchContainer.parse(data)
        } catch {
            throw ProximaError(.malformedData, "batch container: \(error.reason)", underlying: error)
        }
        let issuedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        let claims: JSONValue = .object([
            ("iss", .string(tokenIssuer.issuer)),
            ("aud", .string(container.readerIdentifier)),
            ("iat", .integer(issuedAt)),
            ("exp", .integer(issuedAt + lifetime.components.seconds)),
            ("jti", .string(RandomUUID.lowercasedString())),
            ("batch_id", .string(container.id)),
            ("batch_digest", .string(Base64.urlEncode(try BatchContainer.digest(data)))),
        ])
        return StoreAndForwardBatchDeletionToken(rawValue: try JWTSigner(privateKey: privateKey).sign(claims: claims))
    }
}
