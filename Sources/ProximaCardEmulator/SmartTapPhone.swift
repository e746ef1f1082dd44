internal import Foundation
public import ProximaCore
public import ProximaCrypto

/// An Android-like phone answering Google Smart Tap 2.1 from its Google Wallet passes, and then, if it holds one, a
/// payment card (PPSE and everything after) in the same card presence.
///
/// The phone side of what the loyalty capability reads (kormax/google-smart-tap README; Google's sample terminal,
/// Apache-2.0), written apart from the reader's code (its own NDEF coder) so each checks the other:
///
/// - SELECT OSE.VAS.01 → `6F { 50 "AndroidPay", C0 0001, C1 flags, C2 device nonce, C3 device ephemeral key,
///   A5 { BF0C { 61 { 4F A000000476D0000111, 87 01, 73 { DF6D 0000, DF4D 0001 } } } } }`.
/// - SELECT Smart Tap 2 → `0000 0001` ‖ NDEF { `mdn` = `04` ‖ device nonce }.
/// - NEGOTIATE SECURE CHANNEL: answers `9500` (authentication failed, Google's status-words page) to a collector or
///   key version none of its passes has and to a signature that does not verify under the collector's public key,
///   `9402` (parsing failure) to a command it cannot parse; else answers `nrs { ses, dpk }` and derives the session
///   keys (ECDH, HKDF-SHA256).
/// - GET DATA: `9403` (invalid crypto input) before a negotiated session, `9402` for a command it cannot parse or
///   another session or sequence number, `9407` (no merchant set) for another collector than the negotiated one;
///   else the pass of the collector as `srs { ses, reb }`, the bundle zlib-compressed when the terminal says it
///   inflates and the pass wants it, sealed with AES-128-CTR and HMAC-SHA256; answers longer than ``chunkSize``
///   go out in parts with `9100`, the rest through GET MORE DATA.
///
/// For tests a pass can answer a fixed status word instead, and the phone can alter the bundle's MAC; the device
/// nonce, ephemeral key and IVs can be fixed to build a transcript.
public struct SmartTapPhone: VirtualCard {
    /// One Google Wallet pass.
    public struct Pass: Sendable {
        /// The collector the pass belongs to, and the version and public key of its long-term key.
        public var collectorID: UInt32
        public var keyVersion: UInt32
        public var collectorKey: P256.PublicKey
        /// The service object record type: `ly` loyalty, `of` offer, `gc` gift card, …
        public var objectType: String
        /// The redemption value (`n`), what the reader returns as the pass data.
        public var redemptionValue: [UInt8]
        /// Compress the bundle when the terminal announces zlib.
        public var compress: Bool
        /// Answer this status word to GET DATA instead of the pass (`9001` no pass, `9302` choose, …).
        public var statusWord: StatusWord?

        public init(
            collectorID: UInt32,
            keyVersion: UInt32,
            collectorKey: P256.PublicKey,
            objectType: String = "ly",
            redemptionValue: [UInt8],
            compress: Bool = false,
            statusWord: StatusWord? = nil
        ) {
            self.collectorID = collectorID
            self.keyVersion = keyVersion
            self.collectorKey = collectorKey
            self.objectType = objectType
            self.redemptionValue = redemptionValue
            self.compress = compress
            self.statusWord = statusWord
        }
    }

    /// The phone's randomness: device nonce, ephemeral key, bundle IV. Fixed in transcript tests.
    public struct Randomness: Sendable {
        public var deviceNonce: @Sendable () -> [UInt8]
        public var ephemeralKey: @Sendable () -> P256.PrivateKey?
        public var iv: @Sendable () -> [UInt8]

        public init(
            deviceNonce: @escaping @Sendable () -> [UInt8],
            ephemeralKey: @escaping @Sendable () -> P256.PrivateKey?,
            iv: @escaping @Sendable () -> [UInt8]
        ) {
            self.deviceNonce = deviceNonce
            self.ephemeralKey = ephemeralKey
            self.iv = iv
        }

        public static let system = Randomness(
            deviceNonce: { (try? SecureRandom.bytes(count: 32)) ?? [UInt8](repeating: 0, count: 32) },
            ephemeralKey: { try? P256.PrivateKey() },
            iv: { (try? SecureRandom.bytes(count: 12)) ?? [UInt8](repeating: 0, count: 12) }
        )
    }

