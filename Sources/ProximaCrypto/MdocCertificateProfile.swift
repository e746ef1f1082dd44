import ProximaCore

/// The ISO/IEC 18013-5 Annex B certificate profile checks a reader applies to an issuer's document signer (DS)
/// certificate and the IACA root it chains to, on top of OpenSSL's path validation.
public enum MdocCertificateProfile {
    /// `id-mdl-kp-mdlDS` (ISO/IEC 18013-5 Annex B.1.4): the extended key usage of a document signer certificate.
    public static let documentSignerKeyPurpose = "1.0.18013.5.1.2"
    /// `id-mdl-kp-mdlReaderAuth` (Annex B.1.7): the extended key usage of a reader authentication certificate.
    public static let readerAuthenticationKeyPurpose = "1.0.18013.5.1.6"

    /// Validates `documentSigner` up to one of `anchors` (the configured IACA certificates) at `time` and applies
    /// the Annex B profile.
    ///
    /// Checks, each failing with its own reason: the path (signatures, validity at `time`, CA constraints) by
    /// `X509_verify_cert`; the DS certificate is not a CA, has keyUsage digitalSignature and the extended key usage
    /// ``documentSignerKeyPurpose``, and names a country (C); the IACA is a CA with keyUsage keyCertSign and a
    /// pathLenConstraint of 0 when present, names a country, and it is the DS certificate's country.
    /// - Parameters:
    ///   - documentSigner: The leaf of the issuerAuth `x5chain`.
    ///   - intermediates: The rest of the `x5chain` (normally none: a DS is issued by the IACA directly).
    ///   - anchors: The trusted IACA certificates.
    ///   - time: Seconds since 1970 UTC at which the path must be valid.
    /// - Returns: The IACA certificate the path ends at.
    /// - Throws: ``X509Error`` `.untrusted` for a path failure, `.profileViolation` naming the Annex B rule broken.
    public static func validateDocumentSigner(
        _ documentSigner: X509Certificate,
        intermediates: [X509Certificate] = [],
        anchors: [X509Certificate],
        at time: Int64
    ) throws -> X509Certificate {
        try validateDocumentSigner(
            documentSigner,
            intermediates: intermediates,
            store: try X509TrustStore(anchors: anchors),
            at: time
        )
    }

    /// ``validateDocumentSigner(_:intermediates:anchors:at:)`` against a store built once for many documents.
    public static func validateDocumentSigner(
        _ documentSigner: X509Certificate,
        intermediates: [X509Certificate] = [],
        store: X509TrustStore,
        at time: Int64
    ) throws -> X509Certificate {
        let path = try documentSigner.validatePath(intermediates: intermediates, store: store, at: time)
        guard let iaca = path.last, path.count >= 2 else {
            throw X509Error(.profileViolation, "the document signer certificate is itself a trust anchor")
        }
        try checkLeaf(documentSigner, purpose: documentSignerKeyPurpose, "document signer")
        try checkIACA(iaca)
        guard documentSigner.subjectCountry == iaca.subjectCountry else {
            throw X509Error(
                .profileViolation,
                "document signer country \(documentSigner.subjectCountry ?? "-") differs from the IACA's"
                    + " \(iaca.subjectCountry ?? "-") (Annex B.1.4)"
            )
        }
        return iaca
    }

    /// Validates a reader authentication certificate up to `anchors` at `time`: the path, not a CA, keyUsage
    /// digitalSignature, extended key usage ``readerAuthenticationKeyPurpose``.
    /// - Throws: ``X509Error`` `.untrusted` or `.profileViolation`.
    public static func validateReaderAuthentication(
        _ reader: X509Certificate,
        intermediates: [X509Certificate] = [],
        anchors: [X509Certificate],
        at time: Int64
    ) throws {
        _ = try reader.validatePath(intermediates: intermediates, anchors: anchors, at: time)
        try checkLeaf(reader, purpose: readerAuthenticationKeyPurpose, "reader authentication", needsCountry: false)
    }

    private static func checkLeaf(
        _ certificate: X509Certificate,
        purpose: String,
        _ what: String,
        needsCountry: Bool = true
    ) throws {
        guard !certificate.isCertificateAuthority else {
            throw X509Error(.profileViolation, "\(what) certificate is a CA certificate")
        }
        guard let usage = certificate.keyUsage, usage.contains(.digitalSignature) else {
            throw X509Error(.profileViolation, "\(what) certificate lacks keyUsage digitalSignature")
        }
        guard certificate.extendedKeyUsage.contains(purpose) else {
            throw X509Error(.profileViolation, "\(what) certificate lacks extended key usage \(purpose)")
        }
        if needsCountry, certificate.subjectCountry?.isEmpty ?? true {
            throw X509Error(.profileViolation, "\(what) certificate subject has no countryName (C)")
        }
    }

    private static func checkIACA(_ iaca: X509Certificate) throws {
        guard iaca.isCertificateAuthority else {
            throw X509Error(.profileViolation, "IACA certificate is not a CA (basicConstraints)")
        }
        guard let usage = iaca.keyUsage, usage.contains(.keyCertSign) else {
            throw X509Error(.profileViolation, "IACA certificate lacks keyUsage keyCertSign")
        }
        if let pathLength = iaca.pathLengthConstraint, pathLength != 0 {
            throw X509Error(.profileViolation, "IACA pathLenConstraint is \(pathLength), Annex B.1.2 requires 0")
        }
        guard !(iaca.subjectCountry?.isEmpty ?? true) else {
            throw X509Error(.profileViolation, "IACA certificate subject has no countryName (C)")
        }
    }
}
