import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import MobileDocumentCapability

/// An mdoc issued and presented by Python (`cbor2` + `cryptography`: its own CBOR encoder, map order as written,
/// its own COSE): MSO signed with the TEST document signer, device authentication by signature over the
/// transcript given. With `tamper`, family_name is changed after its digest was taken.
private let pythonIssuer = """
    import cbor2, datetime, hashlib, json, os, sys
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization as s
    from cryptography.hazmat.primitives.asymmetric import ec, utils
    keys, transcript, tamper = sys.argv[1], bytes.fromhex(sys.argv[2]), sys.argv[3] == "1"
    load = lambda name: open(os.path.join(keys, name), "rb").read()
    ds_cert = x509.load_pem_x509_certificate(load("mdl-ds-test.pem"))
    ds_key = s.load_pem_private_key(load("mdl-ds-test-private.pem"), None)
    device = s.load_pem_private_key(load("mdl-device-test-private.pem"), None)
    def sign(key, data):
        r, s_ = utils.decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s_.to_bytes(32, "big")
    ns, doctype = "org.iso.18013.5.1", "org.iso.18013.5.1.mDL"
    elements = [("family_name", "Mustermann"), ("age_over_21", True),
                ("birth_date", cbor2.CBORTag(1004, "1990-01-01")), ("issuing_country", "UT")]
    items, digests = [], {}
    for i, (name, value) in enumerate(elements):
        item = {"random": os.urandom(16), "digestID": i, "elementValue": value, "elementIdentifier": name}
        digests[i] = hashlib.sha256(cbor2.dumps(cbor2.CBORTag(24, cbor2.dumps(item)))).digest()
        if tamper and name == "family_name":
            item["elementValue"] = "Musterfrau"
        items.append(cbor2.CBORTag(24, cbor2.dumps(item)))
    dn = device.public_key().public_numbers()
    mso = {"version": "1.0", "digestAlgorithm": "SHA-256", "docType": doctype, "valueDigests": {ns: digests},
           "deviceKeyInfo": {"deviceKey": {1: 2, -1: 1, -2: dn.x.to_bytes(32, "big"), -3: dn.y.to_bytes(32, "big")}},
           "validityInfo": {"signed": cbor2.CBORTag(0, "2026-01-01T00:00:00Z"),
                            "validFrom": cbor2.CBORTag(0, "2026-01-01T00:00:00Z"),
                            "validUntil": cbor2.CBORTag(0, "2027-01-01T00:00:00Z")}}
    protected = cbor2.dumps({1: -7})
    payload = cbor2.dumps(cbor2.CBORTag(24, cbor2.dumps(mso)))
    issuer_auth = [protected, {33: ds_cert.public_bytes(s.Encoding.DER)}, payload,
                   sign(ds_key, cbor2.dumps(["Signature1", protected, b"", payload]))]
    device_ns = cbor2.CBORTag(24, cbor2.dumps({}))
    auth = cbor2.dumps(cbor2.CBORTag(24, cbor2.dumps(["DeviceAuthentication", cbor2.loads(transcript), doctype,
                                                      device_ns])))
    device_sig = [protected, {}, None, sign(device, cbor2.dumps(["Signature1", protected, b"", auth]))]
    doc = {"docType": doctype, "issuerSigned": {"nameSpaces": {ns: items}, "issuerAuth": issuer_auth},
           "deviceSigned": {"nameSpaces": device_ns, "deviceAuth": {"deviceSignature": device_sig}}}
    print(cbor2.dumps({"version": "1.0", "documents": [doc], "status": 0}).hex())
    """

@Suite(.enabled(if: Python.isAvailable, "python3 is not on PATH"))
struct PythonIssuerTests {
    func response(tamper: Bool, transcript: [UInt8]) throws -> [UInt8] {
        let hex = try Python.run(pythonIssuer, arguments: [keysDirectory, transcript.hexString, tamper ? "1" : "0"])
        return try #require([UInt8](hex: hex))
    }

    @Test func aPythonIssuedMdocVerifies() throws {
        let session = try annexDSession()
        let request = DocumentRequest(elements: [
            "org.iso.18013.5.1": ["family_name": true, "age_over_21": false, "birth_date": false]
        ])
        let document = try verifyDeviceResponse(
            try response(tamper: false, transcript: session.sessionTranscript),
            request: request,
            sessionTranscript: session.sessionTranscript,
            macKey: { try session.deviceMacKey(deviceKey: $0) },
            trust: try testTrust(),
            now: holderNow
        )
        #expect(document.deviceAuthentication == .signature)
        #expect(document.issuer == "CN=Proxima TEST IACA,C=UT")
        let elements = try #require(document.elements["org.iso.18013.5.1"])
        #expect(elements["family_name"] == "Mustermann")
        #expect(elements["age_over_21"] == true)
        #expect(elements["birth_date"]?.fullDateValue?.year == 1990)
        #expect(elements["issuing_country"] == nil)  // verified, but not asked for
    }

    @Test func aPythonMdocFailsOnAnotherTranscriptOrATamperedElement() throws {
        let session = try annexDSession()
        let trust = try testTrust()
        func verify(_ bytes: [UInt8], transcript: [UInt8]) throws {
            _ = try verifyDeviceResponse(
                bytes,
                request: ageRequest,
                sessionTranscript: transcript,
                macKey: { try session.deviceMacKey(deviceKey: $0) },
                trust: trust,
                now: holderNow
            )
        }
        let good = try response(tamper: false, transcript: session.sessionTranscript)
        #expect(throws: MobileDocumentError(.deviceSignatureInvalid, "")) {
            try verify(good, transcript: CBOREncoder.encode([.null, .null, .null]))
        }
        let tampered = try response(tamper: true, transcript: session.sessionTranscript)
        #expect(throws: MobileDocumentError(.digestMismatch, "")) {
            try verify(tampered, transcript: session.sessionTranscript)
        }
    }
}
