import ProximaCore

/// Hybrid Public Key Encryption (RFC 9180), base and auth mode, with the one suite Proxima uses to encrypt card data to the
/// payment processor: DHKEM(P-256, HKDF-SHA256) (KEM 0x0010), HKDF-SHA256 (KDF 0x0001), AES-128-GCM (AEAD 0x0001).
///
/// Single-shot use is ``seal(to:info:aad:plaintext:)`` and ``open(enc:privateKey:info:aad:ciphertext:)``. Several
/// messages under one encapsulation use a ``Sender`` and a ``Recipient``, whose sequence numbers must advance in
/// step. Both contexts are non-copyable, so a copy can never reuse a nonce.
public enum HPKE {
    /// RFC 9180 §7.1 `kem_id` of DHKEM(P-256, HKDF-SHA256).
    public static let kemID: UInt16 = 0x0010
    /// RFC 9180 §7.2 `kdf_id` of HKDF-SHA256.
    public static let kdfID: UInt16 = 0x0001
    /// RFC 9180 §7.3 `aead_id` of AES-128-GCM.
    public static let aeadID: UInt16 = 0x0001

    /// Nsecret, Nenc, Nk, Nn, Nh and Nt of the suite (RFC 9180 §7).
    static let secretByteCount = 32
    public static let encapsulatedKeyByteCount = 65
    static let keyByteCount = 16
    static let nonceByteCount = 12
    static let hashByteCount = 32
    static let tagByteCount = 16

    /// `mode_base` (RFC 9180 §5).
    static let modeBase: UInt8 = 0x00
    /// `mode_auth` (RFC 9180 §5): the sender also proves it holds a static private key.
    static let modeAuth: UInt8 = 0x02

    /// Encrypts one message to `publicKey` with a fresh ephemeral key (RFC 9180 §6.1 `Seal`).
    ///
    /// - Parameters:
    ///   - publicKey: The recipient's key.
    ///   - info: Application context bound into the key schedule; the recipient must pass the same.
    ///   - aad: Additional authenticated data for the one message.
    ///   - plaintext: The message.
    /// - Returns: `enc`, the 65-byte encapsulated key, and the ciphertext with its 16-byte tag.
    /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
    public static func seal(
        to publicKey: P256.PublicKey,
        info: [UInt8],
        aad: [UInt8],
        plaintext: [UInt8]
    ) throws -> (enc: [UInt8], ciphertext: [UInt8]) {
        var sender = try Sender(recipientKey: publicKey, info: info)
        let ciphertext = try sender.seal(plaintext, aad: aad)
        return (sender.encapsulatedKey, ciphertext)
    }

    /// Decrypts one message sealed with ``seal(to:info:aad:plaintext:)`` (RFC 9180 §6.1 `Open`).
    ///
    /// - Throws: ``CryptoError/Code/invalidKey`` when `enc` is not a valid uncompressed P-256 point;
    ///   ``CryptoError/Code/authenticationFailed`` when the ciphertext does not authenticate under this key,
    ///   `info` and `aad` (also when it is truncated).
    public static func open(
        enc: [UInt8],
        privateKey: P256.PrivateKey,
        info: [UInt8],
        aad: [UInt8],
        ciphertext: [UInt8]
    ) throws -> [UInt8] {
        var recipient = try Recipient(encapsulatedKey: enc, privateKey: privateKey, info: info)
        return try recipient.open(ciphertext, aad: aad)
    }
}

// MARK: - Labeled KDF and DHKEM (RFC 9180 §4, §4.1)

extension HPKE {
    private static let versionLabel = Array("HPKE-v1".utf8)