    public let name: String
    public let atr: [UInt8]
    public let ats: [UInt8]
    public let uid: [UInt8]
    public let technology: CardTechnology = .iso14443A
    public var passes: [Pass]
    /// The payment card the phone offers after the pass; `nil` answers `6A82` to every other SELECT.
    public var paymentCard: (any VirtualCard)?
    /// Answers of GET DATA are cut into parts of this many bytes (`9100` until the last).
    public var chunkSize: Int
    /// Flip a bit of the bundle's HMAC.
    public var alterMAC: Bool
    public var randomness: Randomness

    private enum Selected { case none, ose, smartTap }
    private var selected = Selected.none
    private var deviceNonce: [UInt8] = []
    private var ephemeral: P256.PrivateKey?
    private var sessionID: [UInt8] = []
    private var sequence: UInt8 = 0
    private var keys: (aes: [UInt8], mac: [UInt8])?
    private var negotiatedCollector: UInt32?
    private var pending: [UInt8] = []

    /// The commands' INS bytes this presence received, for tests.
    public private(set) var instructionsSeen: [UInt8] = []

    public init(
        name: String,
        passes: [Pass],
        paymentCard: (any VirtualCard)? = nil,
        uid: [UInt8] = [0x08, 0x6A, 0x55, 0x01],
        ats: [UInt8] = [0x05, 0x78, 0x80, 0x70, 0x02],
        chunkSize: Int = 240,
        alterMAC: Bool = false,
        randomness: Randomness = .system
    ) {
        self.name = name
        self.passes = passes
        self.paymentCard = paymentCard
        self.uid = uid
        self.ats = ats
        self.atr = ScriptedCard.contactlessPseudoATR
        self.chunkSize = max(16, min(chunkSize, 254))
        self.alterMAC = alterMAC
        self.randomness = randomness
    }

    static let oseName = Array("OSE.VAS.01".utf8)
    static let smartTap2AID: [UInt8] = [0xA0, 0x00, 0x00, 0x04, 0x76, 0xD0, 0x00, 0x01, 0x11]

    public mutating func respond(to command: [UInt8]) -> [UInt8] {
        guard let apdu = try? CommandAPDU(bytes: command) else { return [0x67, 0x00] }
        instructionsSeen.append(apdu.ins)
        if apdu.cla == 0x00, apdu.ins == 0xA4, apdu.p1 == 0x04 {
            if apdu.data == Self.oseName {
                startTap()
                selected = .ose
                return oseAnswer() + [0x90, 0x00]
            }
            if apdu.data == Self.smartTap2AID {
                if deviceNonce.isEmpty { startTap() }
                selected = .smartTap
                let mdn = Record(type: "mdn", id: Array("mdn".utf8), payload: [0x04] + deviceNonce)
                return [0x00, 0x00, 0x00, 0x01] + Record.encode([mdn]) + [0x90, 0x00]
            }
            selected = .none
        }
        if selected != .none, apdu.cla == 0x90 {
            switch apdu.ins {
            case 0x53: return negotiate(apdu.data)
            case 0x50: return getData(apdu.data)
            case 0xC0: return moreData()
            default: return [0x94, 0x00]
            }
        }
        guard var card = paymentCard else { return [0x6A, 0x82] }
        let answer = card.respond(to: command)
        paymentCard = card
        return answer
    }

    private mutating func startTap() {
        deviceNonce = randomness.deviceNonce()
        ephemeral = randomness.ephemeralKey()
        keys = nil
        negotiatedCollector = nil
        pending = []
    }

    private func oseAnswer() -> [UInt8] {
        let entry = TLV(
            tag: 0x61,
            children: [
                TLV(tag: 0x4F, value: Self.smartTap2AID),
                TLV(tag: 0x87, value: [0x01]),
                TLV(
                    tag: 0x73,
                    children: [TLV(tag: 0xDF6D, value: [0x00, 0x00]), TLV(tag: 0xDF4D, value: [0x00, 0x01])]
                ),
            ]
        )
        return TLV(
            tag: 0x6F,
            children: [
                TLV(tag: 0x50, value: Array("AndroidPay".utf8)),
                TLV(tag: 0xC0, value: [0x00, 0x01]),
                TLV(tag: 0xC1, value: [0xCC, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x80]),
                TLV(tag: 0xC2, value: deviceNonce),
                TLV(tag: 0xC3, value: ephemeral?.publicKey.compressedRepresentation ?? []),
                TLV(tag: 0xA5, children: [TLV(tag: 0xBF0C, children: [entry])]),
            ]
        ).bytes
    }

