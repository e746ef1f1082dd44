#!/usr/bin/env python3
"""A TEST mDL holder in Python (cbor2 + cryptography), independent of Proxima's Swift code: it issues its mdoc
itself (MSO signed with the TEST document signer of Config/keys), and presents it over vsmartcard's vpcd protocol
(TCP, 2-byte big-endian length-prefixed frames; a 1-byte frame is a control message: 00 power off, 01 power on,
02 reset, 04 get ATR) as ISO/IEC 18013-5 NFC engagement (static handover from an NFC Forum Type 4 Tag) and NFC data
transfer (ENVELOPE with DO'53', CLA 10 chaining, 61xx and GET RESPONSE).

usage: mdl_holder.py PORT KEYS_DIR [TAMPER]
TAMPER: none, tamperedElement, expiredMSO, unknownIACA, wrongDocType, badDeviceMAC, badDeviceSignature,
muteAfterEngagement. Prints "ready" once connected; each DeviceRequest's elements and intents as one JSON line
("request {...}"); exits when vpcd closes the connection.
"""
import cbor2, datetime, hashlib, hmac, json, os, signal, socket, struct, sys

signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a test runner may have left it ignored
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

port, keys = int(sys.argv[1]), sys.argv[2]
tamper = sys.argv[3] if len(sys.argv) > 3 else "none"
load = lambda name: open(os.path.join(keys, name), "rb").read()
ds_cert = x509.load_pem_x509_certificate(load("mdl-ds-test.pem"))
ds_key = serialization.load_pem_private_key(load("mdl-ds-test-private.pem"), None)
rogue_cert = x509.load_pem_x509_certificate(load("mdl-rogue-ds-test.pem"))
rogue_key = serialization.load_pem_private_key(load("mdl-rogue-ds-test-private.pem"), None)
device_key = serialization.load_pem_private_key(load("mdl-device-test-private.pem"), None)
NS, DOCTYPE = "org.iso.18013.5.1", "org.iso.18013.5.1.mDL"
ATR = bytes.fromhex("3B8080010101")
UID = bytes.fromhex("08A1B2C3")
now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
ELEMENTS = [("family_name", "Mustermann"), ("given_name", "Erika"), ("birth_date", cbor2.CBORTag(1004, "1990-01-01")),
            ("age_over_21", True), ("issuing_country", "UT"), ("document_number", "PY-TEST-0001"),
            ("portrait", bytes.fromhex("FFD8FFE000104A464946000101FFD9"))]


def tdate(t):
    return cbor2.CBORTag(0, t.strftime("%Y-%m-%dT%H:%M:%SZ"))


def raw_signature(key, data):
    r, s = utils.decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def cose_key(public):
    n = public.public_numbers()
    return {1: 2, -1: 1, -2: n.x.to_bytes(32, "big"), -3: n.y.to_bytes(32, "big")}


def hkdf(ikm, salt, info):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(ikm)


def record(tnf, rtype, payload, first, last, ident=b""):
    header = tnf | 0x10 | (0x80 if first else 0) | (0x40 if last else 0) | (0x08 if ident else 0)
    out = bytes([header, len(rtype), len(payload)]) + (bytes([len(ident)]) if ident else b"")
    return out + rtype + ident + payload


