internal import Foundation
internal import ProximaCore
package import ProximaCrypto

/// The batch container (`StoreAndForwardBatch.data`): every read of a batch with its envelope and record
/// signature, the store's leaf certificate, and the batch signature over all of it. `Docs/store-and-forward-batch.md`
/// specifies it byte for byte, so a processor verifies it without Proxima's code.
///
/// ```
/// "PXB1" | 01 | str8 batch id | str8 reader identifier | u64 createdAt (s) | u32 count
/// count × ( u32 body length | body | u32 envelope length | envelope | 64 record signature )
/// u16 certificate length | certificate (DER) | 64 batch signature
/// ```
///
/// Signatures are ECDSA P-256 over SHA-256, raw `r || s` (32 + 32 bytes): a record signature covers `PXR1` and the
/// record body; the batch signature covers every byte before it.
package struct BatchContainer: Hashable, Sendable {
    /// One read of a batch.
    package struct Entry: Hashable, Sendable {
        package var record: StoredReadRecord
        /// The body exactly as signed and sent (``StoredReadRecord/body``).
        package var body: [UInt8]
        package var envelope: [UInt8]
        /// Raw `r || s`.
        package var signature: [UInt8]

        package init(record: StoredReadRecord, body: [UInt8], envelope: [UInt8], signature: [UInt8]) {
            self.record = record
            self.body = body
            self.envelope = envelope
            self.signature = signature
        }
    }

    package static let magic: [UInt8] = Array("PXB1".utf8)
    package static let version: UInt8 = 1
    /// Limits of ``parse(_:)``: a batch is at most this many reads, each envelope at most 64 KiB.
    package static let maximumCount = 1_000_000
    package static let maximumEnvelopeByteCount = 64 * 1024
    package static let maximumBodyByteCount = 4 * 1024

    package var id: String
    package var readerIdentifier: String
    /// Seconds since 1970.
    package var createdAt: Int64
    package var entries: [Entry]
    /// The store's leaf certificate, DER.
    package var certificate: [UInt8]
    /// Raw `r || s` over ``signedBytes``.
    package var signature: [UInt8]

    /// Every byte before the batch signature.
    package var signedBytes: [UInt8] {
        var writer = ByteWriter()
        writer.bytes(Self.magic)
        writer.byte(Self.version)
        writer.string8(id)
        writer.string8(readerIdentifier)
        writer.uint64(UInt64(bitPattern: createdAt))
        writer.uint32(UInt32(entries.count))
        writer.bytes.reserveCapacity(
            entries.reduce(64 + certificate.count) { $0 + $1.body.count + $1.envelope.count + 72 }
        )
        for entry in entries {
            writer.uint32(UInt32(entry.body.count))
            writer.bytes(entry.body)
            writer.uint32(UInt32(entry.envelope.count))
            writer.bytes(entry.envelope)
            writer.bytes(entry.signature)
        }
        writer.uint16(UInt16(certificate.count))
        writer.bytes(certificate)
        return writer.bytes
    }

    /// The container bytes: ``signedBytes`` then the signature.
    package var bytes: [UInt8] { signedBytes + signature }

    /// Signs `entries` into a container.
    package static func sign(
        id: String,
        readerIdentifier: String,
        createdAt: Int64,
        entries: [Entry],
        certificate: [UInt8],
        key: P256.PrivateKey
    ) throws -> BatchContainer {
        var container = BatchContainer(
            id: id,
            readerIdentifier: readerIdentifier,
            createdAt: createdAt,
            entries: entries,
            certificate: certificate,
            signature: []
        )
        let signed = container.signedBytes
        container.signature = try key.signature(for: signed).rawRepresentation
        return container
    }

    /// Reads a container (total: bounded lengths, no traps), without checking signatures.
    /// - Throws: ``BatchContainerError`` naming the field and offset.
    package static func parse(_ bytes: [UInt8]) throws(BatchContainerError) -> BatchContainer {
        var reader = ByteReader(bytes, what: "batch container")
        guard try reader.bytes(4, "magic") == magic else {
            throw BatchContainerError("batch container: bytes 0-3 are not \"PXB1\"")
        }
        let version = try reader.byte("version")
        guard version == Self.version else {
            throw BatchContainerError("batch container: version \(version) at offset 4; this build reads version 1")
        }
        let id = try reader.string8("batch id")
        let readerIdentifier = try reader.string8("reader identifier")
        let createdAt = Int64(bitPattern: try reader.uint64("createdAt"))
        let count = Int(try reader.uint32("count"))
        // Each entry takes at least 4 + 4 + 64 bytes: a count beyond that cannot be honest.
        guard count <= maximumCount, count <= reader.remaining / 72 else {
            throw BatchContainerError("batch container: count \(count) cannot fit in \(reader.remaining) bytes")
        }
        var entries: [Entry] = []
        entries.reserveCapacity(count)
        for index in 0..<count {
            let bodyCount = Int(try reader.uint32("record \(index) body length"))
            guard bodyCount <= maximumBodyByteCount else {
                throw BatchContainerError("batch container: record \(index) body of \(bodyCount) bytes is too long")
            }
            let body = try reader.bytes(bodyCount, "record \(index) body")
            let envelopeCount = Int(try reader.uint32("record \(index) envelope length"))
            guard envelopeCount <= maximumEnvelopeByteCount else {
                throw BatchContainerError(
                    "batch container: record \(index) envelope of \(envelopeCount) bytes exceeds 64 KiB"
                )
            }
            let envelope = try reader.bytes(envelopeCount, "record \(index) envelope")
            let signature = try reader.bytes(64, "record \(index) signature")
            let record: StoredReadRecord
            do {
                record = try StoredReadRecord(body: body)
            } catch {
                throw BatchContainerError("record \(index): \(error.reason)")
            }
            entries.append(Entry(record: record, body: body, envelope: envelope, signature: signature))
        }
        let certificateCount = Int(try reader.uint16("certificate length"))
        let certificate = try reader.bytes(certificateCount, "certificate")
        let signature = try reader.bytes(64, "batch signature")
        try reader.finish()
        return BatchContainer(
            id: id,
            readerIdentifier: readerIdentifier,
            createdAt: createdAt,
            entries: entries,
            certificate: certificate,
            signature: signature
        )
    }

    /// Checks every signature and digest with the certificate's key: each record's signature, each envelope's
    /// SHA-256 against its record, the batch signature, and that no read appears twice.
    ///
    /// - Parameter trustedCertificate: When given, the container's certificate must be exactly this one (a
    ///   processor pins each reader's store certificate when it first sees it).
    /// - Throws: ``BatchContainerError`` naming the first record or field that does not verify.
    package func verify(trustedCertificate: [UInt8]? = nil) throws(BatchContainerError) {
        if let trustedCertificate, trustedCertificate != certificate {
            throw BatchContainerError("the batch's certificate is not the store certificate the processor pinned")
        }
        let key: P256.PublicKey
        do {
            guard let p256 = try X509Certificate(derRepresentation: certificate).publicKey?.p256 else {
                throw BatchContainerError("the batch's certificate holds no P-256 key")
            }
            key = p256
        } catch let error as BatchContainerError {
            throw error
        } catch {
            throw BatchContainerError("the batch's certificate is not a DER X.509 certificate")
        }
        guard let batchSignature = try? P256.ECDSASignature(rawRepresentation: signature),
            key.isValidSignature(batchSignature, for: signedBytes)
        else {
            throw BatchContainerError("the batch signature does not verify: the container was altered or reordered")
        }
        var seen = Set<String>()
        for (index, entry) in entries.enumerated() {
            guard seen.insert(entry.record.id).inserted else {
                throw BatchContainerError("record \(index): read \(entry.record.id) appears twice in the batch")
            }
            guard let recordSignature = try? P256.ECDSASignature(rawRepresentation: entry.signature),
                key.isValidSignature(recordSignature, for: StoredReadRecord.signaturePrefix + entry.body)
            else {
                throw BatchContainerError("record \(index) (\(entry.record.id)): its signature does not verify")
            }
            guard (try? SHA256.hash(entry.envelope)) == entry.record.envelopeDigest else {
                throw BatchContainerError(
                    "record \(index) (\(entry.record.id)): the envelope's SHA-256 is not the one its record signs"
                )
            }
        }
    }

    /// SHA-256 of the container bytes: what a deletion token names.
    package static func digest(_ bytes: [UInt8]) throws -> [UInt8] { try SHA256.hash(bytes) }
}
