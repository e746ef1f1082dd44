internal import ProximaCore
package import ProximaCrypto
internal import ProximaSystem

/// The reader's P-256 key: the sender key of card data envelopes version 2 (HPKE auth mode,
/// `Docs/card-data-envelope.md` §8). The processor registers its public key when the account is linked and opens
/// only envelopes sealed with it, so a holder of the processor's public key alone cannot make one.
///
/// The file is `capabilities.payment.readerKey` (PEM, `BEGIN PRIVATE KEY`) when configured; otherwise
/// `<dataDirectory>/reader-key.pem`, created on first use with mode 0600 from the moment it exists (never
/// replaced: deleting it makes a new identity that the processor must register again).
package struct ReaderKeyStore: Sendable {
    package static let fileName = "reader-key.pem"
    package let path: String
    /// Whether a missing file may be created (only for the data-directory default).
    package let createsMissing: Bool

    package init(settings: PaymentSettings, dataDirectory: String) {
        if let configured = settings.readerKeyPath {
            path = configured
            createsMissing = false
        } else {
            path = dataDirectory.hasSuffix("/") ? dataDirectory + Self.fileName : dataDirectory + "/" + Self.fileName
            createsMissing = true
        }
    }

    /// The key, created first when it is the data-directory default and missing.
    /// - Throws: ``PaymentServiceError/Code/notAllowed`` naming the file when it cannot be read, created or parsed.
    package func loadOrCreate() throws(PaymentServiceError) -> P256.PrivateKey {
        do {
            return try load()
        } catch let error where createsMissing && (error.underlying as? SystemFile.Failure)?.errno == .noSuchFile {
            do {
                let pem = try P256.PrivateKey().pemRepresentation()
                try SystemFile.createDirectory(SystemFile.parentDirectory(of: path), permissions: 0o700)
                try SystemFile.writeAtomically(Array(pem.utf8), to: path, permissions: 0o600, replacing: false)
            } catch let failure as SystemFile.Failure where failure.errno == .fileExists {
                // Another process created it first: use theirs.
            } catch {
                throw PaymentServiceError(
                    .notAllowed,
                    "cannot create the reader key \(path): \(error)",
                    underlying: error
                )
            }
            return try load()
        }
    }

    /// The key in the file, without creating it.
    package func load() throws(PaymentServiceError) -> P256.PrivateKey {
        let bytes: [UInt8]
        do {
            bytes = try SystemFile.read(path, limit: 64 * 1024)
        } catch {
            throw PaymentServiceError(
                .notAllowed,
                "cannot read the reader key \(path): \(error.reason)",
                underlying: error
            )
        }
        do {
            return try P256.PrivateKey(pemRepresentation: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw PaymentServiceError(
                .notAllowed,
                "\(path) is not a P-256 private key in PEM (BEGIN PRIVATE KEY): \(error)",
                underlying: error
            )
        }
    }

    /// The identifier an envelope carries for a reader key: SHA-256 of its uncompressed SEC 1 point (65 bytes).
    package static func keyID(of publicKey: P256.PublicKey) -> [UInt8] {
        (try? SHA256.hash(publicKey.x963Representation)) ?? []
    }
}
