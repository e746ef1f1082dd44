public import Foundation
public import ProximaCore
public import ProximaCrypto

/// An iPhone-like phone answering Apple VAS (SELECT OSE.VAS.01, GET VAS DATA) from its Wallet passes, and then,
/// if it holds one, a payment card (PPSE and everything after) in the same card presence.
///
/// The phone side of the protocol the loyalty capability reads (kormax/apple-vas, proxmark3 `cmdhfvas.c`): for a
/// pass whose pass type's SHA-256 matches `9F25`, it makes a fresh ephemeral P-256 key, derives the key with ECDH
/// and ANSI X9.63 (`0x0D ‖ "id-aes256-GCM" ‖ "ApplePay encrypted VAS data" ‖ SHA-256(pass type)`), seals
/// `timestamp ‖ message` with AES-256-GCM under a 16-byte zero IV and answers
/// `70 { 9F2A 00, 9F27 keyId ‖ x ‖ ciphertext ‖ tag } 9000`. Written apart from the reader's code so each checks
/// the other.
///
/// For tests a pass can instead answer a fixed status word, carry a timestamp off by some seconds, claim another
/// key id, or have its tag altered.
public struct VASPhone: VirtualCard {
    /// One Wallet pass.
    public struct Pass: Sendable {
        public var passTypeIdentifier: String
        /// The merchant key the pass encrypts to.
        public var merchantKey: P256.PublicKey
        /// The message (a loyalty number, UTF-8).
        public var message: [UInt8]
        /// Answer this status word instead of a cryptogram (`6287` locked, `6984` pick a pass, …).
        public var statusWord: StatusWord?
        /// Added to the phone's clock for the timestamp: negative for an old cryptogram.
        public var timestampOffsetSeconds: Int64
        /// Sent instead of the merchant key's id (a pass made for another key).
        public var keyIDOverride: [UInt8]?
        /// Flip a bit of the GCM tag.
        public var alterTag: Bool

        public init(
            passTypeIdentifier: String,
            merchantKey: P256.PublicKey,
            message: [UInt8],
            statusWord: StatusWord? = nil,
            timestampOffsetSeconds: Int64 = 0,
            keyIDOverride: [UInt8]? = nil,
            alterTag: Bool = false
        ) {
            self.passTypeIdentifier = passTypeIdentifier
            self.merchantKey = merchantKey
            self.message = message
            self.statusWord = statusWord
            self.timestampOffsetSeconds = timestampOffsetSeconds
            self.keyIDOverride = keyIDOverride
            self.alterTag = alterTag
        }
    }

    public let name: String
    public let atr: [UInt8]
    public let ats: [UInt8]
    public let uid: [UInt8]
    public let technology: CardTechnology = .iso14443A
    public var passes: [Pass]
    /// The payment card the phone offers after the pass; `nil` answers `6A82` to every other SELECT.
    public var paymentCard: (any VirtualCard)?
    /// `9F21`.
    public var applicationVersion: [UInt8]
    /// `9F23`: by default VAS and payment may each be performed or skipped, plain and encrypted data.
    public var capabilities: [UInt8]
    /// The phone's clock, for timestamps.
    public var now: @Sendable () -> Date

    private var vasSelected = false
    /// The GET VAS DATA commands this presence received (the terminal capabilities `9F26` of each), for tests.
    public private(set) var terminalCapabilitiesSeen: [[UInt8]] = []

    public init(
        name: String,
        passes: [Pass],
        paymentCard: (any VirtualCard)? = nil,
        uid: [UInt8] = [0x08, 0x7A, 0x55, 0x01],
        ats: [UInt8] = [0x05, 0x78, 0x80, 0x70, 0x02],
        applicationVersion: [UInt8] = [0x01, 0x00],
        capabilities: [UInt8] = [0x00, 0x00, 0x00, 0x3E],
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.name = name
        self.passes = passes
        self.paymentCard = paymentCard
        self.uid = uid
        self.ats = ats
        self.atr = ScriptedCard.contactlessPseudoATR
        self.applicationVersion = applicationVersion
        self.capabilities = capabilities
        self.now = now
    }

