import Foundation
import ProximaCardEmulator
import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import MobileDocumentCapability

/// VICALs built by Python in the test (`cbor2` + `cryptography`, ISO/IEC 18013-5 Annex C structure, its own COSE):
/// a TEST VICAL provider root and signer made on the spot, the TEST IACA of `Config/keys` listed for the mDL
/// docType. Variants: `ok`, `tampered` (payload changed after signing), `wrong-signer` (signed by a signer of
/// another root), `expired` (nextUpdate 10 days ago), `other-doctype` (the IACA listed for another docType only),
/// `bad-entry` (entry 1's serialNumber is not its certificate's), `expired-signer` (signer certificate expired).
private let pythonVICALs = """
    import cbor2, datetime, os, sys
    from cryptography import x509
    from cryptography.x509.oid import NameOID
    from cryptography.hazmat.primitives import hashes, serialization as s
    from cryptography.hazmat.primitives.asymmetric import ec, utils
    keys, out = sys.argv[1], sys.argv[2]
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    day = datetime.timedelta(days=1)
    iaca = x509.load_pem_x509_certificate(open(os.path.join(keys, "mdl-iaca-test.pem"), "rb").read())
    rogue_iaca = x509.load_pem_x509_certificate(open(os.path.join(keys, "mdl-rogue-iaca-test.pem"), "rb").read())
    def name(cn): return x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "UT"),
                                    x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    def cert(subject, key, issuer, issuer_key, ca, start, end):
        b = (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(name(issuer))
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(start).not_valid_after(end)
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
             .add_extension(x509.KeyUsage(digital_signature=not ca, content_commitment=False, key_encipherment=False,
                                          data_encipherment=False, key_agreement=False, key_cert_sign=ca,
                                          crl_sign=ca, encipher_only=False, decipher_only=False), critical=True))
        return b.sign(issuer_key, hashes.SHA256())
    def root(cn):
        key = ec.generate_private_key(ec.SECP256R1())
        return key, cert(cn, key, cn, key, True, now - 30 * day, now + 3650 * day)
    root_key, root_cert = root("Proxima TEST VICAL root")
    rogue_key, rogue_cert = root("Proxima TEST rogue VICAL root")
    def signer(issuer_key, issuer_name, start=now - day, end=now + 365 * day):
        key = ec.generate_private_key(ec.SECP256R1())
        return key, cert("Proxima TEST VICAL signer", key, issuer_name, issuer_key, False, start, end)
    signer_key, signer_cert = signer(root_key, "Proxima TEST VICAL root")
    wrong_key, wrong_cert = signer(rogue_key, "Proxima TEST rogue VICAL root")
    old_key, old_cert = signer(root_key, "Proxima TEST VICAL root", now - 400 * day, now - 35 * day)
    def tdate(t): return cbor2.CBORTag(0, t.strftime("%Y-%m-%dT%H:%M:%SZ"))
    def info(c, doctypes, serial=None):
        ski = c.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
        number = serial if serial is not None else c.serial_number
        return {"certificate": c.public_bytes(s.Encoding.DER),
                "serialNumber": cbor2.CBORTag(2, number.to_bytes((number.bit_length() + 7) // 8, "big")),
                "ski": ski, "docType": doctypes, "issuingCountry": "UT"}
    def vical(infos, date=now - day, next_update=now + 30 * day):
        return cbor2.dumps({"version": "1.0", "vicalProvider": "Proxima TEST VICAL provider", "date": tdate(date),
                            "vicalIssueID": 7, "nextUpdate": tdate(next_update), "certificateInfos": infos})
    def sign(payload, key, chain):
        protected = cbor2.dumps({1: -7})
        r, s_ = utils.decode_dss_signature(key.sign(cbor2.dumps(["Signature1", protected, b"", payload]),
                                                     ec.ECDSA(hashes.SHA256())))
        x5 = chain.public_bytes(s.Encoding.DER)
        return [protected, {33: x5}, payload, r.to_bytes(32, "big") + s_.to_bytes(32, "big")]
    mdl = ["org.iso.18013.5.1.mDL"]
    good = vical([info(iaca, mdl)])
    tampered = sign(good, signer_key, signer_cert)
    tampered[2] = good.replace(b"Proxima TEST VICAL provider", b"Proxima TEST VICAL provideR")
    files = {
        "ok": cbor2.dumps(cbor2.CBORTag(18, sign(good, signer_key, signer_cert))),
        "tampered": cbor2.dumps(tampered),
        "wrong-signer": cbor2.dumps(sign(good, wrong_key, wrong_cert)),
        "expired": cbor2.dumps(sign(vical([info(iaca, mdl)], now - 40 * day, now - 10 * day), signer_key, signer_cert)),
        "other-doctype": cbor2.dumps(sign(vical([info(iaca, ["org.example.other"])]), signer_key, signer_cert)),
        "bad-entry": cbor2.dumps(sign(vical([info(rogue_iaca, mdl), info(iaca, mdl, serial=12345)]),
                                      signer_key, signer_cert)),
        "expired-signer": cbor2.dumps(sign(good, old_key, old_cert)),
    }
    for label, data in files.items():
        open(os.path.join(out, label + ".cbor"), "wb").write(data)
    open(os.path.join(out, "root.pem"), "wb").write(root_cert.public_bytes(s.Encoding.PEM))
    print(len(files))
    """

