// Reader-side processing of the ISO/IEC 18013-5 Annex D DeviceResponse: session keys (ECDH + HKDF over the
// SessionTranscript), AES-256-GCM decryption of the SessionData, CBOR parsing, the issuer signature and the
// IACA → document signer chain, the six element digests and the deviceMac (EMacKey). The same bytes go through a
// Python verifier built on `cryptography` and `cbor2` (the stack pymdoccbor uses) and through pymdoccbor in the
// same run, and the figure that matters is the ratio. Both sides measure their own thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID, Python's time.thread_time_ns), because wall time on a shared 2-core machine mostly
// measures the other tenants; and they take turns in ten rounds, so that both medians see the same load.
//
// The reader keeps what cannot change while its anchors are fixed: the parsed document signer certificate and
// its validated path (re-checked only for validity at the read's time); the Python side parses and checks the
// chain on every verification, as pymdoccbor does. The "signer not yet seen" line measures the cold path.
//
// Run: swift run -c release MDLBenchmark [iterations]

import Foundation
import MobileDocumentCapability
import ProximaCore
import ProximaCrypto
import ProximaTestSupport

let iterations = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 500

/// Pins this process, and so the Python verifiers it starts, to the CPU it runs on: the two sides take turns, so on
/// one CPU they see the same conditions. Unpinned, one run in three or four on these VMs put our thread on a vCPU
/// running ~45 % slower than the one the Python processes had, and the ratio moved by that much. Returns the CPU, or
/// `nil` when pinning failed (then nothing is pinned).
func pinToCurrentCPU() -> Int32? {
    // GNU extensions that Glibc's Swift module does not export: looked up by name.
    typealias GetCPU = @convention(c) () -> Int32
    typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
    guard let getSymbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_getcpu"),
        let setSymbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_setaffinity")
    else { return nil }
    let cpu = unsafeBitCast(getSymbol, to: GetCPU.self)()
    guard cpu >= 0, cpu < 1024 else { return nil }
    var mask = [UInt64](repeating: 0, count: 16)  // glibc's cpu_set_t: 1024 bits
    mask[Int(cpu) / 64] |= 1 << UInt64(cpu % 64)
    let set = unsafeBitCast(setSymbol, to: SetAffinity.self)
    return mask.withUnsafeBytes { set(0, $0.count, $0.baseAddress!) } == 0 ? cpu : nil
}
let pinnedCPU = pinToCurrentCPU()

func hex(_ text: String) -> [UInt8] {
    guard let bytes = [UInt8](hex: text) else { fatalError("benchmark vector is not hex") }
    return bytes
}

let engagementBytes = hex(AnnexD.deviceEngagement)
let handover: CBORValue = [.byteString(hex(AnnexD.handoverSelect)), .byteString(hex(AnnexD.handoverRequest))]
let readerScalar = hex(AnnexD.eReaderKeyScalar)
let sessionData = hex(AnnexD.sessionData)
let trust = try MdocTrust(anchors: [try X509Certificate(derRepresentation: hex(AnnexD.iaca))])
let now = CivilTime(year: 2021, month: 1, day: 1).unixSeconds
let request = DocumentRequest(elements: [
    "org.iso.18013.5.1": [
        "family_name": true, "document_number": true, "driving_privileges": true, "issue_date": true,
        "expiry_date": true, "portrait": false,
    ]
])

/// One complete reader-side verification; returns the number of verified elements.
func verifyOnce() throws -> Int {
    let engagement = try DeviceEngagement(encoded: engagementBytes)
    let readerKey = try ECPrivateKey(curve: .p256, rawRepresentation: readerScalar)
    var session = try MdocSession(engagement: engagement, handover: handover, readerKey: readerKey)
    let response = try session.openSessionData(sessionData)
    let document = try verifyDeviceResponse(
        response,
        request: request,
        sessionTranscript: session.sessionTranscript,
        macKey: { try session.deviceMacKey(deviceKey: $0) },
        trust: trust,
        now: now
    )
    return document.elements.values.reduce(0) { $0 + $1.count }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

func microseconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) * 1e6 + Double(attoseconds) / 1e12
}

