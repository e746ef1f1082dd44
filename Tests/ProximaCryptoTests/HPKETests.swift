import ProximaCore
@_spi(KnownAnswerTests) import ProximaCrypto
import ProximaTestSupport
import Testing

/// RFC 9180 Appendix A.3.1 (DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, base mode), read from this
/// target's `Vectors/hpke_p256.json` (source and licence in `Vectors/README.md`).
struct HPKEVector: Sendable {
    struct Encryption: Sendable, CustomTestStringConvertible {
        let sequenceNumber: UInt64
        let plaintext: [UInt8]
        let aad: [UInt8]
        let nonce: [UInt8]
        let ciphertext: [UInt8]
        var testDescription: String { "sequence number \(sequenceNumber)" }
    }

    struct Export: Sendable, CustomTestStringConvertible {
        let context: [UInt8]
        let length: Int
        let value: [UInt8]
        var testDescription: String { "exporter context \(hex(context).isEmpty ? "(empty)" : hex(context))" }
    }

    let info, ikmE, pkEm, skEm, ikmR, pkRm, skRm, enc, sharedSecret: [UInt8]
    let keyScheduleContext, secret, key, baseNonce, exporterSecret: [UInt8]
    let encryptions: [Encryption]
    let exports: [Export]

    /// The A.3.1 vector, or `nil` when the file is missing or not as expected (``fileLoads()`` then fails).
    static let rfc9180A31: HPKEVector? = try? load()

    static func load() throws -> HPKEVector {
        let file = try Vectors.json("hpke_p256.json")
        guard case .array(let vectors)? = file["vectors"],
            let v = vectors.first(where: { $0["kem_id"] == .integer(16) && $0["aead_id"] == .integer(1) })
        else { throw ProximaError(.malformedData, "hpke_p256.json has no P-256 / AES-128-GCM vector") }
        return HPKEVector(
            info: v.hexBytes("info"),
            ikmE: v.hexBytes("ikmE"),
            pkEm: v.hexBytes("pkEm"),
            skEm: v.hexBytes("skEm"),
            ikmR: v.hexBytes("ikmR"),
            pkRm: v.hexBytes("pkRm"),
            skRm: v.hexBytes("skRm"),
            enc: v.hexBytes("enc"),
            sharedSecret: v.hexBytes("shared_secret"),
            keyScheduleContext: v.hexBytes("key_schedule_context"),
            secret: v.hexBytes("secret"),
            key: v.hexBytes("key"),
            baseNonce: v.hexBytes("base_nonce"),
            exporterSecret: v.hexBytes("exporter_secret"),
            encryptions: v.array("encryptions").map {
                Encryption(
                    sequenceNumber: UInt64($0.integer("sequence_number")),
                    plaintext: $0.hexBytes("pt"),
                    aad: $0.hexBytes("aad"),
                    nonce: $0.hexBytes("nonce"),
                    ciphertext: $0.hexBytes("ct")
                )
            },
            exports: v.array("exports").map {
                Export(
                    context: $0.hexBytes("exporter_context"),
                    length: Int($0.integer("L")),
                    value: $0.hexBytes("exported_value")
                )
            }
        )
    }

    func sender() throws -> HPKE.Sender {
        let recipient = try P256.PublicKey(x963Representation: pkRm)
        let ephemeral = try P256.PrivateKey(rawRepresentation: skEm)
        return try HPKE.Sender(recipientKey: recipient, info: info, ephemeralKey: ephemeral)
    }

    func recipient() throws -> HPKE.Recipient {
        try HPKE.Recipient(encapsulatedKey: enc, privateKey: try P256.PrivateKey(rawRepresentation: skRm), info: info)
    }
}

@Suite struct HPKEKnownAnswerTests {
    private func vector() throws -> HPKEVector {
        try #require(HPKEVector.rfc9180A31, "cannot load Vectors/hpke_p256.json")
    }

    @Test func fileLoads() throws {
        let vector = try HPKEVector.load()
        #expect(vector.encryptions.map(\.sequenceNumber) == [0, 1, 2, 4, 255, 256])
        #expect(vector.exports.count == 3)
    }

    @Test func deriveKeyPair() throws {
        let v = try vector()
        let ephemeral = try HPKE.deriveKeyPair(ikm: v.ikmE)
        #expect(ephemeral.rawRepresentation == v.skEm)
        #expect(ephemeral.publicKey.x963Representation == v.pkEm)
        let recipient = try HPKE.deriveKeyPair(ikm: v.ikmR)
        #expect(recipient.rawRepresentation == v.skRm)
        #expect(recipient.publicKey.x963Representation == v.pkRm)
    }