    private static func i2osp(_ value: Int, _ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * (count - 1 - $0))) }
    }

    /// `suite_id` of the KEM: `"KEM" || I2OSP(kem_id, 2)`.
    static let kemSuiteID: [UInt8] = Array("KEM".utf8) + i2osp(Int(kemID), 2)
    /// `suite_id` of the whole suite: `"HPKE" || I2OSP(kem_id, 2) || I2OSP(kdf_id, 2) || I2OSP(aead_id, 2)`.
    static let hpkeSuiteID: [UInt8] =
        Array("HPKE".utf8) + i2osp(Int(kemID), 2) + i2osp(Int(kdfID), 2) + i2osp(Int(aeadID), 2)

    static func labeledExtract(suiteID: [UInt8], salt: [UInt8], label: String, ikm: [UInt8]) throws -> [UInt8] {
        let labeledIKM = versionLabel + suiteID + Array(label.utf8) + ikm
        return try HKDF.extract(salt: salt, inputKeyMaterial: labeledIKM)
    }

    static func labeledExpand(
        suiteID: [UInt8],
        prk: [UInt8],
        label: String,
        info: [UInt8],
        length: Int
    ) throws -> [UInt8] {
        guard length >= 1, length <= 0xFFFF else {
            throw ProximaError(.invalidArgument, "HPKE LabeledExpand length \(length) does not fit two bytes")
        }
        let labeledInfo = i2osp(length, 2) + versionLabel + suiteID + Array(label.utf8) + info
        return try HKDF.expand(pseudoRandomKey: prk, info: labeledInfo, outputByteCount: length)
    }

    /// DHKEM `ExtractAndExpand(dh, kem_context)` (RFC 9180 §4.1).
    private static func extractAndExpand(dh: [UInt8], kemContext: [UInt8]) throws -> [UInt8] {
        let prk = try labeledExtract(suiteID: kemSuiteID, salt: [], label: "eae_prk", ikm: dh)
        return try labeledExpand(
            suiteID: kemSuiteID,
            prk: prk,
            label: "shared_secret",
            info: kemContext,
            length: secretByteCount
        )
    }

    /// `DeriveKeyPair(ikm)` for P-256 (RFC 9180 §7.1.3): candidates from `LabeledExpand(dkp_prk, "candidate",
    /// counter)` masked with 0xFF until one lies in 1…n−1.
    ///
    /// - Parameter ikm: Input keying material of at least 32 bytes (Nsk), from a secure source.
    /// - Throws: `ProximaError.invalidArgument` for shorter `ikm`; ``CryptoError/Code/deriveKeyPairFailed`` when
    ///   256 candidates all fail (practically impossible).
    public static func deriveKeyPair(ikm: [UInt8]) throws -> P256.PrivateKey {
        guard ikm.count >= P256.scalarByteCount else {
            throw ProximaError(.invalidArgument, "HPKE DeriveKeyPair needs at least 32 bytes of ikm, got \(ikm.count)")
        }
        let dkpPRK = try labeledExtract(suiteID: kemSuiteID, salt: [], label: "dkp_prk", ikm: ikm)
        for counter in 0...255 {
            var candidate = try labeledExpand(
                suiteID: kemSuiteID,
                prk: dkpPRK,
                label: "candidate",
                info: [UInt8(counter)],
                length: P256.scalarByteCount
            )
            candidate[0] &= 0xFF  // The P-256 bitmask of §7.1.3, kept for the reader: it clears no bit.
            if P256.isValidScalar(candidate) { return try P256.PrivateKey(rawRepresentation: candidate) }
        }
        throw CryptoError(.deriveKeyPairFailed, "no valid P-256 scalar among 256 DeriveKeyPair candidates")
    }

    /// DHKEM `Encap(pkR)` (RFC 9180 §4.1) with a given ephemeral key.
    static func encapsulate(
        to recipientKey: P256.PublicKey,
        ephemeralKey: P256.PrivateKey
    ) throws -> (sharedSecret: [UInt8], enc: [UInt8]) {
        let dh = try ephemeralKey.sharedSecret(with: recipientKey)
        let enc = ephemeralKey.publicKey.x963Representation
        let sharedSecret = try extractAndExpand(dh: dh, kemContext: enc + recipientKey.x963Representation)
        return (sharedSecret, enc)
    }

    /// DHKEM `Decap(enc, skR)` (RFC 9180 §4.1).
    static func decapsulate(enc: [UInt8], privateKey: P256.PrivateKey) throws -> [UInt8] {
        guard enc.count == encapsulatedKeyByteCount else {
            throw CryptoError(
                .invalidKey,
                "HPKE enc of \(enc.count) bytes; expected a 65-byte uncompressed P-256 point"
            )
        }
        let ephemeralKey = try P256.PublicKey(x963Representation: enc)
        let dh = try privateKey.sharedSecret(with: ephemeralKey)
        return try extractAndExpand(dh: dh, kemContext: enc + privateKey.publicKey.x963Representation)
    }
}

