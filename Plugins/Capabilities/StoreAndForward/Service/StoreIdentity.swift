package import Foundation
package import ProximaCrypto
internal import ProximaSystem

/// The store key: a P-256 key and its self-issued leaf certificate in the kernel's data directory
/// (`store-key.pem`, mode 0600, and `store-certificate.pem`), created on first use. It signs every stored read and
/// every batch; the processor verifies with the certificate the batch carries (and pins it per reader).
package struct StoreIdentity: Sendable {
    package static let keyFileName = "store-key.pem"
    package static let certificateFileName = "store-certificate.pem"

    package let privateKey: P256.PrivateKey
    package let certificate: X509Certificate
    package let keyPath: String
    package let certificatePath: String

    package var publicKey: P256.PublicKey { privateKey.publicKey }

    /// The key of each row's HMAC-SHA256 (`mac`): SHA-256 of "proxima store row key v1" and the store key's
    /// scalar. Checking 10,000 rows' HMACs before a batch costs milliseconds where their ECDSA signatures would
    /// cost seconds; only the holder of the store key can make either.
    package var rowKey: [UInt8] {
        (try? SHA256.hash(Array("proxima store row key v1".utf8) + privateKey.rawRepresentation)) ?? []
    }

    package init(privateKey: P256.PrivateKey, certificate: X509Certificate, keyPath: String, certificatePath: String) {
        self.privateKey = privateKey
        self.certificate = certificate
        self.keyPath = keyPath
        self.certificatePath = certificatePath
    }

    /// The identity in `directory`, made there (key 0600, written atomically, never replaced) when absent. Two
    /// processes making it at once agree: the second finds the first's files and uses them.
    ///
    /// - Parameters:
    ///   - readerIdentifier: The certificate's common name (`proxima store <readerIdentifier>`).
    ///   - now: The certificate's `notBefore`; it is valid for 20 years.
    /// - Throws: ``StoreAndForwardError`` `storeFailed` (files unreadable or unwritable) or `tampered` (a
    ///   certificate that is not for the key beside it).
    package static func loadOrCreate(in directory: String, readerIdentifier: String, now: Date)
        throws(StoreAndForwardError) -> StoreIdentity
    {
        let keyPath = directory + "/" + keyFileName
        let certificatePath = directory + "/" + certificateFileName
        do {
            try SystemFile.createDirectory(directory)
        } catch {
            throw StoreAndForwardError(.storeFailed, "\(error)", underlying: error)
        }
        let key = try loadOrCreateKey(keyPath)
        if let text = try readIfPresent(certificatePath) {
            return try identity(key, certificateText: text, keyPath: keyPath, certificatePath: certificatePath)
        }
        do {
            let seconds = Int64(now.timeIntervalSince1970)
            let certificate = try X509Certificate.selfIssued(
                commonName: String("proxima store \(readerIdentifier)".prefix(64)),
                privateKey: key,
                serialNumber: try SecureRandom.bytes(count: 16).enumerated().map {
                    $0.offset == 0 ? $0.element & 0x7F | 0x01 : $0.element
                },
                notBefore: seconds - 3600,
                notAfter: min(seconds + 20 * 365 * 86_400, 2_524_607_999)
            )
            try SystemFile.writeAtomically(
                Array(certificate.pemRepresentation.utf8),
                to: certificatePath,
                permissions: 0o644,
                replacing: false
            )
            return StoreIdentity(
                privateKey: key,
                certificate: certificate,
                keyPath: keyPath,
                certificatePath: certificatePath
            )
        } catch let failure as SystemFile.Failure where failure.errno == .fileExists {
            guard let text = try readIfPresent(certificatePath) else {
                throw StoreAndForwardError(.storeFailed, "\(certificatePath) vanished while it was created")
            }
            return try identity(key, certificateText: text, keyPath: keyPath, certificatePath: certificatePath)
        } catch {
            throw StoreAndForwardError(.storeFailed, "cannot create \(certificatePath): \(error)", underlying: error)
        }
    }

    private static func identity(
        _ key: P256.PrivateKey,
        certificateText: String,
        keyPath: String,
        certificatePath: String
    ) throws(StoreAndForwardError) -> StoreIdentity {
        guard let certificate = try? X509Certificate.certificates(pemRepresentation: certificateText).first else {
            throw StoreAndForwardError(.tampered, "\(certificatePath) holds no certificate")
        }
        guard certificate.publicKey?.p256 == key.publicKey else {
            throw StoreAndForwardError(
                .tampered,
                "\(certificatePath) certifies another key than \(keyPath); restore the pair (batches signed since "
                    + "could not be verified)"
            )
        }
        return StoreIdentity(
            privateKey: key,
            certificate: certificate,
            keyPath: keyPath,
            certificatePath: certificatePath
        )
    }

    private static func loadOrCreateKey(_ path: String) throws(StoreAndForwardError) -> P256.PrivateKey {
        if let text = try readIfPresent(path) { return try parseKey(text, path) }
        do {
            let key = try P256.PrivateKey()
            try SystemFile.writeAtomically(Array(try key.pemRepresentation().utf8), to: path, replacing: false)
            return key
        } catch let failure as SystemFile.Failure where failure.errno == .fileExists {
            guard let text = try readIfPresent(path) else {
                throw StoreAndForwardError(.storeFailed, "\(path) vanished while it was created")
            }
            return try parseKey(text, path)
        } catch {
            throw StoreAndForwardError(.storeFailed, "cannot create the store key \(path): \(error)", underlying: error)
        }
    }

    private static func parseKey(_ text: String, _ path: String) throws(StoreAndForwardError) -> P256.PrivateKey {
        do {
            return try P256.PrivateKey(pemRepresentation: text)
        } catch {
            throw StoreAndForwardError(.tampered, "\(path) holds no P-256 private key", underlying: error)
        }
    }

    private static func readIfPresent(_ path: String) throws(StoreAndForwardError) -> String? {
        do {
            return String(decoding: try SystemFile.read(path, limit: 64 * 1024), as: UTF8.self)
        } catch {
            if error.errno == .noSuchFile { return nil }
            throw StoreAndForwardError(.storeFailed, "\(error)", underlying: error)
        }
    }
}
