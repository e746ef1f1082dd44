import Foundation
import ProximaCardEmulator
import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import LoyaltyCapability

/// A whole Smart Tap 2.1 read — SELECT OSE, SELECT Smart Tap 2, NEGOTIATE SECURE CHANNEL, GET DATA and GET MORE
/// DATA — between the reader and the virtual Android phone with fixed keys, nonces, session id and IV, compared
/// byte for byte with an independent Python implementation (`cryptography`, `zlib`) written here from the protocol
/// notes (kormax/google-smart-tap README; Google's sample terminal, Apache-2.0). The reader's ECDSA signature is
/// randomised, so Python takes it from the transcript's NEGOTIATE command after verifying it, and builds every other
/// byte itself. The collector key is Google's published sample long-term key (`NegotiateCryptoCommand.java`;
/// proxmark3 `client/resources/gst.google.der`), collector 20180608, key version 1.
@Suite(.enabled(if: Python.isAvailable)) struct SmartTapTranscriptTests {
    static let collectorScalar = bytes("826d17e50767b165b0e4d9e332f8d1d1e20224284fb4daf1e50a03246e70797d")
    static let collectorID: UInt32 = 20_180_608
    static let readerScalar = [UInt8](repeating: 0x11, count: 32)
    static let deviceScalar = [UInt8](repeating: 0x22, count: 32)
    static let readerNonce = [UInt8](repeating: 0x33, count: 32)
    static let deviceNonce = [UInt8](repeating: 0x44, count: 32)
    static let sessionID = [UInt8](repeating: 0x66, count: 8)
    static let iv = [UInt8](repeating: 0x55, count: 12)

    static let python = #"""
        import json, sys, zlib
        from cryptography.hazmat.primitives import hashes, hmac
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        a = json.loads(sys.argv[1])
        h = bytes.fromhex
        key = lambda s: ec.derive_private_key(int(s, 16), ec.SECP256R1())
        collector, reader, device = key(a["collector"]), key(a["reader"]), key(a["device"])
        rn, dn, sid, iv = h(a["readerNonce"]), h(a["deviceNonce"]), h(a["session"]), h(a["iv"])
        cid, kv = a["collectorID"].to_bytes(4, "big"), a["keyVersion"].to_bytes(4, "big")
        point = lambda k: k.public_key().public_bytes(Encoding.X962, PublicFormat.CompressedPoint)
        rpub, dpub = point(reader), point(device)

        def record(t, payload, tnf=4, rid=b""):
            return (tnf, t.encode(), rid, payload)

        def message(*records):
            out = b""
            for i, (tnf, t, rid, p) in enumerate(records):
                short = len(p) < 256
                head = tnf | (0x80 if i == 0 else 0) | (0x40 if i == len(records) - 1 else 0)
                head |= (0x10 if short else 0) | (0x08 if rid else 0)
                out += bytes([head, len(t)]) + (bytes([len(p)]) if short else len(p).to_bytes(4, "big"))
                out += (bytes([len(rid)]) if rid else b"") + t + rid + p
            return out

        def parse(b):
            records, i = [], 0
            while i < len(b):
                head, tl = b[i], b[i + 1]
                i += 2
                if head & 0x10:
                    pl, i = b[i], i + 1
                else:
                    pl, i = int.from_bytes(b[i:i + 4], "big"), i + 4
                il = 0
                if head & 0x08:
                    il, i = b[i], i + 1
                t, rid, p = b[i:i + tl], b[i + tl:i + tl + il], b[i + tl + il:i + tl + il + pl]
                i += tl + il + pl
                records.append((t.decode(), p))
            return dict(records)

        def tlv(tag, value):
            n = len(value)
            return h(tag) + (bytes([n]) if n < 128 else bytes([0x81, n])) + value

        def apdu(cla, ins, data=b"", p1=0):
            return bytes([cla, ins, p1, 0]) + (bytes([len(data)]) + data if data else b"") + b"\x00"

        ok = h("9000")
        # The reader's signature, read from its NEGOTIATE command with this script's own NDEF parser.
        negotiate = h(a["negotiateCommand"])
        ngr = parse(negotiate[5:-1])["ngr"]
        cpr = parse(ngr[2:])["cpr"]
        sig = parse(cpr[70:])["sig"][1:]
        signed = rn + dn + cid + rpub
        collector.public_key().verify(sig, signed, ec.ECDSA(hashes.SHA256()))  # raises if it does not verify
        r, s = decode_dss_signature(sig)

        commands, responses = [], []
        commands.append(apdu(0x00, 0xA4, b"OSE.VAS.01", p1=4))
        entry = tlv("61", tlv("4f", h("a000000476d0000111")) + tlv("87", b"\x01")
                    + tlv("73", tlv("df6d", h("0000")) + tlv("df4d", h("0001"))))
        fci = (tlv("50", b"AndroidPay") + tlv("c0", h("0001")) + tlv("c1", h("cc00000000008080"))
               + tlv("c2", dn) + tlv("c3", dpub) + tlv("a5", tlv("bf0c", entry)))
        responses.append(tlv("6f", fci) + ok)
        commands.append(apdu(0x00, 0xA4, h("a000000476d0000111"), p1=4))
        responses.append(h("00000001") + message(record("mdn", b"\x04" + dn, rid=b"mdn")) + ok)

        ses = lambda seq: record("ses", sid + bytes([seq, 1]))
        cld = record("cld", b"\x04" + cid)
        proof = message(record("sig", b"\x04" + sig), cld)
        commands.append(apdu(0x90, 0x53, message(record("ngr", h("0001") + message(
            ses(0), record("cpr", rn + b"\x01" + rpub + kv + proof))))))
        responses.append(message(record("nrs", message(ses(1), record("dpk", dpub)))) + ok)

        z = device.exchange(ec.ECDH(), reader.public_key())
        okm = HKDF(hashes.SHA256(), 48, salt=dpub, info=signed + sig).derive(z)
        aes, mac_key = okm[:16], okm[16:]
        commands.append(apdu(0x90, 0x50, message(record("srq", h("0001") + message(
            ses(1), record("mer", message(cld)), record("slr", message(record("str", b"\x01"))),
            record("pcr", bytes([0x41, 0, 0, 0, a["vasType"]])))))))
        value = a["value"].encode()
        plain = message(record("asv", message(record("ly", message(
            record("i", h("040000000001"), tnf=1, rid=b"i"), record("n", b"\x00" + value, tnf=1, rid=b"n"))))))
        flags = 1
        if a["compress"]:
            plain, flags = zlib.compress(plain, 6), 3
        enc = Cipher(algorithms.AES(aes), modes.CTR(iv + bytes(4))).encryptor()
        ct = enc.update(plain) + enc.finalize()
        m = hmac.HMAC(mac_key, hashes.SHA256()); m.update(iv + ct)
        answer = message(record("srs", message(ses(2), record("reb", bytes([flags]) + iv + ct + m.finalize()))))
        size = a["chunk"]
        parts = [answer[i:i + size] for i in range(0, len(answer), size)]
        for i, part in enumerate(parts):
            if i > 0:
                commands.append(apdu(0x90, 0xC0))
            responses.append(part + (ok if i == len(parts) - 1 else h("9100")))

        # Decrypt what the Swift phone actually sent, independently.
        sent = b"".join(bytes.fromhex(x)[:-2] for x in a["phoneAnswers"])
        reb = parse(parse(sent)["srs"])["reb"]
        check = hmac.HMAC(mac_key, hashes.SHA256()); check.update(reb[1:-32]); check.verify(reb[-32:])
        dec = Cipher(algorithms.AES(aes), modes.CTR(reb[1:13] + bytes(4))).decryptor()
        inner = dec.update(reb[13:-32]) + dec.finalize()
        if reb[0] & 2:
            inner = zlib.decompress(inner)
        n = parse(parse(parse(inner)["asv"])["ly"])["n"][1:]
        print(json.dumps({"commands": [c.hex() for c in commands], "responses": [r.hex() for r in responses],
                          "decrypted": n.decode(), "aes": aes.hex(), "mac": mac_key.hex()}))
        """#

    static func settings(keyVersion: UInt32 = 1) throws -> LoyaltySettings {
        LoyaltySettings(
            merchants: [try TestKeys.merchant("pass.com.example.loyalty", keys: [try TestKeys.merchantKey])],
            maxCryptogramAge: .seconds(300),
            smartTap: try LoyaltySettings.SmartTap(
                collectorID: collectorID,
                keyVersion: keyVersion,
                privateKey: try P256.PrivateKey(rawRepresentation: collectorScalar)
            )
        )
    }

    static func fixedPhone(value: String, compress: Bool, chunkSize: Int) throws -> SmartTapPhone {
        let collector = try P256.PrivateKey(rawRepresentation: collectorScalar)
        let device = try P256.PrivateKey(rawRepresentation: deviceScalar)
        return SmartTapPhone(
            name: "fixed Android phone",
            passes: [
                SmartTapPhone.Pass(
                    collectorID: collectorID,
                    keyVersion: 1,
                    collectorKey: collector.publicKey,
                    redemptionValue: Array(value.utf8),
                    compress: compress
                )
            ],
            chunkSize: chunkSize,
            randomness: SmartTapPhone.Randomness(
                deviceNonce: { deviceNonce },
                ephemeralKey: { device },
                iv: { iv }
            )
        )
    }

    /// The fixed inputs and what the transcript needs from the run, as the script's one JSON argument.
    static func pythonArguments(value: String, compress: Bool, chunkSize: Int, channel: InProcessCardChannel) -> String
    {
        let members: [(key: String, value: JSONValue)] = [
            ("collector", .string(hex(collectorScalar))), ("reader", .string(hex(readerScalar))),
            ("device", .string(hex(deviceScalar))), ("readerNonce", .string(hex(readerNonce))),
            ("deviceNonce", .string(hex(deviceNonce))), ("session", .string(hex(sessionID))),
            ("iv", .string(hex(iv))), ("collectorID", .integer(Int64(collectorID))), ("keyVersion", .integer(1)),
            ("vasType", .integer(1)), ("value", .string(value)), ("compress", .bool(compress)),
            ("chunk", .integer(Int64(chunkSize))), ("negotiateCommand", .string(hex(channel.commands[2]))),
            ("phoneAnswers", .array(channel.responses.dropFirst(3).map { .string(hex($0)) })),
        ]
        return JSONValue.object(members).jsonText
    }

    static let fixedReader = SmartTapRandomness(
        bytes: { count in count == 32 ? readerNonce : sessionID },
        ephemeralKey: { try P256.PrivateKey(rawRepresentation: readerScalar) }
    )

    @Test(arguments: [(false, 240), (true, 64), (false, 48)])
    func transcriptMatchesPythonByteForByte(compress: Bool, chunkSize: Int) async throws {
        let value = "2018-PROXIMA-SMART-TAP-REDEMPTION-VALUE"
        let channel = InProcessCardChannel(
            card: try Self.fixedPhone(value: value, compress: compress, chunkSize: chunkSize),
            reader: "test/android"
        )
        let capability = AppleVASCapability(
            settings: try Self.settings(),
            now: { fixedNow },
            smartTapRandomness: Self.fixedReader
        )
        let outcome = try await capability.run(
            VASReadRequest(merchants: [VASMerchantRequest(passTypeIdentifier: "20180608")], mode: .vasOnly),
            on: channel,
            context: tapContext
        )
        #expect(outcome.entries.map(\.passTypeIdentifier) == ["20180608"])
        #expect(outcome.entries.map(\.status) == [.success])
        #expect(outcome.entries.first?.message == Array(value.utf8))

        let arguments = Self.pythonArguments(
            value: value,
            compress: compress,
            chunkSize: chunkSize,
            channel: channel
        )
        let peer = try Python.runJSON(Self.python, arguments: [arguments])
        guard case .array(let commands)? = peer["commands"], case .array(let responses)? = peer["responses"],
            case .string(let decrypted)? = peer["decrypted"]
        else {
            Issue.record("the Python peer printed \(peer)")
            return
        }
        #expect(commands.compactMap(\.stringValue) == channel.commands.map(hex))
        #expect(responses.compactMap(\.stringValue) == channel.responses.map(hex))
        #expect(channel.commands.count == 4 + max(0, responses.count - 4))
        // Python decrypted what the Swift phone sealed; the Swift reader decrypted it too (above).
        #expect(decrypted == value)
    }

    @Test func swiftOpensABundleSealedByPythonKeys() async throws {
        // The record bundle's keys from Python's HKDF open the phone's answer through the reader's parser.
        let channel = InProcessCardChannel(
            card: try Self.fixedPhone(value: "2018", compress: true, chunkSize: 240),
            reader: "test/android"
        )
        let capability = AppleVASCapability(settings: try Self.settings(), smartTapRandomness: Self.fixedReader)
        _ = try await capability.run(
            VASReadRequest(merchants: [VASMerchantRequest(passTypeIdentifier: "20180608")], mode: .vasOnly),
            on: channel,
            context: tapContext
        )
        let arguments = Self.pythonArguments(value: "2018", compress: true, chunkSize: 240, channel: channel)
        let peer = try Python.runJSON(Self.python, arguments: [arguments])
        guard case .array(let responses)? = peer["responses"], case .string(let aes)? = peer["aes"],
            case .string(let mac)? = peer["mac"], let last = responses.last?.stringValue
        else {
            Issue.record("the Python peer printed \(peer)")
            return
        }
        let answer = Array(bytes(last).dropLast(2))
        let sent = SmartTapSessionRecord(sessionID: Self.sessionID, sequence: 1)
        let bundle = try VASSession.parseServiceResponse(answer, sent: sent, step: "test")
        let keys = SmartTapCrypto.SessionKeys(encryption: bytes(aes), authentication: bytes(mac))
        #expect(try VASSession.openSmartTapPass(bundle, keys: keys, collector: "20180608") == Array("2018".utf8))
    }
}

extension JSONValue {
    var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }
}