    @Test func encapsulationAndKeySchedule() throws {
        let v = try vector()
        let sender = try v.sender()
        #expect(sender.encapsulatedKey == v.enc)
        #expect(sender.kemSharedSecret == v.sharedSecret)
        let values = sender.keyScheduleValues
        #expect(values.keyScheduleContext == v.keyScheduleContext)
        #expect(values.secret == v.secret)
        #expect(values.key == v.key)
        #expect(values.baseNonce == v.baseNonce)
        #expect(values.exporterSecret == v.exporterSecret)

        let recipient = try v.recipient()
        #expect(recipient.kemSharedSecret == v.sharedSecret)
        #expect(recipient.keyScheduleValues.key == v.key)
        #expect(recipient.keyScheduleValues.baseNonce == v.baseNonce)
    }

    @Test(arguments: HPKEVector.rfc9180A31?.encryptions ?? [])
    func encryption(_ encryption: HPKEVector.Encryption) throws {
        let v = try vector()
        var nonce = v.baseNonce
        for i in 0..<8 { nonce[11 - i] ^= UInt8(truncatingIfNeeded: encryption.sequenceNumber >> (8 * UInt64(i))) }
        #expect(nonce == encryption.nonce)

        var sender = try v.sender()
        sender.skip(toSequenceNumber: encryption.sequenceNumber)
        #expect(try sender.seal(encryption.plaintext, aad: encryption.aad) == encryption.ciphertext)
        #expect(sender.sequenceNumber == encryption.sequenceNumber + 1)

        var recipient = try v.recipient()
        recipient.skip(toSequenceNumber: encryption.sequenceNumber)
        #expect(try recipient.open(encryption.ciphertext, aad: encryption.aad) == encryption.plaintext)
    }

    /// The RFC's vectors come from one context sealing in order: seal 0…256 and compare the listed ones.
    @Test func sequentialSealingHitsEveryListedCiphertext() throws {
        let v = try vector()
        var sender = try v.sender()
        var recipient = try v.recipient()
        let listed = Dictionary(uniqueKeysWithValues: v.encryptions.map { ($0.sequenceNumber, $0) })
        let plaintext = v.encryptions[0].plaintext
        for sequenceNumber in UInt64(0)...256 {
            let aad = Array("Count-\(sequenceNumber)".utf8)
            let ciphertext = try sender.seal(plaintext, aad: aad)
            #expect(try recipient.open(ciphertext, aad: aad) == plaintext)
            if let expected = listed[sequenceNumber] {
                #expect(aad == expected.aad)
                #expect(ciphertext == expected.ciphertext, "sequence number \(sequenceNumber)")
            }
        }
    }

    @Test(arguments: HPKEVector.rfc9180A31?.exports ?? [])
    func export(_ export: HPKEVector.Export) throws {
        let v = try vector()
        let sender = try v.sender()
        #expect(try sender.export(exporterContext: export.context, length: export.length) == export.value)
        let recipient = try v.recipient()
        #expect(try recipient.export(exporterContext: export.context, length: export.length) == export.value)
    }
}

@Suite struct HPKETests {
    @Test func singleShotRoundTrip() throws {
        let recipient = try P256.PrivateKey()
        let info = Array("proxima card data v1".utf8)
        let aad = Array("lane-3".utf8)
        let plaintext = Array("5413330089010434|2512".utf8)
        let (enc, ciphertext) = try HPKE.seal(to: recipient.publicKey, info: info, aad: aad, plaintext: plaintext)
        #expect(enc.count == 65)
        #expect(enc.first == 0x04)
        #expect(ciphertext.count == plaintext.count + 16)
        let opened = try HPKE.open(enc: enc, privateKey: recipient, info: info, aad: aad, ciphertext: ciphertext)
        #expect(opened == plaintext)
        // A fresh ephemeral key each time.
        let again = try HPKE.seal(to: recipient.publicKey, info: info, aad: aad, plaintext: plaintext)
        #expect(again.enc != enc)
        #expect(again.ciphertext != ciphertext)
    }