@Suite("VICAL (ISO/IEC 18013-5 Annex C) built by Python", .enabled(if: Python.isAvailable, "python3 is not on PATH"))
struct VICALTests {
    let folder: String

    init() throws {
        folder = NSTemporaryDirectory() + "proxima-vical-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        #expect(try Python.run(pythonVICALs, arguments: [keysDirectory, folder]) == "7")
    }

    func settings(_ variant: String, extra: String = "") throws -> MobileDocumentSettings {
        try MobileDocumentSettings(
            json: try JSONValue.parse(
                Array(
                    """
                    { "vical": "\(folder)/\(variant).cbor", "vicalTrustAnchors": ["\(folder)/root.pem"] \(extra) }
                    """.utf8
                )
            ),
            path: "capabilities.mobileDocument",
            baseDirectory: folder
        )
    }

    func refusal(_ variant: String) -> (ProximaError?, VICALError?) {
        do {
            _ = try settings(variant)
            return (nil, nil)
        } catch {
            let manifest = error as? ProximaError
            return (manifest, manifest?.underlying as? VICALError)
        }
    }

    func read(trust: MdocTrust) async throws -> VerifiedDocument {
        let credential = try MobileDocumentHolder.Credential.test(keysIn: keysDirectory)
        let channel = InProcessCardChannel(card: MobileDocumentHolder(credential: credential))
        return try await readDocument(ageRequest, on: channel, trust: trust, clock: { holderNow })
    }

    @Test func aDocumentWhoseIACAIsOnlyInTheVICALVerifies() async throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let loaded = try settings("ok")
        #expect(loaded.trustAnchorFiles.isEmpty)
        let vical = try #require(loaded.vical)
        #expect(vical.provider == "Proxima TEST VICAL provider")
        #expect(vical.issueID == 7)
        #expect(vical.signer.subject == "CN=Proxima TEST VICAL signer,C=UT")
        #expect(vical.entries.map(\.docTypes) == [["org.iso.18013.5.1.mDL"]])
        #expect(loaded.trust.anchors.map(\.subject) == ["CN=Proxima TEST IACA,C=UT"])
        let iaca = try #require(loaded.trust.anchors.first)
        #expect(loaded.trust.docTypes(issuedBy: iaca) == ["org.iso.18013.5.1.mDL"])

        let document = try await read(trust: loaded.trust)
        #expect(document.issuer == "CN=Proxima TEST IACA,C=UT")
        #expect(document.elements["org.iso.18013.5.1"]?["age_over_21"] == true)

