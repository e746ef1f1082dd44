internal import COpenSSL
import ProximaCore

/// The OpenSSL 3 algorithms Proxima uses, fetched once per process.
///
/// OpenSSL 3 looks an algorithm up in its provider store whenever a call names it (`EVP_MAC_fetch`,
/// `EVP_KDF_fetch`) and whenever it is given one of the legacy constants (`EVP_sha256()`, `EVP_aes_128_ctr()`:
/// an "implicit fetch" inside every `Init`). Each lookup takes the store's locks and, in 3.0, costs more than hashing
/// a short message. Fetched here once and passed explicitly, no call looks anything up again.
///
/// `@unchecked Sendable`: the pointers never change after `init`, and OpenSSL documents fetched `EVP_MD`,
/// `EVP_CIPHER` and `EVP_MAC` objects as shareable between threads (they are reference-counted and immutable).
/// They are never freed: they live as long as the process, as OpenSSL's own store does.
final class OpenSSLAlgorithms: @unchecked Sendable {
    let sha256: OpaquePointer
    let sha384: OpaquePointer
    let sha512: OpaquePointer
    let hmac: OpaquePointer
    let aes128CTR: OpaquePointer
    let aes192CTR: OpaquePointer
    let aes256CTR: OpaquePointer
    let aes128GCM: OpaquePointer
    let aes192GCM: OpaquePointer
    let aes256GCM: OpaquePointer

    private init?() {
        guard let sha256 = EVP_MD_fetch(nil, "SHA2-256", nil), let sha384 = EVP_MD_fetch(nil, "SHA2-384", nil),
            let sha512 = EVP_MD_fetch(nil, "SHA2-512", nil), let hmac = EVP_MAC_fetch(nil, "HMAC", nil),
            let aes128CTR = EVP_CIPHER_fetch(nil, "AES-128-CTR", nil),
            let aes192CTR = EVP_CIPHER_fetch(nil, "AES-192-CTR", nil),
            let aes256CTR = EVP_CIPHER_fetch(nil, "AES-256-CTR", nil),
            let aes128GCM = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil),
            let aes192GCM = EVP_CIPHER_fetch(nil, "AES-192-GCM", nil),
            let aes256GCM = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil)
        else { return nil }
        self.sha256 = sha256
        self.sha384 = sha384
        self.sha512 = sha512
        self.hmac = hmac
        self.aes128CTR = aes128CTR
        self.aes192CTR = aes192CTR
        self.aes256CTR = aes256CTR
        self.aes128GCM = aes128GCM
        self.aes192GCM = aes192GCM
        self.aes256GCM = aes256GCM
    }

    /// The process's algorithms (a global `let`: made once, on first use, under the runtime's once-lock).
    private static let fetched = OpenSSLAlgorithms()

    /// The process's algorithms.
    /// - Throws: ``CryptoError/Code/libraryFailure`` when the default provider lacks one of them.
    static func shared() throws -> OpenSSLAlgorithms {
        guard let fetched else { throw libraryFailure("fetching SHA-2, HMAC and AES from the default provider") }
        return fetched
    }

    func digest(_ algorithm: DigestAlgorithm) -> OpaquePointer {
        switch algorithm {
        case .sha256: sha256
        case .sha384: sha384
        case .sha512: sha512
        }
    }
}