class Holder:
    def __init__(self):
        self.selected, self.engaged, self.incoming, self.outgoing = None, False, b"", b""
        self.session = None
        self.ephemeral = ec.generate_private_key(ec.SECP256R1())
        self.engagement = cbor2.dumps({0: "1.0", 1: [1, cbor2.CBORTag(24, cbor2.dumps(cose_key(self.ephemeral.public_key())))]})
        carrier = record(1, b"ac", b"\x01\x03nfc\x01\x04mdoc", True, True)
        self.handover_select = (record(1, b"Hs", b"\x15" + carrier, True, False)
                                + record(4, b"iso.org:18013:nfc", bytes.fromhex("010301FFFF0402010000"), False, False, b"nfc")
                                + record(4, b"iso.org:18013:deviceengagement", self.engagement, False, True, b"mdoc"))
        self.ndef = struct.pack(">H", len(self.handover_select)) + self.handover_select

    # APDU level
    def respond(self, apdu):
        if len(apdu) < 4:
            return b"\x67\x00"
        cla, ins, p1, p2 = apdu[:4]
        data, le = b"", None
        body = apdu[4:]
        if len(body) == 1:
            le = body[0] or 256
        elif len(body) >= 3 and body[0] == 0:
            lc = (body[1] << 8) | body[2]
            if lc == 0 and len(body) == 3:
                le = 65536
            else:
                data = body[3:3 + lc]
                rest = body[3 + lc:]
                if len(rest) == 2:
                    le = ((rest[0] << 8) | rest[1]) or 65536
        elif len(body) >= 1:
            lc = body[0]
            data = body[1:1 + lc]
            rest = body[1 + lc:]
            if len(rest) == 1:
                le = rest[0] or 256
        if cla == 0xFF:
            if ins == 0xCA and p1 == 0x00:
                return UID + b"\x90\x00"
            return b"\x6A\x81"
        if tamper == "muteAfterEngagement" and self.engaged:
            return None
        if ins == 0xA4:
            return self.select(p1, data)
        if ins == 0xB0:
            return self.read_binary(p1, p2, le or 256)
        if ins == 0xC3:
            return self.envelope(cla, data, le or 256)
        if ins == 0xC0:
            return self.send(le or 256) if self.outgoing else b"\x69\x85"
        return b"\x6D\x00"

    def select(self, p1, data):
        if p1 == 0x04 and data == bytes.fromhex("D2760000850101"):
            self.selected = "ndef-app"
        elif p1 == 0x00 and data in (b"\xE1\x03", b"\xE1\x04") and self.selected not in (None, "transfer"):
            self.selected = "cc" if data == b"\xE1\x03" else "ndef"
        elif p1 == 0x04 and data == bytes.fromhex("A0000002480400"):
            self.selected = "transfer"
        else:
            return b"\x6A\x82"
        return b"\x90\x00"

    def read_binary(self, p1, p2, le):
        files = {"cc": bytes.fromhex("000F207FFF7FFF0406E1047FFF00FF"), "ndef": self.ndef}
        if self.selected not in files:
            return b"\x69\x85"
        content = files[self.selected]
        offset = ((p1 & 0x7F) << 8) | p2
        chunk = content[offset:offset + le]
        if self.selected == "ndef" and offset >= 2 and offset + len(chunk) == len(content):
            self.engaged = True
        return chunk + b"\x90\x00"

    def envelope(self, cla, data, le):
        if self.selected != "transfer":
            return b"\x69\x85"
        self.incoming += data
        if cla & 0x10:
            return b"\x90\x00"
        message, self.incoming = self.incoming, b""
        assert message[0] == 0x53
        if message[1] < 0x80:
            body = message[2:]
        else:
            width = message[1] & 0x7F
            body = message[2 + width:]
        answer = self.handle(cbor2.loads(body))
        n = len(answer)
        length = bytes([n]) if n < 0x80 else (b"\x81" + bytes([n]) if n < 0x100 else
                                                (b"\x82" + struct.pack(">H", n) if n < 0x10000 else b"\x83" + n.to_bytes(3, "big")))
        self.outgoing = b"\x53" + length + answer
        return self.send(le)

    def send(self, limit):
        chunk, self.outgoing = self.outgoing[:limit], self.outgoing[limit:]
        if not self.outgoing:
            return chunk + b"\x90\x00"
        return chunk + bytes([0x61, 0 if len(self.outgoing) >= 256 else len(self.outgoing)])

    # Session level (ISO/IEC 18013-5 §9.1.1)
    def handle(self, message):
        if self.session is not None:
            if "data" not in message:
                self.session = None
                return cbor2.dumps({"status": 20})
            request = self.open(message["data"])
            return cbor2.dumps({"data": self.seal(self.device_response(request))})
        reader_key_bytes = cbor2.dumps(message["eReaderKey"])
        reader_cose = cbor2.loads(message["eReaderKey"].value)
        self.reader_key = ec.EllipticCurvePublicNumbers(int.from_bytes(reader_cose[-2], "big"),
                                                       int.from_bytes(reader_cose[-3], "big"),
                                                       ec.SECP256R1()).public_key()
        self.transcript = (b"\x83" + cbor2.dumps(cbor2.CBORTag(24, self.engagement)) + reader_key_bytes
                           + cbor2.dumps([self.handover_select, None]))
        self.salt = hashlib.sha256(cbor2.dumps(cbor2.CBORTag(24, self.transcript))).digest()
        z = self.ephemeral.exchange(ec.ECDH(), self.reader_key)
        self.sk_reader, self.sk_device = hkdf(z, self.salt, b"SKReader"), hkdf(z, self.salt, b"SKDevice")
        self.session = [1, 1]
        request = self.open(message["data"])
        return cbor2.dumps({"data": self.seal(self.device_response(request))})

    def open(self, data):
        iv = b"\x00" * 7 + b"\x00" + struct.pack(">I", self.session[0])
        self.session[0] += 1
        return AESGCM(self.sk_reader).decrypt(iv, data, None)

    def seal(self, plaintext):
        iv = b"\x00" * 7 + b"\x01" + struct.pack(">I", self.session[1])
        self.session[1] += 1
        return AESGCM(self.sk_device).encrypt(iv, plaintext, None)

    def device_response(self, request_bytes):
        request = cbor2.loads(request_bytes)
        doc_request = request["docRequests"][0]
        items_request = cbor2.loads(doc_request["itemsRequest"].value)
        asked = items_request["nameSpaces"]
        print("request " + json.dumps({"docType": items_request["docType"], "elements": asked,
                                       "readerAuth": "readerAuth" in doc_request}, sort_keys=True), flush=True)
        wanted = asked.get(NS, {})
        digests, returned, tampered = {}, [], tamper != "tamperedElement"
        for i, (name, value) in enumerate(ELEMENTS):
            item = {"digestID": i, "random": os.urandom(16), "elementIdentifier": name, "elementValue": value}
            digests[i] = hashlib.sha256(cbor2.dumps(cbor2.CBORTag(24, cbor2.dumps(item)))).digest()
            if name not in wanted:
                continue
            if not tampered:
                tampered = True
                item = dict(item, elementValue="tampered")
            returned.append(cbor2.CBORTag(24, cbor2.dumps(item)))
        signed = now - datetime.timedelta(days=1)
        valid_until = signed if tamper == "expiredMSO" else now + datetime.timedelta(days=365)
        mso = {"version": "1.0", "digestAlgorithm": "SHA-256", "valueDigests": {NS: digests},
               "deviceKeyInfo": {"deviceKey": cose_key(device_key.public_key())},
               "docType": DOCTYPE + (".other" if tamper == "wrongDocType" else ""),
               "validityInfo": {"signed": tdate(signed), "validFrom": tdate(signed), "validUntil": tdate(valid_until)}}
        cert, key = (rogue_cert, rogue_key) if tamper == "unknownIACA" else (ds_cert, ds_key)
        protected = cbor2.dumps({1: -7})
        payload = cbor2.dumps(cbor2.CBORTag(24, cbor2.dumps(mso)))
        issuer_auth = [protected, {33: cert.public_bytes(serialization.Encoding.DER)}, payload,
                       raw_signature(key, cbor2.dumps(["Signature1", protected, b"", payload]))]
        device_ns = cbor2.CBORTag(24, cbor2.dumps({}))
        inner = (b"\x84" + cbor2.dumps("DeviceAuthentication") + self.transcript + cbor2.dumps(DOCTYPE)
                 + cbor2.dumps(device_ns))
        authenticated = cbor2.dumps(cbor2.CBORTag(24, inner))
        if tamper == "badDeviceSignature":
            signature = bytearray(raw_signature(device_key, cbor2.dumps(["Signature1", protected, b"", authenticated])))
            signature[0] ^= 1
            device_auth = {"deviceSignature": [protected, {}, None, bytes(signature)]}
        else:
            mac_key = hkdf(device_key.exchange(ec.ECDH(), self.reader_key), self.salt, b"EMacKey")
            mac_protected = cbor2.dumps({1: 5})
            tag = bytearray(hmac.new(mac_key, cbor2.dumps(["MAC0", mac_protected, b"", authenticated]),
                                     hashlib.sha256).digest())
            if tamper == "badDeviceMAC":
                tag[0] ^= 1
            device_auth = {"deviceMac": [mac_protected, {}, None, bytes(tag)]}
        document = {"docType": DOCTYPE,
                    "issuerSigned": {"nameSpaces": {NS: returned}, "issuerAuth": issuer_auth},
                    "deviceSigned": {"nameSpaces": device_ns, "deviceAuth": device_auth}}
        return cbor2.dumps({"version": "1.0", "documents": [document], "status": 0})


LOG = open(os.environ["MDL_HOLDER_LOG"], "a") if os.environ.get("MDL_HOLDER_LOG") else None


def log(text):
    if LOG:
        LOG.write(text + "\n")
        LOG.flush()


def receive(sock, count):
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def main():
    sock = socket.create_connection(("127.0.0.1", port))
    print("ready", flush=True)
    holder = Holder()
    while True:
        header = receive(sock, 2)
        if header is None:
            return
        frame = receive(sock, struct.unpack(">H", header)[0])
        if frame is None:
            return
        log("< " + frame.hex()[:80])
        if len(frame) == 1:
            if frame[0] == 0x04:
                sock.sendall(struct.pack(">H", len(ATR)) + ATR)
            elif frame[0] in (0x00, 0x02):
                holder = Holder()  # power off or reset: a new engagement
            continue
        answer = holder.respond(frame)
        if answer is None:  # mute: the phone stops answering and leaves the field
            sock.close()
            return
        log("> " + answer.hex()[:80])
        sock.sendall(struct.pack(">H", len(answer)) + answer)


main()
