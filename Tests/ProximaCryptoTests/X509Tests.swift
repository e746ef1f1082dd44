import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

/// 2021-01-01T00:00:00Z: inside every Annex D certificate's validity (the DS expired on 2021-10-01).
let annexDTime: Int64 = 1_609_459_200

@Suite("X.509 chains and the ISO/IEC 18013-5 Annex B profile")
struct X509Tests {
    let iaca: X509Certificate
    let documentSigner: X509Certificate
    let readerRoot: X509Certificate
    let reader: X509Certificate

    init() throws {
        iaca = try X509Certificate(derRepresentation: bytes(AnnexDCertificates.iaca))
        documentSigner = try X509Certificate(derRepresentation: bytes(AnnexDCertificates.documentSigner))
        readerRoot = try X509Certificate(derRepresentation: bytes(AnnexDCertificates.readerRoot))
        reader = try X509Certificate(derRepresentation: bytes(AnnexDCertificates.reader))
    }

    @Test func annexDFieldsAreRead() throws {
        #expect(iaca.subject == "C=US,CN=utopia iaca")
        #expect(iaca.isSelfIssued)
        #expect(iaca.isCertificateAuthority)
        #expect(iaca.pathLengthConstraint == 0)
        #expect(iaca.keyUsage == [.keyCertSign, .cRLSign])
        #expect(documentSigner.subject == "C=US,CN=utopia ds")
        #expect(documentSigner.issuer == "C=US,CN=utopia iaca")
        #expect(documentSigner.subjectCountry == "US")
        #expect(documentSigner.serialNumber == "3C4416EED784F3B413E48F56F075ABFA6D87EB84")
        #expect(documentSigner.extendedKeyUsage == ["1.0.18013.5.1.2"])
        #expect(!documentSigner.isCertificateAuthority)
        #expect(!documentSigner.isSelfIssued)
        #expect(documentSigner.notAfter == CivilTime(year: 2021, month: 10, day: 1).unixSeconds)
        #expect(documentSigner.publicKey?.curve == .p256)
        #expect(reader.extendedKeyUsage == ["1.0.18013.5.1.6"])
        let pem = documentSigner.pemRepresentation
        #expect(
            try X509Certificate.certificates(pemRepresentation: pem + iaca.pemRepresentation) == [documentSigner, iaca]
        )
    }

    @Test func theAnnexDDocumentSignerChainsToItsIACA() throws {
        let anchor = try MdocCertificateProfile.validateDocumentSigner(documentSigner, anchors: [iaca], at: annexDTime)
        #expect(anchor == iaca)
        let path = try documentSigner.validatePath(anchors: [readerRoot, iaca], at: annexDTime)
        #expect(path == [documentSigner, iaca])
        try MdocCertificateProfile.validateReaderAuthentication(reader, anchors: [readerRoot], at: annexDTime)
    }

    @Test func pathFailuresNameOpenSSLsReason() throws {
        let expired = CivilTime(year: 2021, month: 10, day: 2).unixSeconds
        let error = try #require(throws: X509Error.self) {
            try MdocCertificateProfile.validateDocumentSigner(documentSigner, anchors: [iaca], at: expired)
        }
        #expect(error.code == .untrusted)
        #expect(error.reason.contains("expired"))
        #expect(error.openSSLCode == 10)  // X509_V_ERR_CERT_HAS_EXPIRED
        let early = CivilTime(year: 2020, month: 9, day: 1).unixSeconds
        #expect(throws: X509Error(.untrusted, "")) {
            try MdocCertificateProfile.validateDocumentSigner(documentSigner, anchors: [iaca], at: early)
        }
        let unknown = try #require(throws: X509Error.self) {
            try MdocCertificateProfile.validateDocumentSigner(documentSigner, anchors: [readerRoot], at: annexDTime)
        }
        #expect(unknown.openSSLCode == 20)  // X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY
        #expect(throws: X509Error(.untrusted, "")) { try documentSigner.validatePath(anchors: [], at: annexDTime) }
    }

    @Test func profileViolationsAreNamed() throws {
        // The reader certificate chains to its root but is no document signer.
        let error = try #require(throws: X509Error.self) {
            try MdocCertificateProfile.validateDocumentSigner(reader, anchors: [readerRoot], at: annexDTime)
        }
        #expect(error.code == .profileViolation)
        #expect(error.reason.contains("1.0.18013.5.1.2"))
        #expect(throws: X509Error(.profileViolation, "")) {
            try MdocCertificateProfile.validateDocumentSigner(iaca, anchors: [iaca], at: annexDTime)
        }
    }

    @Test func malformedCertificatesAreRefused() {
        #expect(throws: X509Error(.malformedCertificate, "")) {
            try X509Certificate(derRepresentation: [0x30, 0x03, 1, 2, 3])
        }
        #expect(throws: X509Error(.malformedCertificate, "")) {
            try X509Certificate(derRepresentation: bytes(AnnexDCertificates.iaca) + [0])
        }
        #expect(throws: X509Error(.malformedCertificate, "")) { try X509Certificate(derRepresentation: []) }
        #expect(throws: X509Error(.malformedCertificate, "")) {
            try X509Certificate.certificates(pemRepresentation: "x")
        }
    }
}