    static let vasName = Array("OSE.VAS.01".utf8)

    public mutating func respond(to command: [UInt8]) -> [UInt8] {
        guard let apdu = try? CommandAPDU(bytes: command) else { return [0x67, 0x00] }
        if apdu.cla == 0x00, apdu.ins == 0xA4, apdu.p1 == 0x04 {
            if apdu.data == Self.vasName {
                vasSelected = true
                return selectAnswer() + [0x90, 0x00]
            }
            vasSelected = false
        }
        if vasSelected {
            guard apdu.cla == 0x80, apdu.ins == 0xCA else { return [0x6D, 0x00] }
            guard apdu.p1 == 0x01, apdu.p2 <= 0x01 else { return [0x6B, 0x00] }
            return vasData(apdu.data)
        }
        guard var card = paymentCard else { return [0x6A, 0x82] }
        let answer = card.respond(to: command)
        paymentCard = card
        return answer
    }

    private func selectAnswer() -> [UInt8] {
        TLV(
            tag: 0x6F,
            children: [
                TLV(tag: 0x50, value: Array("ApplePay".utf8)),
                TLV(tag: 0x9F21, value: applicationVersion),
                TLV(tag: 0x9F24, value: (try? SecureRandom.bytes(count: 4)) ?? [0, 0, 0, 0]),
                TLV(tag: 0x9F23, value: capabilities),
            ]
        ).bytes
    }

    private mutating func vasData(_ data: [UInt8]) -> [UInt8] {
        guard let objects = try? TLV.decodeAll(data, maximumDepth: 2, maximumSize: 512),
            objects.first(where: { $0.tag == 0x9F22 })?.value == [0x01, 0x00],
            let hash = objects.first(where: { $0.tag == 0x9F25 })?.value, hash.count == 32,
            let capabilities = objects.first(where: { $0.tag == 0x9F26 })?.value, capabilities.count == 4
        else { return [0x6A, 0x80] }
        terminalCapabilitiesSeen.append(capabilities)
        guard let pass = passes.first(where: { (try? SHA256.hash(Array($0.passTypeIdentifier.utf8))) == hash }) else {
            return [0x6A, 0x83]
        }
        if let status = pass.statusWord { return [status.sw1, status.sw2] }
        guard let cryptogram = try? Self.cryptogram(for: pass, passTypeHash: hash, at: now()) else {
            return [0x6F, 0x00]
        }
        let template = TLV(tag: 0x70, children: [TLV(tag: 0x9F2A, value: []), TLV(tag: 0x9F27, value: cryptogram)])
        return template.bytes + [0x90, 0x00]
    }

    /// The cryptogram `keyId ‖ x ‖ ciphertext ‖ tag` a phone makes for `pass` at `time`.
    public static func cryptogram(for pass: Pass, passTypeHash: [UInt8], at time: Date) throws -> [UInt8] {
        let ephemeral = try P256.PrivateKey()
        let z = try ephemeral.sharedSecret(with: pass.merchantKey)
        let sharedInfo =
            [0x0D] + Array("id-aes256-GCM".utf8) + Array("ApplePay encrypted VAS data".utf8) + passTypeHash
        let key = try X963KDF.deriveKey(sharedSecret: z, sharedInfo: sharedInfo, outputByteCount: 32)
        let seconds = UInt32(clamping: Int64(time.timeIntervalSinceReferenceDate) + pass.timestampOffsetSeconds)
        let plaintext = withUnsafeBytes(of: seconds.bigEndian) { Array($0) } + pass.message
        var sealed = try AES.GCM.seal(plaintext, key: key, iv: [UInt8](repeating: 0, count: 16))
        if pass.alterTag, let last = sealed.indices.last { sealed[last] ^= 0x01 }
        let keyID =
            try pass.keyIDOverride
            ?? Array(SHA256.hash(Array(pass.merchantKey.x963Representation[1...32])).prefix(4))
        return keyID + Array(ephemeral.publicKey.x963Representation[1...32]) + sealed
    }
}