// MARK: - Auth mode (RFC 9180 §4.1 AuthEncap / AuthDecap, §5.1.3)

extension HPKE {
    /// One sender key and one recipient key of auth mode, prepared once: `DH(skS, pkR)`, the half of AuthEncap's
    /// `dh` that is the same for every message between the two (RFC 9180 §4.1), is computed here. A reader seals every
    /// card data envelope with one reader key to one processor key, so each seal then costs one key generation and
    /// one ECDH instead of two. The value holds that secret as long as it lives, as the sender key itself is held.
    public struct AuthenticatedSenderKeys: Sendable {
        public let recipientKey: P256.PublicKey
        public let senderPublicKey: P256.PublicKey
        /// `DH(skS, pkR)`.
        let staticSharedSecret: [UInt8]

        /// - Throws: `CryptoError` if OpenSSL fails.
        public init(recipientKey: P256.PublicKey, senderKey: P256.PrivateKey) throws {
            self.recipientKey = recipientKey
            self.senderPublicKey = senderKey.publicKey
            self.staticSharedSecret = try senderKey.sharedSecret(with: recipientKey)
        }
    }

    /// DHKEM `AuthEncap(pkR, skS)` (RFC 9180 §4.1) with a given ephemeral key: `dh = DH(skE, pkR) ‖ DH(skS, pkR)`,
    /// `kem_context = enc ‖ pkRm ‖ pkSm`.
    static func authEncapsulate(
        _ keys: AuthenticatedSenderKeys,
        ephemeralKey: P256.PrivateKey
    ) throws -> (sharedSecret: [UInt8], enc: [UInt8]) {
        let dh = try ephemeralKey.sharedSecret(with: keys.recipientKey) + keys.staticSharedSecret
        let enc = ephemeralKey.publicKey.x963Representation
        let kemContext = enc + keys.recipientKey.x963Representation + keys.senderPublicKey.x963Representation
        return (try extractAndExpand(dh: dh, kemContext: kemContext), enc)
    }

    /// DHKEM `AuthDecap(enc, skR, pkS)` (RFC 9180 §4.1).
    static func authDecapsulate(
        enc: [UInt8],
        privateKey: P256.PrivateKey,
        senderPublicKey: P256.PublicKey
    ) throws -> [UInt8] {
        guard enc.count == encapsulatedKeyByteCount else {
            throw CryptoError(
                .invalidKey,
                "HPKE enc of \(enc.count) bytes; expected a 65-byte uncompressed P-256 point"
            )
        }
        let ephemeralKey = try P256.PublicKey(x963Representation: enc)
        let dh = try privateKey.sharedSecret(with: ephemeralKey) + privateKey.sharedSecret(with: senderPublicKey)
        let kemContext = enc + privateKey.publicKey.x963Representation + senderPublicKey.x963Representation
        return try extractAndExpand(dh: dh, kemContext: kemContext)
    }

    /// Encrypts one message to `publicKey` in auth mode (RFC 9180 §5.1.3 `SetupAuthS`, then `Seal`) with a fresh
    /// ephemeral key: only a holder of `senderKey` can make a ciphertext that opens with its public key.
    ///
    /// - Returns: `enc` and the ciphertext with its 16-byte tag.
    public static func sealAuthenticated(
        to publicKey: P256.PublicKey,
        senderKey: P256.PrivateKey,
        info: [UInt8],
        aad: [UInt8],
        plaintext: [UInt8]
    ) throws -> (enc: [UInt8], ciphertext: [UInt8]) {
        var sender = try Sender(recipientKey: publicKey, info: info, senderKey: senderKey)
        let ciphertext = try sender.seal(plaintext, aad: aad)
        return (sender.encapsulatedKey, ciphertext)
    }

    /// Decrypts one auth-mode message (RFC 9180 §5.1.3 `SetupAuthR`, then `Open`).
    ///
    /// - Throws: ``CryptoError/Code/authenticationFailed`` when it was not sealed to this key by the holder of
    ///   `senderPublicKey`'s private key, or was altered.
    public static func openAuthenticated(
        enc: [UInt8],
        privateKey: P256.PrivateKey,
        senderPublicKey: P256.PublicKey,
        info: [UInt8],
        aad: [UInt8],
        ciphertext: [UInt8]
    ) throws -> [UInt8] {
        var recipient = try Recipient(
            encapsulatedKey: enc,
            privateKey: privateKey,
            info: info,
            senderPublicKey: senderPublicKey
        )
        return try recipient.open(ciphertext, aad: aad)
    }
}