guard try verifyOnce() == 6 else { fatalError("Annex D did not verify six elements") }
for _ in 0..<20 { _ = try verifyOnce() }
/// CPU time of the calling thread.
struct ThreadCPUClock {
    struct Instant { let nanoseconds: Int64 }
    var now: Instant {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Instant(nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }
}
func - (lhs: ThreadCPUClock.Instant, rhs: ThreadCPUClock.Instant) -> Duration {
    .nanoseconds(lhs.nanoseconds - rhs.nanoseconds)
}
let clock = ThreadCPUClock()

/// What both Python scripts end with: after warming up they print `ready`, then for each line `k` on their standard
/// input run k verifications and print their thread CPU times (µs) on one line, until end of input.
let servesChunks = #"""

    print("ready", flush=True)
    while True:
        line = sys.stdin.readline()
        if not line: break
        chunk = []
        for _ in range(int(line)):
            start = time.thread_time_ns(); verify_once(); chunk.append((time.thread_time_ns() - start) / 1000)
        print(" ".join(map(str, chunk)), flush=True)
    """#

/// The same steps in Python; fails when a check fails.
let python = #"""
    import sys, time, hashlib, hmac, datetime
    import cbor2
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, utils
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    args = dict(field.split("=", 1) for field in sys.stdin.readline().split())
    b = {k: bytes.fromhex(v) for k, v in args.items()}
    now = datetime.datetime(2021, 1, 1, tzinfo=datetime.timezone.utc)
    from cryptography.x509.oid import NameOID
    IACA = x509.load_der_x509_certificate(b["iaca"])
    _ku = IACA.extensions.get_extension_for_class(x509.KeyUsage).value
    IACA_CA = IACA.extensions.get_extension_for_class(x509.BasicConstraints).value.ca and _ku.key_cert_sign
    def hkdf(z, salt, info):
        return HKDF(hashes.SHA256(), 32, salt, info).derive(z)
    def verify_once():
        de = b["de"]
        device_key_cose = cbor2.loads(cbor2.loads(de)[1][1].value)
        dev = ec.EllipticCurvePublicNumbers(int.from_bytes(device_key_cose[-2], "big"),
                                            int.from_bytes(device_key_cose[-3], "big"), ec.SECP256R1()).public_key()
        reader = ec.derive_private_key(int.from_bytes(b["rk"], "big"), ec.SECP256R1())
        rn = reader.public_key().public_numbers()
        reader_cose = cbor2.dumps({1: 2, -1: 1, -2: rn.x.to_bytes(32, "big"), -3: rn.y.to_bytes(32, "big")})
        transcript = cbor2.dumps([cbor2.CBORTag(24, de), cbor2.CBORTag(24, reader_cose), [b["hs"], b["hr"]]])
        transcript_bytes = cbor2.dumps(cbor2.CBORTag(24, transcript))
        salt = hashlib.sha256(transcript_bytes).digest()
        z = reader.exchange(ec.ECDH(), dev)
        sk_reader = hkdf(z, salt, b"SKReader")
        sk_device = hkdf(z, salt, b"SKDevice")
        assert sk_reader != sk_device
        data = cbor2.loads(b["sd"])["data"]
        response = cbor2.loads(AESGCM(sk_device).decrypt(bytes(7) + b"\x01" + b"\x00\x00\x00\x01", data, None))
        assert response["version"].startswith("1.") and response["status"] == 0
        doc = response["documents"][0]
        assert doc["docType"] == "org.iso.18013.5.1.mDL"
        protected, unprotected, payload, sig = doc["issuerSigned"]["issuerAuth"]
        assert cbor2.loads(protected)[1] == -7
        ds = x509.load_der_x509_certificate(unprotected[33])
        iaca = IACA  # the trust anchor, parsed once at load as the Swift side's store holds it
        ds.verify_directly_issued_by(iaca)
        assert ds.not_valid_before_utc <= now <= ds.not_valid_after_utc
        assert iaca.not_valid_before_utc <= now <= iaca.not_valid_after_utc
        # The Annex B profile the Swift side checks: DS not a CA, digitalSignature, EKU mdlDS, same country as the IACA.
        ext = ds.extensions
        assert ext.get_extension_for_class(x509.KeyUsage).value.digital_signature
        assert x509.ObjectIdentifier("1.0.18013.5.1.2") in ext.get_extension_for_class(x509.ExtendedKeyUsage).value
        try:
            assert not ext.get_extension_for_class(x509.BasicConstraints).value.ca
        except x509.ExtensionNotFound:
            pass
        assert IACA_CA
        country = ds.subject.get_attributes_for_oid(NameOID.COUNTRY_NAME)[0].value
        assert country == iaca.subject.get_attributes_for_oid(NameOID.COUNTRY_NAME)[0].value
        tbs = cbor2.dumps(["Signature1", protected, b"", payload])
        der = utils.encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
        ds.public_key().verify(der, tbs, ec.ECDSA(hashes.SHA256()))
        mso = cbor2.loads(cbor2.loads(payload).value)
        assert mso["digestAlgorithm"] == "SHA-256"
        validity = mso["validityInfo"]
        assert validity["validFrom"] <= now <= validity["validUntil"]
        assert ds.not_valid_before_utc <= validity["signed"] <= ds.not_valid_after_utc
        for ns, items in doc["issuerSigned"]["nameSpaces"].items():
            seen = set()
            for item in items:
                decoded = cbor2.loads(item.value)
                assert decoded["digestID"] not in seen
                seen.add(decoded["digestID"])
                expected = mso["valueDigests"][ns][decoded["digestID"]]
                assert hashlib.sha256(cbor2.dumps(item)).digest() == expected
                if decoded["elementIdentifier"] == "issuing_country":
                    assert decoded["elementValue"] == country
        assert mso["docType"] == doc["docType"]
        dk = mso["deviceKeyInfo"]["deviceKey"]
        static = ec.EllipticCurvePublicNumbers(int.from_bytes(dk[-2], "big"), int.from_bytes(dk[-3], "big"),
                                               ec.SECP256R1()).public_key()
        emac = hkdf(reader.exchange(ec.ECDH(), static), salt, b"EMacKey")
        device_ns = doc["deviceSigned"]["nameSpaces"]
        auth = cbor2.dumps(cbor2.CBORTag(24, cbor2.dumps(["DeviceAuthentication", cbor2.loads(transcript),
                                                          doc["docType"], device_ns])))
        mprot, _, _, tag = doc["deviceSigned"]["deviceAuth"]["deviceMac"]
        structure = cbor2.dumps(["MAC0", mprot, b"", auth])
        assert hmac.compare_digest(hmac.new(emac, structure, hashlib.sha256).digest(), tag)
    verify_once()
    for _ in range(20): verify_once()
    """# + servesChunks

/// pymdoccbor (the library issue 11 names) on the same DeviceResponse: parse, then `verify()` with the IACA as the
/// trusted root (MSO signature, chain, digests), its clock set to the instant the other verifiers check at. It does less than either verifier above: no session keys, no
/// decryption of SessionData, no deviceMac. Prints `missing` when it is not installed.
let pymdoccbor = #"""
    import sys, time
    try:
        import cryptography.x509  # pymdoccbor uses cryptography.x509 without importing it
        from pymdoccbor.mdoc.verifier import MdocCbor
    except ImportError:
        print("missing"); sys.exit(0)
    import logging; logging.disable(logging.CRITICAL)
    import datetime
    import pymdoccbor.mso.verifier as mso_verifier
    class At2021(datetime.datetime):  # the instant the other verifiers check at: the Annex D signer expired in 2021
        @classmethod
        def now(cls, tz=None): return datetime.datetime(2021, 1, 1, tzinfo=datetime.timezone.utc)
    mso_verifier.datetime = At2021
    args = dict(field.split("=", 1) for field in sys.stdin.readline().split())
    response = bytes.fromhex(args["dr"])
    iaca = cryptography.x509.load_der_x509_certificate(bytes.fromhex(args["iaca"]))
    def verify_once():
        mdoc = MdocCbor()
        mdoc.loads(response)
        if not mdoc.verify(trusted_root_certs=[iaca]): raise SystemExit("pymdoccbor refused the Annex D response")
    verify_once()
    """# + servesChunks

/// A Python verifier kept running beside the Swift loop: it measures in chunks between ours, so both medians come
/// from the same stretches of the run. (Measured one after the other, each saw its own share of a shared
/// machine's load, and the ratio moved by up to 2× between runs.)
final class PythonVerifier {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffered = Data()
    private let what: String
    private(set) var times: [Double] = []

    /// Starts `script` with `fields` (`name=hex`) on its first input line and waits until it has warmed up; `nil`
    /// when it printed `missing`.
    init?(_ script: String, fields: [String], what: String) throws {
        self.what = what
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data((fields.joined(separator: " ") + "\n").utf8))
        switch readLine() {
        case "ready": break
        case "missing":
            finish()
            return nil
        default: fatalError("\(what) failed to start")
        }
    }

    private func readLine() -> String? {
        while true {
            if let end = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[buffered.startIndex..<end], as: UTF8.self)
                buffered = Data(buffered[(end + 1)...])
                return line
            }
            let more = output.fileHandleForReading.availableData
            if more.isEmpty { return nil }
            buffered += more
        }
    }

    /// Runs `count` verifications there and keeps their times.
    func run(_ count: Int) {
        input.fileHandleForWriting.write(Data("\(count)\n".utf8))
        guard let line = readLine() else { fatalError("\(what) failed (a check did not pass)") }
        let chunk = line.split(separator: " ").compactMap { Double($0) }
        guard chunk.count == count else { fatalError("\(what) answered \(chunk.count) times for \(count)") }
        times += chunk
    }

    func finish() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

// MDL_BENCHMARK_NO_PYTHON=1 skips the baselines (for profiling the Swift side alone).
let runsPython = ProcessInfo.processInfo.environment["MDL_BENCHMARK_NO_PYTHON"] == nil
let leanVerifier =
    runsPython
    ? try PythonVerifier(
        python,
        fields: [
            "de=" + AnnexD.deviceEngagement, "rk=" + AnnexD.eReaderKeyScalar, "hs=" + AnnexD.handoverSelect,
            "hr=" + AnnexD.handoverRequest, "sd=" + AnnexD.sessionData, "iaca=" + AnnexD.iaca,
        ],
        what: "the Python verifier (needs cryptography and cbor2)"
    ) : nil
if runsPython && leanVerifier == nil { fatalError("the Python verifier needs cryptography and cbor2") }
let pymdoccborVerifier =
    runsPython
    ? try PythonVerifier(
        pymdoccbor,
        fields: ["dr=" + AnnexD.deviceResponse, "iaca=" + AnnexD.iaca],
        what: "pymdoccbor"
    )
    : nil

// Ten rounds: a tenth of our iterations, then a tenth of each Python verifier's (a fifth as many, at least 50).
let rounds = 10
let pythonPerRound = max(5, iterations / 5 / rounds)
var swiftTimes: [Double] = []
for _ in 0..<rounds {
    for _ in 0..<max(1, iterations / rounds) {
        let start = clock.now
        _ = try verifyOnce()
        swiftTimes.append(microseconds(clock.now - start))
    }
    leanVerifier?.run(pythonPerRound)
    pymdoccborVerifier?.run(pythonPerRound)
}
leanVerifier?.finish()
pymdoccborVerifier?.finish()

/// Where the time goes: each stage measured alone, medians.
func stage(_ body: () throws -> Void) rethrows -> Double {
    var times: [Double] = []
    for _ in 0..<max(20, iterations / 5) {
        let start = clock.now
        try body()
        times.append(microseconds(clock.now - start))
    }
    return median(times)
}
let engagement = try DeviceEngagement(encoded: engagementBytes)
let readerKey = try ECPrivateKey(curve: .p256, rawRepresentation: readerScalar)
let baseSession = try MdocSession(engagement: engagement, handover: handover, readerKey: readerKey)
let response = try {
    var copy = baseSession; return try copy.openSessionData(sessionData)
}()
let issuerAuth = try COSESign1(
    try CBORDecoder.decode(response)["documents"]!.arrayValue![0]["issuerSigned"]!["issuerAuth"]!
)
let signerDER = try issuerAuth.certificateChain()[0]
let signer = try X509Certificate(derRepresentation: signerDER)
let signerKey = signer.publicKey!
let issuerToBeSigned = COSESign1.sigStructure(
    protectedBytes: issuerAuth.protectedBytes,
    externalAAD: [],
    payload: issuerAuth.payload ?? []
)
let signerP256 = signerKey.p256!
let issuerSignature = try P256.ECDSASignature(rawRepresentation: issuerAuth.signature)
let stages: [(String, Double)] = [
    (
        "engagement + reader key",
        try stage {
            _ = try DeviceEngagement(encoded: engagementBytes);
            _ = try ECPrivateKey(curve: .p256, rawRepresentation: readerScalar)
        }
    ),
    (
        "session keys (ECDH + 2 HKDF)",
        try stage { _ = try MdocSession(engagement: engagement, handover: handover, readerKey: readerKey) }
    ),
    (
        "decrypt SessionData",
        try stage {
            var copy = baseSession; _ = try copy.openSessionData(sessionData)
        }
    ),
    ("CBOR decode of the response", try stage { _ = try CBORDecoder.decode(response) }),
    ("X.509 parse of the DS certificate", try stage { _ = try X509Certificate(derRepresentation: signerDER) }),
    (
        "X.509 path + Annex B profile",
        try stage { _ = try MdocCertificateProfile.validateDocumentSigner(signer, store: trust.store, at: now) }
    ),
    (
        "X.509 path, validated before",
        try stage { _ = try trust.validateDocumentSigner(signer, intermediates: [], at: now) }
    ),
    ("issuer signature (ES256)", try stage { try issuerAuth.verify(with: signerKey) }),
    (
        "  ES256 alone, EVP (key imported per call)",
        stage {
            _ = signerKey.isValidSignatureThroughEVP(issuerAuth.signature, for: issuerToBeSigned, digest: .sha256)
        }
    ),
    (
        "  ES256 alone, pooled group",
        stage {
            _ = signerKey.isValidSignature(issuerAuth.signature, for: issuerToBeSigned, digest: .sha256)
        }
    ),
    (
        "  ES256 alone, P256 (imported-key cache)",
        stage {
            _ = signerP256.isValidSignature(issuerSignature, for: issuerToBeSigned)
        }
    ),
    ("EMacKey (ECDH + HKDF)", try stage { _ = try baseSession.deviceMacKey(deviceKey: engagement.deviceKey) }),
    (
        "verifyDeviceResponse",
        try stage {
            _ = try verifyDeviceResponse(
                response,
                request: request,
                sessionTranscript: baseSession.sessionTranscript,
                macKey: { try baseSession.deviceMacKey(deviceKey: $0) },
                trust: trust,
                now: now
            )
        }
    ),
]
for (name, value) in stages { print(String(format: "  stage %-34@ %8.1f µs", name as NSString, value)) }

// The first read of a document signer also parses its certificate (later reads find it parsed in the trust).
var firstTimes: [Double] = []
for _ in 0..<max(20, iterations / 5) {
    trust.forgetDocumentSigners()
    let start = clock.now
    let engagement = try DeviceEngagement(encoded: engagementBytes)
    let readerKey = try ECPrivateKey(curve: .p256, rawRepresentation: readerScalar)
    var session = try MdocSession(engagement: engagement, handover: handover, readerKey: readerKey)
    let opened = try session.openSessionData(sessionData)
    _ = try verifyDeviceResponse(
        opened,
        request: request,
        sessionTranscript: session.sessionTranscript,
        macKey: { try session.deviceMacKey(deviceKey: $0) },
        trust: trust,
        now: now
    )
    firstTimes.append(microseconds(clock.now - start))
}
let coldMedian = median(firstTimes)
print(String(format: "  the whole read with a document signer not yet seen: %8.1f µs", coldMedian))

let pythonMedian = leanVerifier.map { median($0.times) } ?? .nan
let pymdoccborMedian = pymdoccborVerifier.map { median($0.times) }
let swiftMedian = median(swiftTimes)
print("Annex D DeviceResponse, reader side (keys, decrypt, parse, issuer signature + chain, 6 digests, deviceMac)")
print(
    pinnedCPU.map { "  both sides pinned to CPU \($0), taking turns in \(rounds) rounds" }
        ?? "  not pinned to one CPU (sched_setaffinity failed): the two sides may have run on different CPUs"
)
print(String(format: "  Proxima:          %8.1f µs median of %d (thread CPU time)", swiftMedian, swiftTimes.count))
print(
    String(
        format: "  Python verifier:  %8.1f µs median (cryptography + cbor2, same bytes, same run, thread CPU time)",
        pythonMedian
    )
)
print(String(format: "  ratio:            %8.1f× faster (goal ≥ 10×; goal ≤ 3000 µs)", pythonMedian / swiftMedian))
print(
    String(
        format: "  ratio, signer not yet seen (the whole read plus its parse and full chain check): %.1f×",
        pythonMedian / coldMedian
    )
)
if let pymdoccborMedian {
    print(
        String(
            format: "  pymdoccbor:       %8.1f µs median (parse + verify with the IACA: MSO signature, chain, digests;"
                + " no decryption, no deviceMac), same bytes, same run",
            pymdoccborMedian
        )
    )
    print(
        String(
            format: "  ratio to pymdoccbor: %.1f× faster doing more (goal ≥ 10×); signer not yet seen: %.1f×",
            pymdoccborMedian / swiftMedian,
            pymdoccborMedian / coldMedian
        )
    )
} else if runsPython {
    print("  pymdoccbor: not installed (python3 -m pip install pymdoccbor), not compared")
}
