import ProximaCore
import ProximaCrypto
import Synchronization

/// What the reader trusts: the IACA certificates from the manifest (`trustAnchors`, for any docType), those of a
/// verified VICAL (each only for the docTypes its entry lists), and how far the holder's clock may be off.
package struct MdocTrust: Sendable {
    package var anchors: [X509Certificate] { store.anchors }
    /// Every anchor in one OpenSSL store, built once (OpenSSL then keeps their decoded keys).
    package let store: X509TrustStore
    /// Tolerance on validFrom and validUntil, in seconds (the manifest's `clockSkewSeconds`).
    package var clockSkewSeconds: Int64
    /// The VICAL the anchors came from, if one was configured.
    package let vical: VICAL?
    /// IACAs known only from the VICAL, by DER → the docTypes their entries list. An IACA that is also in
    /// `trustAnchors` is not here: the manifest's own anchors are not restricted.
    let listedDocTypes: [[UInt8]: Set<String>]
    /// Document signer certificates already parsed, by DER: a lane sees the same few issuers' signers again and
    /// again, and parsing one costs more than checking its chain (OpenSSL 3.0 decodes the key while parsing).
    /// Only the parse is cached; the chain and profile are checked on every read.
    let certificates = CertificateCache()
    /// Document signer paths already validated against `store`, by the x5chain's DER (see ``PathCache``).
    let paths = PathCache()

    /// - Parameters:
    ///   - anchors: The manifest's IACAs, trusted for any docType.
    ///   - vical: A verified VICAL whose IACAs are trusted for their entries' docTypes.
    /// - Throws: ``ProximaCrypto/CryptoError`` when OpenSSL cannot build the store (allocation).
    package init(anchors: [X509Certificate], vical: VICAL? = nil, clockSkewSeconds: Int64 = 300) throws {
        let unrestricted = Set(anchors.map(\.derRepresentation))
        var listed: [[UInt8]: Set<String>] = [:]
        var vicalAnchors: [X509Certificate] = []
        for entry in vical?.entries ?? [] where !unrestricted.contains(entry.certificate.derRepresentation) {
            let der = entry.certificate.derRepresentation
            if listed[der] == nil { vicalAnchors.append(entry.certificate) }
            listed[der, default: []].formUnion(entry.docTypes)
        }
        store = try X509TrustStore(anchors: anchors + vicalAnchors)
        listedDocTypes = listed
        self.vical = vical
        self.clockSkewSeconds = clockSkewSeconds
    }

    /// The IACA `documentSigner` (through `intermediates`) chains to at `time`, with the Annex B profile
    /// (``ProximaCrypto/MdocCertificateProfile/validateDocumentSigner(_:intermediates:store:at:)``).
    ///
    /// A path that validated once is remembered with the window where every certificate of it is valid: what
    /// `X509_verify_cert` checks besides time (signatures, CA constraints) and the profile cannot change while the
    /// anchors are fixed, which they are from load on. A read inside the window skips the signature checks of the
    /// chain; outside it the full validation runs again (and names OpenSSL's reason).
    /// - Throws: ``ProximaCrypto/X509Error`` as the validation does.
    package func validateDocumentSigner(
        _ documentSigner: X509Certificate,
        intermediates: [X509Certificate],
        at time: Int64
    ) throws -> X509Certificate {
        let key = ([documentSigner] + intermediates).map { DERKey(bytes: $0.derRepresentation) }
        if let known = paths.path(for: key), known.notBefore <= time, time <= known.notAfter { return known.iaca }
        let iaca = try MdocCertificateProfile.validateDocumentSigner(
            documentSigner,
            intermediates: intermediates,
            store: store,
            at: time
        )
        let path = [documentSigner] + intermediates + [iaca]
        paths.remember(
            ValidatedPath(
                iaca: iaca,
                notBefore: path.map(\.notBefore).max() ?? time,
                notAfter: path.map(\.notAfter).min() ?? time
            ),
            for: key
        )
        return iaca
    }

    /// Forgets the parsed document signers and validated paths, so the next read does all the work again (the
    /// benchmark's cold read; the anchors' store stays as loaded).
    package func forgetDocumentSigners() {
        certificates.removeAll()
        paths.removeAll()
    }

    /// The docTypes `iaca` may issue: `nil` (any) for a manifest anchor, else its VICAL entries' list.
    package func docTypes(issuedBy iaca: X509Certificate) -> Set<String>? {
        listedDocTypes.isEmpty ? nil : listedDocTypes[iaca.derRepresentation]  // no VICAL: no hashing of the DER
    }
}

/// A DER encoding as a dictionary key, hashed in one pass over its bytes: `[UInt8]`'s own hashing feeds the
/// hasher one byte at a time, which for a certificate costs more than the rest of the lookup. Equality is the
/// bytes'.
struct DERKey: Hashable, Sendable {
    let bytes: [UInt8]

    func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.count)
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}

/// Parsed certificates by DER, at most ``limit`` of them (then it starts afresh).
final class CertificateCache: Sendable {
    static let limit = 256
    private let parsed = Mutex<[DERKey: X509Certificate]>([:])

    func removeAll() { parsed.withLock { $0.removeAll() } }

    /// The certificate of `der`, parsed once.
    /// - Throws: ``ProximaCrypto/X509Error`` when it does not parse.
    func certificate(_ der: [UInt8]) throws -> X509Certificate {
        let key = DERKey(bytes: der)
        if let known = parsed.withLock({ $0[key] }) { return known }
        let certificate = try X509Certificate(derRepresentation: der)
        parsed.withLock {
            if $0.count >= Self.limit { $0.removeAll() }
            $0[key] = certificate
        }
        return certificate
    }
}

/// A validated document signer path: the IACA it ends at and the window in which all its certificates are valid.
struct ValidatedPath: Sendable {
    let iaca: X509Certificate
    let notBefore: Int64
    let notAfter: Int64
}

/// Validated paths by the DER of their certificates (leaf first), at most ``limit`` (then it starts afresh).
final class PathCache: Sendable {
    static let limit = 256
    private let validated = Mutex<[[DERKey]: ValidatedPath]>([:])

    func path(for key: [DERKey]) -> ValidatedPath? { validated.withLock { $0[key] } }

    func removeAll() { validated.withLock { $0.removeAll() } }

    func remember(_ path: ValidatedPath, for key: [DERKey]) {
        validated.withLock {
            if $0.count >= Self.limit { $0.removeAll() }
            $0[key] = path
        }
    }
}