/// Test PKI made by Python `cryptography`: an IACA per Annex B, DS certificates good and bad, a second IACA.
private let testPKIInPython = """
    import datetime, json
    from cryptography import x509
    from cryptography.x509.oid import NameOID, ObjectIdentifier
    from cryptography.hazmat.primitives import hashes, serialization as s
    from cryptography.hazmat.primitives.asymmetric import ec
    day = datetime.timedelta(days=1)
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    def name(cn, c="NL"):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn), x509.NameAttribute(NameOID.COUNTRY_NAME, c)])
    def iaca(cn, curve, path=0):
        key = ec.generate_private_key(curve)
        b = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(name(cn)).public_key(key.public_key())
             .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(start + 3650 * day)
             .add_extension(x509.BasicConstraints(ca=True, path_length=path), critical=True)
             .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
             .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
        return key, b.sign(key, hashes.SHA384() if isinstance(curve, ec.SECP384R1) else hashes.SHA256())
    def ds(issuer_key, issuer, eku=True, country="NL", until=365, ca=False):
        key = ec.generate_private_key(ec.SECP256R1())
        b = (x509.CertificateBuilder().subject_name(name("test ds", country)).issuer_name(issuer.subject)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(start).not_valid_after(start + until * day)
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
             .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
             .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False))
        if eku:
            b = b.add_extension(x509.ExtendedKeyUsage([ObjectIdentifier("1.0.18013.5.1.2")]), critical=True)
        return b.sign(issuer_key, hashes.SHA256())
    der = lambda c: c.public_bytes(s.Encoding.DER).hex()
    root_key, root = iaca("TEST IACA", ec.SECP384R1())
    other_key, other = iaca("TEST other IACA", ec.SECP256R1())
    wide_key, wide = iaca("TEST wide IACA", ec.SECP256R1(), path=1)
    print(json.dumps({
        "iaca": der(root), "other": der(other), "wide": der(wide),
        "ds": der(ds(root_key, root)), "noEKU": der(ds(root_key, root, eku=False)),
        "foreign": der(ds(root_key, root, country="BE")), "short": der(ds(root_key, root, until=10)),
        "wideDS": der(ds(wide_key, wide)), "caDS": der(ds(root_key, root, ca=True)),
    }))
    """

@Suite(.enabled(if: Python.isAvailable, "python3 is not on PATH"))
struct X509GeneratedPKITests {
    @Test func eachProfileRuleFailsOnItsOwn() throws {
        let pki = try Python.runJSON(testPKIInPython)
        func certificate(_ key: String) throws -> X509Certificate {
            try X509Certificate(derRepresentation: pki.hexBytes(key))
        }
        let iaca = try certificate("iaca")
        let now = CivilTime(year: 2024, month: 6, day: 1).unixSeconds
        #expect(iaca.publicKey?.curve == .p384)
        #expect(
            try MdocCertificateProfile.validateDocumentSigner(try certificate("ds"), anchors: [iaca], at: now) == iaca
        )
        let cases: [(String, [X509Certificate], X509Error.Code, String)] = [
            ("noEKU", [iaca], .profileViolation, "1.0.18013.5.1.2"),
            ("foreign", [iaca], .profileViolation, "country"),
            ("caDS", [iaca], .profileViolation, "CA"),
            ("short", [iaca], .untrusted, "expired"),
            ("ds", [try certificate("other")], .untrusted, "issuer"),
            ("wideDS", [try certificate("wide")], .profileViolation, "pathLenConstraint"),
        ]
        for (leaf, anchors, code, words) in cases {
            let error = try #require(throws: X509Error.self, "\(leaf)") {
                try MdocCertificateProfile.validateDocumentSigner(try certificate(leaf), anchors: anchors, at: now)
            }
            #expect(error.code == code, "\(leaf): \(error)")
            #expect(error.reason.contains(words), "\(leaf): \(error)")
        }
    }
}