    @Test func wrongContextIsRefused() throws {
        let recipient = try P256.PrivateKey()
        let info = Array("info".utf8)
        let aad = Array("aad".utf8)
        let (enc, ciphertext) = try HPKE.seal(to: recipient.publicKey, info: info, aad: aad, plaintext: [1, 2, 3])
        let failure = CryptoError(.authenticationFailed)
        #expect(throws: failure) {
            try HPKE.open(enc: enc, privateKey: recipient, info: [], aad: aad, ciphertext: ciphertext)
        }
        #expect(throws: failure) {
            try HPKE.open(enc: enc, privateKey: recipient, info: info, aad: [], ciphertext: ciphertext)
        }
        let stranger = try P256.PrivateKey()
        #expect(throws: failure) {
            try HPKE.open(enc: enc, privateKey: stranger, info: info, aad: aad, ciphertext: ciphertext)
        }
        let otherEnc = try P256.PrivateKey().publicKey.x963Representation
        #expect(throws: failure) {
            try HPKE.open(enc: otherEnc, privateKey: recipient, info: info, aad: aad, ciphertext: ciphertext)
        }
        for length in [0, 1, 15, 16, ciphertext.count - 1] {
            #expect(throws: failure) {
                try HPKE.open(
                    enc: enc,
                    privateKey: recipient,
                    info: info,
                    aad: aad,
                    ciphertext: Array(ciphertext.prefix(length))
                )
            }
        }
        var flipped = ciphertext
        flipped[0] ^= 0x80
        #expect(throws: failure) {
            try HPKE.open(enc: enc, privateKey: recipient, info: info, aad: aad, ciphertext: flipped)
        }
    }

    @Test func invalidEncIsRefused() throws {
        let recipient = try P256.PrivateKey()
        let (enc, ciphertext) = try HPKE.seal(to: recipient.publicKey, info: [], aad: [], plaintext: [1])
        let compressed = try P256.PublicKey(x963Representation: enc).compressedRepresentation
        var offCurve = enc
        offCurve[64] ^= 0x01
        for bad in [[], Array(enc.prefix(64)), enc + [0], compressed, offCurve, [UInt8](repeating: 0, count: 65)] {
            #expect(throws: CryptoError(.invalidKey)) {
                try HPKE.open(enc: bad, privateKey: recipient, info: [], aad: [], ciphertext: ciphertext)
            }
        }
    }

    @Test func recipientAdvancesOnlyOnSuccess() throws {
        let key = try P256.PrivateKey()
        var sender = try HPKE.Sender(recipientKey: key.publicKey, info: [])
        let first = try sender.seal(Array("one".utf8), aad: [])
        let second = try sender.seal(Array("two".utf8), aad: [])
        var recipient = try HPKE.Recipient(encapsulatedKey: sender.encapsulatedKey, privateKey: key, info: [])
        // Out of order fails and leaves the sequence number alone.
        #expect(throws: CryptoError(.authenticationFailed)) { try recipient.open(second, aad: []) }
        #expect(recipient.sequenceNumber == 0)
        #expect(try recipient.open(first, aad: []) == Array("one".utf8))
        #expect(try recipient.open(second, aad: []) == Array("two".utf8))
        #expect(recipient.sequenceNumber == 2)
        // Replaying a message fails: its nonce is behind.
        #expect(throws: CryptoError(.authenticationFailed)) { try recipient.open(first, aad: []) }
        #expect(
            try sender.export(exporterContext: [1], length: 64) == recipient.export(exporterContext: [1], length: 64)
        )
    }

    @Test func sequenceOverflowIsRefused() throws {
        let key = try P256.PrivateKey()
        var sender = try HPKE.Sender(recipientKey: key.publicKey, info: [])
        var recipient = try HPKE.Recipient(encapsulatedKey: sender.encapsulatedKey, privateKey: key, info: [])
        sender.skip(toSequenceNumber: UInt64.max - 1)
        recipient.skip(toSequenceNumber: UInt64.max - 1)
        let last = try sender.seal([9], aad: [])
        #expect(try recipient.open(last, aad: []) == [9])
        #expect(throws: CryptoError(.messageLimitReached)) { try sender.seal([9], aad: []) }
        #expect(throws: CryptoError(.messageLimitReached)) { try recipient.open(last, aad: []) }
        #expect(sender.sequenceNumber == UInt64.max)
    }

    @Test func exportLengthsAreChecked() throws {
        let sender = try HPKE.Sender(recipientKey: try P256.PrivateKey().publicKey, info: [])
        #expect(try sender.export(exporterContext: [], length: 8160).count == 8160)
        #expect(throws: ProximaError(.invalidArgument)) { try sender.export(exporterContext: [], length: 0) }
        #expect(throws: ProximaError(.invalidArgument)) { try sender.export(exporterContext: [], length: 8161) }
    }

    @Test func deriveKeyPairNeedsEnoughInput() throws {
        #expect(throws: ProximaError(.invalidArgument)) {
            try HPKE.deriveKeyPair(ikm: [UInt8](repeating: 1, count: 31))
        }
        let a = try HPKE.deriveKeyPair(ikm: [UInt8](repeating: 1, count: 32))
        let b = try HPKE.deriveKeyPair(ikm: [UInt8](repeating: 1, count: 32))
        #expect(a.rawRepresentation == b.rawRepresentation)
    }
}
