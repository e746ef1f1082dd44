import ProximaCore
import ProximaCrypto
import Synchronization

/// What the reader trusts: the IACA certificates from the manifest and how far the holder's clock may be off.
package struct MdocTrust: Sendable {
    package var anchors: [X509Certificate] { store.anchors }
    /// The anchors in one OpenSSL store, built once (OpenSSL then keeps their decoded keys).
    package let store: X509TrustStore
    /// Tolerance on validFrom and validUntil, in seconds (the manifest's `clockSkewSeconds`).
    package var clockSkewSeconds: Int64
    /// Document signer certificates already parsed, by DER: a lane sees the same few issuers' signers again and
    /// again, and parsing one costs more than checking its chain (OpenSSL 3.0 decodes the key while parsing).
    /// Only the parse is cached; the chain and profile are checked on every read.
    let certificates = CertificateCache()

    /// - Throws: ``ProximaCrypto/CryptoError`` when OpenSSL cannot build the store (allocation).
    package init(anchors: [X509Certificate], clockSkewSeconds: Int64 = 300) throws {
        store = try X509TrustStore(anchors: anchors)
        self.clockSkewSeconds = clockSkewSeconds
    }
}

/// Parsed certificates by DER, at most ``limit`` of them (then it starts afresh).
final class CertificateCache: Sendable {
    static let limit = 256
    private let parsed = Mutex<[[UInt8]: X509Certificate]>([:])

    /// The certificate of `der`, parsed once.
    /// - Throws: ``ProximaCrypto/X509Error`` when it does not parse.
    func certificate(_ der: [UInt8]) throws -> X509Certificate {
        if let known = parsed.withLock({ $0[der] }) { return known }
        let certificate = try X509Certificate(derRepresentation: der)
        parsed.withLock {
            if $0.count >= Self.limit { $0.removeAll() }
            $0[der] = certificate
        }
        return certificate
    }
}
