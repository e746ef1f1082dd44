import Foundation
import Proxima
import ProximaCore
import ProximaProcessorSandbox
import ProximaTestSupport
import StoreAndForwardCapability
import Testing

/// A processor written from `Docs/store-and-forward-batch.md` alone, in Python with `cryptography`, reads a batch
/// container this store made, verifies the certificate's self-signature, every record signature, every envelope
/// digest and the batch signature, and refuses the container with one byte changed.
@Suite struct PythonPeerTests {
    static let verifier = #"""
        import sys, struct, hashlib
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

        def der(sig):
            return encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))

        data = open(sys.argv[1], "rb").read()
        o = 0
        def take(n):
            global o
            if o + n > len(data): raise SystemExit("short")
            b = data[o:o + n]; o += n; return b
        def u(n): return int.from_bytes(take(n), "big")
        def str8(): return take(u(1)).decode()
        assert take(4) == b"PXB1" and u(1) == 1
        batch_id = str8(); reader = str8(); created = u(8); count = u(4)
        records = []
        for _ in range(count):
            body = take(u(4)); envelope = take(u(4)); sig = take(64)
            records.append((body, envelope, sig))
        cert_der = take(u(2)); signed_end = o; batch_sig = take(64)
        assert o == len(data), "trailing bytes"
        cert = x509.load_der_x509_certificate(cert_der)
        key = cert.public_key()
        key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(hashes.SHA256()))
        key.verify(der(batch_sig), data[:signed_end], ec.ECDSA(hashes.SHA256()))
        ids = []
        for body, envelope, sig in records:
            key.verify(der(sig), b"PXR1" + body, ec.ECDSA(hashes.SHA256()))
            assert body[-32:] == hashlib.sha256(envelope).digest(), "envelope digest"
            ids.append(body[1:1 + body[0]].decode())
        print(batch_id, count, hashlib.sha256(data).hexdigest(), ",".join(ids))
        """#

    @Test(.enabled(if: Python.isAvailable)) func aPythonProcessorVerifiesTheBatchFromTheSpecification() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path)
        try await Harness.withKernel(manifest) { kernel in
            let (reader, session) = try await Harness.offlineSession(kernel)
            let ids = [
                try await session.readPaymentCard(Harness.purchase("3.00")).id,
                try await session.readPaymentCard(Harness.purchase("4.50")).id,
            ]
            let batch = try await reader.fetchPaymentCardReaderStore().fetchStoredPaymentCardReadResultBatch()
            let file = directory.path + "/batch.bin"
            try batch.data.write(to: URL(fileURLWithPath: file))
            let output = try Python.run(Self.verifier, arguments: [file]).split(separator: " ").map(String.init)
            #expect(output.count == 4)
            #expect(output.first == batch.id)
            #expect(output.dropFirst().first == "2")
            let digest = try BatchContainer.digest(Array(batch.data)).map { String(format: "%02x", $0) }.joined()
            #expect(output.dropFirst(2).first == digest)
            #expect(output.last == ids.joined(separator: ","))

            var altered = Array(batch.data)
            altered[altered.count - 100] ^= 0x80
            try Data(altered).write(to: URL(fileURLWithPath: file))
            #expect(throws: Python.Failure.self) { try Python.run(Self.verifier, arguments: [file]) }
        }
    }
}