    private static func be32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }

    private static func collector(in payload: [UInt8]) -> UInt32? {
        guard payload.count == 5, payload[0] == 0x04 else { return nil }
        return payload[1...].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// NEGOTIATE SECURE CHANNEL: `ngr { ses, cpr { nonce, 01, key, version, { sig, cld } } }`.
    private mutating func negotiate(_ data: [UInt8]) -> [UInt8] {
        guard let ephemeral,
            let ngr = Record.decode(data)?.first(where: { $0.type == Array("ngr".utf8) }), ngr.payload.count > 2,
            let inner = Record.decode(Array(ngr.payload[2...])),
            let ses = inner.first(where: { $0.type == Array("ses".utf8) }), ses.payload.count == 10,
            let cpr = inner.first(where: { $0.type == Array("cpr".utf8) }), cpr.payload.count > 70,
            let proof = Record.decode(Array(cpr.payload[70...])),
            let sig = proof.first(where: { $0.type == Array("sig".utf8) }), sig.payload.first == 0x04,
            let cld = proof.first(where: { $0.type == Array("cld".utf8) }),
            let collectorID = Self.collector(in: cld.payload)
        else { return [0x94, 0x02] }
        let readerNonce = Array(cpr.payload[0..<32])
        let readerKeyBytes = Array(cpr.payload[33..<66])
        let keyVersion = cpr.payload[66..<70].reduce(0) { $0 << 8 | UInt32($1) }
        guard let pass = passes.first(where: { $0.collectorID == collectorID && $0.keyVersion == keyVersion }) else {
            return [0x95, 0x00]
        }
        let signed = readerNonce + deviceNonce + Self.be32(collectorID) + readerKeyBytes
        guard let readerKey = try? P256.PublicKey(compressedRepresentation: readerKeyBytes),
            let signature = try? P256.ECDSASignature(derRepresentation: Array(sig.payload[1...])),
            pass.collectorKey.isValidSignature(signature, for: signed)
        else { return [0x95, 0x00] }
        let devicePublic = ephemeral.publicKey.compressedRepresentation
        guard let z = try? ephemeral.sharedSecret(with: readerKey),
            let okm = try? HKDF.deriveKey(
                inputKeyMaterial: z,
                salt: devicePublic,
                info: signed + signature.derRepresentation,
                outputByteCount: 48
            )
        else { return [0x6F, 0x00] }
        keys = (Array(okm[0..<16]), Array(okm[16..<48]))
        negotiatedCollector = collectorID
        sessionID = Array(ses.payload[0..<8])
        sequence = ses.payload[8] &+ 1
        let nrs = Record(
            type: "nrs",
            payload: Record.encode([
                Record(type: "ses", payload: sessionID + [sequence, 0x01]), Record(type: "dpk", payload: devicePublic),
            ])
        )
        return Record.encode([nrs]) + [0x90, 0x00]
    }

    /// GET DATA: `srq { ses, mer { cld }, slr { str }, pcr }`.
    private mutating func getData(_ data: [UInt8]) -> [UInt8] {
        guard let keys, let negotiated = negotiatedCollector else { return [0x94, 0x03] }
        guard let srq = Record.decode(data)?.first(where: { $0.type == Array("srq".utf8) }), srq.payload.count > 2,
            let inner = Record.decode(Array(srq.payload[2...])),
            let ses = inner.first(where: { $0.type == Array("ses".utf8) }), ses.payload.count == 10,
            let mer = inner.first(where: { $0.type == Array("mer".utf8) }),
            let cld = Record.decode(mer.payload)?.first(where: { $0.type == Array("cld".utf8) }),
            let pcr = inner.first(where: { $0.type == Array("pcr".utf8) }), pcr.payload.count == 5
        else { return [0x94, 0x02] }
        guard Array(ses.payload[0..<8]) == sessionID, ses.payload[8] == sequence else { return [0x94, 0x02] }
        guard Self.collector(in: cld.payload) == negotiated,
            let pass = passes.first(where: { $0.collectorID == negotiated })
        else { return [0x94, 0x07] }
        if let status = pass.statusWord { return [status.sw1, status.sw2] }
        let number = Record(tnf: 0x01, type: "n", id: Array("n".utf8), payload: [0x00] + pass.redemptionValue)
        let issuer = Record(tnf: 0x01, type: "i", id: Array("i".utf8), payload: [0x04, 0x00, 0x00, 0x00, 0x00, 0x01])
        let object = Record(type: pass.objectType, payload: Record.encode([issuer, number]))
        var plaintext = Record.encode([Record(type: "asv", payload: Record.encode([object]))])
        var flags: UInt8 = 0x01
        if pass.compress, pcr.payload[0] & 0x40 != 0, let compressed = try? Zlib.deflate(plaintext) {
            plaintext = compressed
            flags |= 0x02
        }
        let iv = randomness.iv()
        guard let ciphertext = try? AES.CTR.encrypt(plaintext, key: keys.aes, iv: iv + [0, 0, 0, 0]),
            var mac = try? HMAC.authenticationCode(for: iv + ciphertext, key: keys.mac)
        else { return [0x6F, 0x00] }
        if alterMAC { mac[0] ^= 0x01 }
        sequence &+= 1
        let srs = Record(
            type: "srs",
            payload: Record.encode([
                Record(type: "ses", payload: sessionID + [sequence, 0x01]),
                Record(type: "reb", payload: [flags] + iv + ciphertext + mac),
            ])
        )
        pending = Record.encode([srs])
        return moreData()
    }

    /// The next part of a GET DATA answer: `9100` while more follows.
    private mutating func moreData() -> [UInt8] {
        guard !pending.isEmpty else { return [0x94, 0x05] }
        let part = Array(pending.prefix(chunkSize))
        pending.removeFirst(part.count)
        return part + (pending.isEmpty ? [0x90, 0x00] : [0x91, 0x00])
    }

    /// The phone's own NDEF coder (short and long records, ids, no chunks).
    struct Record {
        var tnf: UInt8 = 0x04
        var type: [UInt8]
        var id: [UInt8] = []
        var payload: [UInt8]

        init(tnf: UInt8 = 0x04, type: String, id: [UInt8] = [], payload: [UInt8]) {
            self.tnf = tnf
            self.type = Array(type.utf8)
            self.id = id
            self.payload = payload
        }

        static func encode(_ records: [Record]) -> [UInt8] {
            var out: [UInt8] = []
            for (index, record) in records.enumerated() {
                let short = record.payload.count <= 0xFF
                let header =
                    record.tnf | (index == 0 ? 0x80 : 0) | (index == records.count - 1 ? 0x40 : 0)
                    | (short ? 0x10 : 0) | (record.id.isEmpty ? 0 : 0x08)
                out.append(header)
                out.append(UInt8(record.type.count))
                out += short ? [UInt8(record.payload.count)] : SmartTapPhone.be32(UInt32(record.payload.count))
                if !record.id.isEmpty { out.append(UInt8(record.id.count)) }
                out += record.type + record.id + record.payload
            }
            return out
        }

        static func decode(_ bytes: [UInt8]) -> [Record]? {
            var records: [Record] = []
            var index = 0
            while index < bytes.count, records.count < 32 {
                let header = bytes[index]
                let short = header & 0x10 != 0
                let hasID = header & 0x08 != 0
                let fixed = 2 + (short ? 1 : 4) + (hasID ? 1 : 0)
                guard bytes.count - index >= fixed else { return nil }
                let typeLength = Int(bytes[index + 1])
                var cursor = index + 2
                var length = 0
                for _ in 0..<(short ? 1 : 4) {
                    length = length << 8 | Int(bytes[cursor])
                    cursor += 1
                }
                let idLength = hasID ? Int(bytes[cursor]) : 0
                if hasID { cursor += 1 }
                guard typeLength + idLength + length <= bytes.count - cursor else { return nil }
                var record = Record(tnf: header & 0x07, type: "", payload: [])
                record.type = Array(bytes[cursor..<(cursor + typeLength)])
                record.id = Array(bytes[(cursor + typeLength)..<(cursor + typeLength + idLength)])
                record.payload = Array(
                    bytes[(cursor + typeLength + idLength)..<(cursor + typeLength + idLength + length)]
                )
                records.append(record)
                index = cursor + typeLength + idLength + length
                if header & 0x40 != 0 { return index == bytes.count ? records : nil }
            }
            return nil
        }
    }
}