        // Without the VICAL the same holder is refused: nothing else anchors it.
        let rogueOnly = try MdocTrust(
            anchors: try X509Certificate.certificates(
                pemRepresentation: try String(
                    contentsOfFile: keysDirectory + "/mdl-rogue-iaca-test.pem",
                    encoding: .utf8
                )
            )
        )
        await #expect(throws: MobileDocumentError(.issuerUntrusted, "")) { _ = try await read(trust: rogueOnly) }
    }

    @Test func aManifestAnchorIsNotRestrictedByTheVICAL() async throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let loaded = try settings(
            "other-doctype",
            extra: #", "trustAnchors": ["\#(keysDirectory)/mdl-iaca-test.pem"]"#
        )
        let iaca = try #require(loaded.trust.anchors.first)
        #expect(loaded.trust.docTypes(issuedBy: iaca) == nil)
        #expect(try await read(trust: loaded.trust).docType == "org.iso.18013.5.1.mDL")
    }

    @Test func aDocTypeTheVICALDoesNotListIsRefused() async throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let loaded = try settings("other-doctype")
        let error = await #expect(throws: MobileDocumentError.self) { _ = try await read(trust: loaded.trust) }
        #expect(error?.code == .docTypeNotListedForIACA)
        #expect(error?.reason.contains("org.example.other") == true)
    }

    @Test(arguments: [
        ("tampered", VICALError.Code.signatureInvalid, "does not verify"),
        ("wrong-signer", .signerUntrusted, "vicalTrustAnchors"),
        ("expired", .expired, "nextUpdate"),
        ("expired-signer", .expired, "validity"),
        ("bad-entry", .malformedEntry, "certificateInfos[1]: serialNumber"),
    ])
    func aBadVICALIsRefusedWithItsCheck(variant: String, code: VICALError.Code, mentions: String) {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (manifest, vical) = refusal(variant)
        #expect(manifest?.code == .invalidManifest, "\(variant)")
        #expect(manifest?.jsonPath == "capabilities.mobileDocument.vical", "\(String(describing: manifest))")
        #expect(vical?.code == code, "\(variant): \(String(describing: vical))")
        #expect(manifest?.reason.contains(mentions) == true, "\(String(describing: manifest))")
        if code == .malformedEntry { #expect(vical?.entryIndex == 1) }
    }

    @Test func theSignerAnchorIsRequiredAndOnlyWithAVICAL() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        func failure(_ json: String) -> ProximaError? {
            do {
                _ = try MobileDocumentSettings(
                    json: try JSONValue.parse(Array(json.utf8)),
                    path: "capabilities.mobileDocument",
                    baseDirectory: folder
                )
                return nil
            } catch { return error as? ProximaError }
        }
        let missing = failure(#"{ "vical": "ok.cbor" }"#)
        #expect(missing?.jsonPath == "capabilities.mobileDocument.vicalTrustAnchors")
        let alone = failure(
            #"{ "trustAnchors": ["\#(keysDirectory)/mdl-iaca-test.pem"], "vicalTrustAnchors": ["root.pem"] }"#
        )
        #expect(alone?.jsonPath == "capabilities.mobileDocument.vicalTrustAnchors")
        let absent = failure(#"{ "vical": "none.cbor", "vicalTrustAnchors": ["root.pem"] }"#)
        #expect(absent?.jsonPath == "capabilities.mobileDocument.vical")
        #expect(absent?.reason.contains("none.cbor") == true)
    }

    /// Hostile bytes: every prefix and a few flipped bytes of a good VICAL are refused with a code, never a trap.
    @Test func truncatedAndFlippedVICALsAreRefused() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let good = Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/ok.cbor")))
        let root = try X509Certificate.certificates(
            pemRepresentation: try String(contentsOfFile: folder + "/root.pem", encoding: .utf8)
        )
        let store = try X509TrustStore(anchors: root)
        let now = Int64(Date().timeIntervalSince1970)
        #expect(try VICAL.verify(good, signerAnchors: store, now: now).entries.count == 1)
        for length in stride(from: 0, to: good.count, by: 7) {
            #expect(throws: VICALError.self) {
                try VICAL.verify(Array(good[..<length]), signerAnchors: store, now: now)
            }
        }
        for index in stride(from: 20, to: good.count, by: 97) {
            var flipped = good
            flipped[index] ^= 0x40
            #expect(throws: VICALError.self) { try VICAL.verify(flipped, signerAnchors: store, now: now) }
        }
    }
}