// MARK: - Key schedule and contexts (RFC 9180 §5.1, §5.2, §5.3)

extension HPKE {
    /// The output of `KeySchedule` in base mode.
    struct KeySchedule: Sendable {
        let keyScheduleContext: [UInt8]
        let secret: [UInt8]
        let key: [UInt8]
        let baseNonce: [UInt8]
        let exporterSecret: [UInt8]

        init(sharedSecret: [UInt8], info: [UInt8], mode: UInt8 = HPKE.modeBase) throws {
            let suite = HPKE.hpkeSuiteID
            let pskIDHash = try labeledExtract(suiteID: suite, salt: [], label: "psk_id_hash", ikm: [])
            let infoHash = try labeledExtract(suiteID: suite, salt: [], label: "info_hash", ikm: info)
            keyScheduleContext = [mode] + pskIDHash + infoHash
            secret = try labeledExtract(suiteID: suite, salt: sharedSecret, label: "secret", ikm: [])
            key = try labeledExpand(
                suiteID: suite,
                prk: secret,
                label: "key",
                info: keyScheduleContext,
                length: HPKE.keyByteCount
            )
            baseNonce = try labeledExpand(
                suiteID: suite,
                prk: secret,
                label: "base_nonce",
                info: keyScheduleContext,
                length: HPKE.nonceByteCount
            )
            exporterSecret = try labeledExpand(
                suiteID: suite,
                prk: secret,
                label: "exp",
                info: keyScheduleContext,
                length: HPKE.hashByteCount
            )
        }

        /// `base_nonce XOR I2OSP(seq, Nn)`.
        func nonce(sequenceNumber: UInt64) -> [UInt8] {
            var nonce = baseNonce
            for i in 0..<8 {
                nonce[HPKE.nonceByteCount - 1 - i] ^= UInt8(truncatingIfNeeded: sequenceNumber >> (8 * UInt64(i)))
            }
            return nonce
        }

        /// `Context.Export(exporter_context, L)` (RFC 9180 §5.3).
        func export(exporterContext: [UInt8], length: Int) throws -> [UInt8] {
            guard length >= 1, length <= 255 * HPKE.hashByteCount else {
                throw ProximaError(.invalidArgument, "HPKE export length \(length) is outside 1…\(255 * 32)")
            }
            return try labeledExpand(
                suiteID: HPKE.hpkeSuiteID,
                prk: exporterSecret,
                label: "sec",
                info: exporterContext,
                length: length
            )
        }
    }

    /// The sender's context (RFC 9180 §5.1.1 `SetupBaseS`): seals messages in order, each under the next nonce.
    ///
    /// Sequence numbers are kept in 64 bits, so a context refuses after 2^64 − 1 messages, sooner than the 2^96 − 1
    /// of the RFC; either is unreachable in practice.
    public struct Sender: ~Copyable, Sendable {
        /// `enc`: the 65-byte encapsulated ephemeral key to send along with the ciphertexts.
        public let encapsulatedKey: [UInt8]
        let schedule: KeySchedule
        let sharedSecret: [UInt8]
        /// The sequence number of the next message.
        public private(set) var sequenceNumber: UInt64 = 0

        /// Sets up a context to `recipientKey` with a fresh ephemeral key.
        /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
        public init(recipientKey: P256.PublicKey, info: [UInt8]) throws {
            // Key generation and ECDH are multiplications on the process's P-256 group: no EVP_PKEY is made.
            let (sharedSecret, enc) = try HPKE.encapsulate(to: recipientKey, ephemeralKey: try P256.PrivateKey())
            let schedule = try KeySchedule(sharedSecret: sharedSecret, info: info)
            self.encapsulatedKey = enc
            self.sharedSecret = sharedSecret
            self.schedule = schedule
        }

