import Foundation
import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import LoyaltyCapability

/// The Smart Tap 2.1 key schedule and record bundle, byte-exact against an independent Python implementation
/// (`cryptography`) written here, with fixed ephemeral keys and nonces. The collector key is Google's published
/// sample long-term key (`NegotiateCryptoCommand.java` of Google's Smart Tap sample terminal, Apache-2.0;
/// the same key as proxmark3 `client/resources/gst.google.der`), collector id 20180608, key version 1.
@Suite(.enabled(if: Python.isAvailable)) struct SmartTapCryptoTests {
    static let collectorScalar = bytes("826d17e50767b165b0e4d9e332f8d1d1e20224284fb4daf1e50a03246e70797d")
    static let collectorID: UInt32 = 20_180_608
    static let readerScalar = [UInt8](repeating: 0x11, count: 32)
    static let deviceScalar = [UInt8](repeating: 0x22, count: 32)
    static let readerNonce = [UInt8](repeating: 0x33, count: 32)
    static let deviceNonce = [UInt8](repeating: 0x44, count: 32)
    static let iv = [UInt8](repeating: 0x55, count: 12)
    static let plaintext = Array("Smart Tap record bundle: redemption value 2018".utf8)

    static let python = #"""
        import json, sys
        from cryptography.hazmat.primitives import hashes, hmac
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        collector = ec.derive_private_key(int(sys.argv[1], 16), ec.SECP256R1())
        reader = ec.derive_private_key(int(sys.argv[2], 16), ec.SECP256R1())
        device = ec.derive_private_key(int(sys.argv[3], 16), ec.SECP256R1())
        reader_nonce, device_nonce = bytes.fromhex(sys.argv[4]), bytes.fromhex(sys.argv[5])
        collector_id = int(sys.argv[6]).to_bytes(4, "big")
        signature = bytes.fromhex(sys.argv[7])
        iv, plaintext = bytes.fromhex(sys.argv[8]), bytes.fromhex(sys.argv[9])

        reader_pub = reader.public_key().public_bytes(Encoding.X962, PublicFormat.CompressedPoint)
        device_pub = device.public_key().public_bytes(Encoding.X962, PublicFormat.CompressedPoint)
        signed = reader_nonce + device_nonce + collector_id + reader_pub
        collector.public_key().verify(signature, signed, ec.ECDSA(hashes.SHA256()))  # raises if it fails
        z = device.exchange(ec.ECDH(), reader.public_key())
        okm = HKDF(hashes.SHA256(), 48, salt=device_pub, info=signed + signature).derive(z)
        aes_key, mac_key = okm[:16], okm[16:]
        encryptor = Cipher(algorithms.AES(aes_key), modes.CTR(iv + bytes(4))).encryptor()
        ciphertext = encryptor.update(plaintext) + encryptor.finalize()
        mac = hmac.HMAC(mac_key, hashes.SHA256()); mac.update(iv + ciphertext)
        bundle = b"\x01" + iv + ciphertext + mac.finalize()
        print(json.dumps({"devicePublic": device_pub.hex(), "aes": aes_key.hex(), "mac": mac_key.hex(),
                          "signed": signed.hex(), "bundle": bundle.hex()}))
        """#

    @Test func keysAndBundleMatchPythonBothWays() throws {
        let collector = try P256.PrivateKey(rawRepresentation: Self.collectorScalar)
        let reader = try P256.PrivateKey(rawRepresentation: Self.readerScalar)
        let device = try P256.PrivateKey(rawRepresentation: Self.deviceScalar)
        let signed = SmartTapCrypto.signedData(
            readerNonce: Self.readerNonce,
            deviceNonce: Self.deviceNonce,
            collectorID: Self.collectorID,
            readerEphemeral: reader.publicKey
        )
        #expect(signed.count == 32 + 32 + 4 + 33)
        #expect(hex(Array(signed[64..<68])) == "0133ee80")
        let signature = try collector.signature(for: signed)
        let peer = try Python.runJSON(
            Self.python,
            arguments: [
                hex(Self.collectorScalar), hex(Self.readerScalar), hex(Self.deviceScalar), hex(Self.readerNonce),
                hex(Self.deviceNonce), "\(Self.collectorID)", hex(signature.derRepresentation), hex(Self.iv),
                hex(Self.plaintext),
            ]
        )
        guard case .string(let devicePublic)? = peer["devicePublic"], case .string(let aes)? = peer["aes"],
            case .string(let mac)? = peer["mac"], case .string(let pySigned)? = peer["signed"],
            case .string(let bundle)? = peer["bundle"]
        else {
            Issue.record("the Python peer printed \(peer)")
            return
        }
        #expect(pySigned == hex(signed))
        #expect(devicePublic == hex(device.publicKey.compressedRepresentation))
        let keys = try SmartTapCrypto.sessionKeys(
            readerEphemeral: reader,
            deviceEphemeral: bytes(devicePublic),
            readerNonce: Self.readerNonce,
            deviceNonce: Self.deviceNonce,
            collectorID: Self.collectorID,
            signature: signature
        )
        #expect(hex(keys.encryption) == aes)
        #expect(hex(keys.authentication) == mac)
        // Sealed here, byte-exact with Python's; Python's opened here.
        #expect(hex(try SmartTapCrypto.sealBundle(Self.plaintext, iv: Self.iv, keys: keys)) == bundle)
        let opened = try SmartTapCrypto.openBundle(bytes(bundle), keys: keys)
        #expect(opened.flags == 0x01)
        #expect(opened.plaintext == Self.plaintext)

        var altered = bytes(bundle)
        altered[20] ^= 0x01
        #expect(throws: LoyaltyError(.cryptogramRejected, step: "", "")) {
            try SmartTapCrypto.openBundle(altered, keys: keys)
        }
        #expect(throws: LoyaltyError(.cardReadFailed, step: "", "")) {
            try SmartTapCrypto.openBundle(Array(bytes(bundle).prefix(44)), keys: keys)
        }
    }
}