        /// Sets up a context with a chosen ephemeral key, for known-answer tests only: a fixed or reused ephemeral key
        /// destroys the confidentiality of everything sealed with it.
        @_spi(KnownAnswerTests)
        public init(recipientKey: P256.PublicKey, info: [UInt8], ephemeralKey: P256.PrivateKey) throws {
            // Everything that can throw runs before the first stored property is set: a non-copyable value may not be
            // left partly initialised on a throwing path.
            let (sharedSecret, enc) = try HPKE.encapsulate(to: recipientKey, ephemeralKey: ephemeralKey)
            let schedule = try KeySchedule(sharedSecret: sharedSecret, info: info)
            self.encapsulatedKey = enc
            self.sharedSecret = sharedSecret
            self.schedule = schedule
        }

        /// Sets up an auth-mode context (RFC 9180 §5.1.3 `SetupAuthS`) to `recipientKey` from `senderKey`, with a
        /// fresh ephemeral key.
        public init(recipientKey: P256.PublicKey, info: [UInt8], senderKey: P256.PrivateKey) throws {
            try self.init(
                keys: try AuthenticatedSenderKeys(recipientKey: recipientKey, senderKey: senderKey),
                info: info
            )
        }

        /// An auth-mode context from keys prepared once (``HPKE/AuthenticatedSenderKeys``), with a fresh ephemeral
        /// key: one key generation and one ECDH.
        public init(keys: AuthenticatedSenderKeys, info: [UInt8]) throws {
            try self.init(keys: keys, info: info, ephemeralKey: try P256.PrivateKey())
        }

        /// An auth-mode context with a chosen ephemeral key, for known-answer tests and worked examples only.
        @_spi(KnownAnswerTests)
        public init(
            recipientKey: P256.PublicKey,
            info: [UInt8],
            senderKey: P256.PrivateKey,
            ephemeralKey: P256.PrivateKey
        ) throws {
            try self.init(
                keys: try AuthenticatedSenderKeys(recipientKey: recipientKey, senderKey: senderKey),
                info: info,
                ephemeralKey: ephemeralKey
            )
        }

        private init(keys: AuthenticatedSenderKeys, info: [UInt8], ephemeralKey: P256.PrivateKey) throws {
            let (sharedSecret, enc) = try HPKE.authEncapsulate(keys, ephemeralKey: ephemeralKey)
            let schedule = try KeySchedule(sharedSecret: sharedSecret, info: info, mode: HPKE.modeAuth)
            self.encapsulatedKey = enc
            self.sharedSecret = sharedSecret
            self.schedule = schedule
        }

        /// Encrypts the next message (RFC 9180 §5.2 `ContextS.Seal`) and advances the sequence number.
        /// - Returns: The ciphertext followed by its 16-byte tag.
        /// - Throws: ``CryptoError/Code/messageLimitReached`` when the sequence numbers are used up.
        public mutating func seal(_ plaintext: [UInt8], aad: [UInt8]) throws -> [UInt8] {
            guard sequenceNumber < UInt64.max else {
                throw CryptoError(.messageLimitReached, "HPKE sender context sealed its last message; set up a new one")
            }
            let nonce = schedule.nonce(sequenceNumber: sequenceNumber)
            let ciphertext = try AES.GCM.seal(plaintext, key: schedule.key, iv: nonce, authenticating: aad)
            sequenceNumber += 1
            return ciphertext
        }

        /// A secret derived from the context (RFC 9180 §5.3 `Export`), equal on both sides.
        /// - Throws: `ProximaError.invalidArgument` for a length outside 1…8160.
        public func export(exporterContext: [UInt8], length: Int) throws -> [UInt8] {
            try schedule.export(exporterContext: exporterContext, length: length)
        }
    }

    /// The recipient's context (RFC 9180 §5.1.1 `SetupBaseR`): opens messages in the order they were sealed.
    public struct Recipient: ~Copyable, Sendable {
        let schedule: KeySchedule
        let sharedSecret: [UInt8]
        /// The sequence number the next message is expected to carry.
        public private(set) var sequenceNumber: UInt64 = 0

        /// Sets up a context from the sender's `enc`.
        /// - Throws: ``CryptoError/Code/invalidKey`` when `enc` is not a valid 65-byte uncompressed P-256 point.
        public init(encapsulatedKey: [UInt8], privateKey: P256.PrivateKey, info: [UInt8]) throws {
            let sharedSecret = try HPKE.decapsulate(enc: encapsulatedKey, privateKey: privateKey)
            let schedule = try KeySchedule(sharedSecret: sharedSecret, info: info)
            self.sharedSecret = sharedSecret
            self.schedule = schedule
        }

        /// Sets up an auth-mode context (RFC 9180 §5.1.3 `SetupAuthR`): messages open only if the sender held the
        /// private key of `senderPublicKey`.
        /// - Throws: ``CryptoError/Code/invalidKey`` when `enc` is not a valid 65-byte uncompressed P-256 point.
        public init(
            encapsulatedKey: [UInt8],
            privateKey: P256.PrivateKey,
            info: [UInt8],
            senderPublicKey: P256.PublicKey
        ) throws {
            let sharedSecret = try HPKE.authDecapsulate(
                enc: encapsulatedKey,
                privateKey: privateKey,
                senderPublicKey: senderPublicKey
            )
            let schedule = try KeySchedule(sharedSecret: sharedSecret, info: info, mode: HPKE.modeAuth)
            self.sharedSecret = sharedSecret
            self.schedule = schedule
        }

        /// Decrypts the next message (RFC 9180 §5.2 `ContextR.Open`); the sequence number advances only on success.
        /// - Throws: ``CryptoError/Code/authenticationFailed`` when the ciphertext does not authenticate (wrong key,
        ///   info, aad or order, or altered or truncated bytes); ``CryptoError/Code/messageLimitReached`` when the
        ///   sequence numbers are used up.
        public mutating func open(_ ciphertext: [UInt8], aad: [UInt8]) throws -> [UInt8] {
            guard sequenceNumber < UInt64.max else {
                throw CryptoError(.messageLimitReached, "HPKE recipient context opened its last message")
            }
            let nonce = schedule.nonce(sequenceNumber: sequenceNumber)
            let plaintext = try AES.GCM.open(ciphertext, key: schedule.key, iv: nonce, authenticating: aad)
            sequenceNumber += 1
            return plaintext
        }

        /// A secret derived from the context (RFC 9180 §5.3 `Export`), equal on both sides.
        /// - Throws: `ProximaError.invalidArgument` for a length outside 1…8160.
        public func export(exporterContext: [UInt8], length: Int) throws -> [UInt8] {
            try schedule.export(exporterContext: exporterContext, length: length)
        }
    }
}

// MARK: - Known-answer test hooks

extension HPKE.Sender {
    /// The KEM shared secret, for known-answer tests.
    @_spi(KnownAnswerTests) public var kemSharedSecret: [UInt8] { sharedSecret }
    /// The key schedule's context, secret, key, base nonce and exporter secret, for known-answer tests.
    @_spi(KnownAnswerTests) public var keyScheduleValues: HPKE.KeyScheduleValues { HPKE.KeyScheduleValues(schedule) }
    /// Moves to sequence number `value`, for known-answer tests of later messages and of the message limit.
    @_spi(KnownAnswerTests) public mutating func skip(toSequenceNumber value: UInt64) { sequenceNumber = value }
}

extension HPKE.Recipient {
    /// The KEM shared secret, for known-answer tests.
    @_spi(KnownAnswerTests) public var kemSharedSecret: [UInt8] { sharedSecret }
    /// The key schedule's values, for known-answer tests.
    @_spi(KnownAnswerTests) public var keyScheduleValues: HPKE.KeyScheduleValues { HPKE.KeyScheduleValues(schedule) }
    /// Moves to sequence number `value`, for known-answer tests of later messages and of the message limit.
    @_spi(KnownAnswerTests) public mutating func skip(toSequenceNumber value: UInt64) { sequenceNumber = value }
}

extension HPKE {
    /// The intermediate values of RFC 9180 §5.1 that the RFC's test vectors print.
    @_spi(KnownAnswerTests)
    public struct KeyScheduleValues: Sendable {
        public let keyScheduleContext: [UInt8]
        public let secret: [UInt8]
        public let key: [UInt8]
        public let baseNonce: [UInt8]
        public let exporterSecret: [UInt8]

        init(_ schedule: KeySchedule) {
            keyScheduleContext = schedule.keyScheduleContext
            secret = schedule.secret
            key = schedule.key
            baseNonce = schedule.baseNonce
            exporterSecret = schedule.exporterSecret
        }
    }
}
