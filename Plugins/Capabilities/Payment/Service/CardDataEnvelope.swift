package import Foundation
package import ProximaCore
package import ProximaCrypto

/// The encrypted card data of a read (`PaymentCardReadResult.paymentCardData`): a JSON document with the EMV data
/// a processor needs, sealed with HPKE (RFC 9180, DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-128-GCM) to the
/// processor's public key. `Docs/card-data-envelope.md` specifies both versions byte for byte.
///
/// Version 2 (what readers write) is HPKE **auth mode** (RFC 9180 §5.1.3) with the reader's P-256 key as sender
/// key: it opens only with the public key of the reader that sealed it, so the processor's public key alone
/// cannot make one. Version 1 (base mode, no sender authentication) is still opened.
///
/// ```
/// offset  size  field (v2)                       v1
///      0     4  magic "PXE1" (50 58 45 31)        same
///      4     1  version 02                        01
///      5     6  kem 0010, kdf 0001, aead 0001     same
///     11     2  enc length 0041 (65)              same
///     13    65  enc                               same
///     78    32  sender key id: SHA-256(pkS)       (absent)
///    110     4  ciphertext length N               at 78
///    114     N  ciphertext                        at 82
/// ```
///
/// HPKE `info` is `proxima card data envelope v1` / `… v2` (29 ASCII bytes); the AEAD's additional data is the
/// header (82 / 114 bytes). `paymentCardData` is the envelope in standard base64 with padding.
package enum CardDataEnvelope {
    /// `PXE1`.
    package static let magic: [UInt8] = [0x50, 0x58, 0x45, 0x31]
    /// Version 1: HPKE base mode, no sender authentication.
    package static let version: UInt8 = 1
    /// Version 2: HPKE auth mode with the reader's key.
    package static let authenticatedVersion: UInt8 = 2
    /// HPKE `info` of version 1: `proxima card data envelope v1`.
    package static let info: [UInt8] = Array("proxima card data envelope v1".utf8)
    /// HPKE `info` of version 2: `proxima card data envelope v2`.
    package static let authenticatedInfo: [UInt8] = Array("proxima card data envelope v2".utf8)
    /// Bytes before the ciphertext of version 1; they are the AEAD's additional data.
    package static let headerByteCount = 82
    /// Bytes before the ciphertext of version 2 (the 32-byte sender key id added).
    package static let authenticatedHeaderByteCount = 114
    /// The largest envelope accepted by ``open(_:privateKey:now:)-(_,P256.PrivateKey,_)``.
    package static let maximumByteCount = 64 * 1024

    /// What an envelope carries.
    ///
    /// Its `description`, debug description and reflection mask the PAN (`5A`) and track 2 (`57`); use
    /// ``formatted(revealingPAN:)`` to show them on purpose.
    package struct Contents: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
        CustomReflectable
    {
        /// `purchase`, `refund` or `verification` (a card check without a charge).
        package enum Kind: String, Hashable, Sendable, CaseIterable {
            case purchase, refund, verification
        }

        /// `txn`: the read's id, as ``PaymentCardReadResult/id``.
        package var transactionID: String
        package var kind: Kind
        /// `amount`: a decimal string with exactly the currency's minor-unit digits (`29.99`, `500`, `1.250`).
        package var amount: String
        /// `currency`: the ISO 4217 alphabetic code.
        package var currencyCode: String
        /// `merchant`: the merchant id of the token used for the read.
        package var merchantID: String
        /// `reader`: the kernel's reader identifier (`capabilities.payment.readerIdentifier`).
        package var readerIdentifier: String
        /// `lane`: the lane the read ran on.
        package var lane: String
        /// `device`: the physical reader that read the card.
        package var device: String
        /// `readAt`: when the card was read (whole seconds).
        package var readAt: Date
        /// `expiresAt`: after this the processor must refuse the envelope.
        package var expiresAt: Date
        /// `outcome`: the EMV outcome (`onlineRequest`, `approved`, `declined`, …).
        package var outcome: String
        /// `cvm`: the cardholder verification the card asked for (`noCVM`, `onlinePIN`, `signature`,
        /// `consumerDevice`, `failed`).
        package var cardholderVerification: String
        /// `emv`: the EMV data objects in the order they were written.
        package var emv: [TLV]
        /// The reader key that sealed the envelope (SHA-256 of its point), known only for a version 2 envelope that
        /// opened with that key; `nil` for version 1 (no sender authentication) and before sealing.
        package var senderKeyID: [UInt8]?

        package init(
            transactionID: String,
            kind: Kind,
            amount: String,
            currencyCode: String,
            merchantID: String,
            readerIdentifier: String,
            lane: String,
            device: String,
            readAt: Date,
            expiresAt: Date,
            outcome: String,
            cardholderVerification: String,
            emv: [TLV]
        ) {
            self.transactionID = transactionID
            self.kind = kind
            self.amount = amount
            self.currencyCode = currencyCode
            self.merchantID = merchantID
            self.readerIdentifier = readerIdentifier
            self.lane = lane
            self.device = device
            self.readAt = Date(timeIntervalSince1970: readAt.timeIntervalSince1970.rounded(.down))
            self.expiresAt = Date(timeIntervalSince1970: expiresAt.timeIntervalSince1970.rounded(.down))
            self.outcome = outcome
            self.cardholderVerification = cardholderVerification
            self.emv = emv
        }

        /// The value of an EMV tag.
        package subscript(tag: TLVTag) -> [UInt8]? { emv.first { $0.tag == tag }?.value }

        /// The EMV data as BER-TLV, in order: an authorisation message's field 55.
        package var field55: [UInt8] { emv.flatMap(\.bytes) }

        /// The plaintext of a version 1 envelope: compact JSON, members in the documented order.
        package var jsonText: String { jsonText(version: 1) }

        /// The plaintext: compact JSON, members in the documented order, `v` the envelope version.
        package func jsonText(version: Int) -> String { String(decoding: jsonBytes(version: version), as: UTF8.self) }

        /// ``jsonText(version:)`` as the UTF-8 bytes that are sealed, written member by member (no `JSONValue`
        /// tree, no `String` per hex value: this runs on every read).
        package func jsonBytes(version: Int) -> [UInt8] {
            var json = JSONWriter(capacity: 384 + 4 * emv.reduce(0) { $0 + $1.value.count })
            json.beginObject()
            json.key("v")
            json.integer(Int64(version))
            for (key, value) in [
                ("txn", transactionID), ("type", kind.rawValue), ("amount", amount), ("currency", currencyCode),
                ("merchant", merchantID), ("reader", readerIdentifier), ("lane", lane), ("device", device),
            ] {
                json.key(key)
                json.string(value)
            }
            json.key("readAt")
            json.integer(Int64(readAt.timeIntervalSince1970))
            json.key("expiresAt")
            json.integer(Int64(expiresAt.timeIntervalSince1970))
            json.key("outcome")
            json.string(outcome)
            json.key("cvm")
            json.string(cardholderVerification)
            json.key("emv")
            json.beginObject()
            for object in emv {
                json.hexKey(object.tag.bytes)
                json.hexString(object.value)
            }
            json.endObject()
            json.endObject()
            return json.bytes
        }

        /// Tags whose values are cardholder data: masked unless revealed.
        static let sensitiveTags: Set<TLVTag> = [0x5A, 0x57, 0x56, 0x5F20, 0x9F6B, 0x9F1F, 0x9F20]

        /// A multi-line report for people (the `proxima psp decrypt` output): every field and tag, the PAN shown
        /// as its last four digits and track data as its length unless `revealingPAN` is set.
        package func formatted(revealingPAN: Bool = false) -> String {
            var lines = [
                "transaction  \(transactionID)",
                "type         \(kind.rawValue)",
                "amount       \(amount) \(currencyCode)",
                "merchant     \(merchantID)",
                "reader       \(readerIdentifier) (lane \(lane), device \(device))",
                "read at      \(AccountLinkStore.format(readAt))",
                "expires at   \(AccountLinkStore.format(expiresAt))",
                "outcome      \(outcome), CVM \(cardholderVerification)",
                "sender       "
                    + (senderKeyID.map { "reader key \($0.hexString) (authenticated, envelope v2)" }
                        ?? "not authenticated (envelope v1)"),
                "EMV data     \(emv.count) tags",
            ]
            for object in emv {
                let tag = object.tag.bytes.hexString
                let padded = tag + String(repeating: " ", count: max(1, 6 - tag.count))
                lines.append("  \(padded)\(revealingPAN ? object.value.hexString : Self.masked(object))")
            }
            return lines.joined(separator: "\n")
        }

        /// A masked rendering of one data object.
        static func masked(_ object: TLV) -> String {
            guard sensitiveTags.contains(object.tag) else { return object.value.hexString }
            if object.tag == 0x5A, let digits = panDigits(object.value), digits.count >= 4 {
                return "•••• \(digits.suffix(4)) (PAN masked)"
            }
            return "(\(object.value.count) bytes masked)"
        }

        /// The digits of a BCD PAN (`F` padding removed), or `nil` when not BCD.
        private static func panDigits(_ value: [UInt8]) -> String? {
            var digits = ""
            for nibble in value.flatMap({ [$0 >> 4, $0 & 0x0F] }) {
                if nibble == 0x0F { break }
                guard nibble <= 9 else { return nil }
                digits.append(Character(Unicode.Scalar(0x30 + nibble)))
            }
            return digits
        }

        /// Fields and tag names; no value of a sensitive tag.
        package var description: String {
            let tags = emv.map { $0.tag.bytes.hexString }.joined(separator: " ")
            return "CardDataEnvelope.Contents(\(transactionID), \(kind.rawValue) \(amount) \(currencyCode), "
                + "merchant \(merchantID), reader \(readerIdentifier), lane \(lane), \(outcome), tags: \(tags))"
        }

        package var debugDescription: String { description }

        package var customMirror: Mirror { Mirror(self, children: ["summary": description], displayStyle: .struct) }
    }

    // MARK: Sealing

    /// Seals `contents` to the processor key: a fresh ephemeral key per envelope.
    /// - Returns: The envelope bytes (see the type's documentation).
    /// - Throws: `CryptoError` if OpenSSL fails; `ProximaError.invalidArgument` for a payload above the size limit.
    package static func seal(_ contents: Contents, to publicKey: P256.PublicKey) throws -> [UInt8] {
        let plaintext = contents.jsonBytes(version: 1)
        let ciphertextCount = plaintext.count + 16
        guard headerByteCount + ciphertextCount <= maximumByteCount else {
            throw ProximaError(.invalidArgument, "card data of \(plaintext.count) bytes exceeds the envelope limit")
        }
        var sender = try HPKE.Sender(recipientKey: publicKey, info: info)
        let header = Self.header(enc: sender.encapsulatedKey, ciphertextCount: ciphertextCount)
        let ciphertext = try sender.seal(plaintext, aad: header)
        return header + ciphertext
    }

    /// Seals `contents` as version 2: HPKE auth mode from `readerKey` to the processor key, a fresh ephemeral key
    /// per envelope.
    /// - Throws: `CryptoError` if OpenSSL fails; `ProximaError.invalidArgument` for a payload above the size limit.
    package static func seal(
        _ contents: Contents,
        to publicKey: P256.PublicKey,
        readerKey: P256.PrivateKey
    ) throws -> [UInt8] {
        try seal(contents, keys: try HPKE.AuthenticatedSenderKeys(recipientKey: publicKey, senderKey: readerKey))
    }

    /// Seals `contents` as version 2 with the reader and processor keys prepared once (what a reader does for every
    /// read: ``HPKE/AuthenticatedSenderKeys`` keeps `DH(reader key, processor key)`).
    package static func seal(_ contents: Contents, keys: HPKE.AuthenticatedSenderKeys) throws -> [UInt8] {
        var sender = try HPKE.Sender(keys: keys, info: authenticatedInfo)
        return try seal(contents, sender: &sender, readerPublicKey: keys.senderPublicKey)
    }

    /// Seals `contents` as version 2 with a given context (worked examples and known-answer tests fix the
    /// ephemeral key through it).
    package static func seal(
        _ contents: Contents,
        sender: inout HPKE.Sender,
        readerPublicKey: P256.PublicKey
    ) throws -> [UInt8] {
        let plaintext = contents.jsonBytes(version: 2)
        let ciphertextCount = plaintext.count + 16
        guard authenticatedHeaderByteCount + ciphertextCount <= maximumByteCount else {
            throw ProximaError(.invalidArgument, "card data of \(plaintext.count) bytes exceeds the envelope limit")
        }
        let header = authenticatedHeader(
            enc: sender.encapsulatedKey,
            senderKeyID: ReaderKeyStore.keyID(of: readerPublicKey),
            ciphertextCount: ciphertextCount
        )
        return header + (try sender.seal(plaintext, aad: header))
    }

    /// The 114 header bytes of version 2.
    package static func authenticatedHeader(enc: [UInt8], senderKeyID: [UInt8], ciphertextCount: Int) -> [UInt8] {
        var header = magic + [authenticatedVersion]
        header += bigEndian(HPKE.kemID) + bigEndian(HPKE.kdfID) + bigEndian(HPKE.aeadID)
        header += bigEndian(UInt16(enc.count)) + enc + senderKeyID
        header += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: UInt32(ciphertextCount) >> UInt32($0)) }
        return header
    }

    /// The 82 header bytes for an `enc` and a ciphertext length.
    package static func header(enc: [UInt8], ciphertextCount: Int) -> [UInt8] {
        var header = magic + [version]
        header += bigEndian(HPKE.kemID) + bigEndian(HPKE.kdfID) + bigEndian(HPKE.aeadID)
        header += bigEndian(UInt16(enc.count)) + enc
        header += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: UInt32(ciphertextCount) >> UInt32($0)) }
        return header
    }

    private static func bigEndian(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    // MARK: Opening

    /// Opens a `paymentCardData` string (standard base64 of the envelope).
    /// - Parameter readerKeys: the reader public keys registered with the processor; a version 2 envelope must
    ///   name and open with one of them.
    /// - Throws: ``CardDataEnvelopeError`` (`malformed` also for text that is not base64).
    package static func open(
        _ paymentCardData: String,
        privateKey: P256.PrivateKey,
        readerKeys: [P256.PublicKey] = [],
        now: Date = Date()
    ) throws -> Contents {
        let text = paymentCardData.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count <= maximumByteCount * 2, let bytes = Base64.decode(text) else {
            throw CardDataEnvelopeError(.malformed, "paymentCardData is not standard base64")
        }
        return try open(bytes, privateKey: privateKey, readerKeys: readerKeys, now: now)
    }

    /// Opens an envelope with the processor's private key and checks that it has not expired.
    ///
    /// - Parameters:
    ///   - envelope: The envelope bytes, version 1 or 2.
    ///   - privateKey: The processor's private key.
    ///   - readerKeys: The reader public keys registered with the processor. A version 2 envelope opens only
    ///     with the key its sender key id names; a version 1 envelope carries no sender, and ``Contents/senderKeyID``
    ///     stays `nil` (a processor that requires sender authentication refuses it).
    ///   - now: The processor's clock; the envelope must be opened before its `expiresAt`.
    /// - Throws: ``CardDataEnvelopeError`` with code `malformed` (bad magic, lengths, trailing bytes),
    ///   `unsupported` (another version or HPKE suite), `unknownSender` (v2 naming a reader key not in
    ///   `readerKeys`), `decryptionFailed` (wrong key, another sender, or altered bytes), `invalidPayload` (the
    ///   JSON is not a valid payload) or `expired`.
    package static func open(
        _ envelope: [UInt8],
        privateKey: P256.PrivateKey,
        readerKeys: [P256.PublicKey] = [],
        now: Date = Date()
    ) throws -> Contents {
        guard envelope.count <= maximumByteCount else {
            throw CardDataEnvelopeError(.malformed, "envelope of \(envelope.count) bytes exceeds \(maximumByteCount)")
        }
        guard envelope.count >= 5 else {
            throw CardDataEnvelopeError(.malformed, "envelope of \(envelope.count) bytes has no header")
        }
        guard Array(envelope[0..<4]) == magic else {
            throw CardDataEnvelopeError(.malformed, "bytes 0-3 are \(envelope[0..<4].hexString), not \"PXE1\"")
        }
        let version = envelope[4]
        guard version == Self.version || version == authenticatedVersion else {
            throw CardDataEnvelopeError(
                .unsupported,
                "envelope version \(version); this build opens versions 1 and 2"
            )
        }
        let authenticated = version == authenticatedVersion
        let headerCount = authenticated ? authenticatedHeaderByteCount : headerByteCount
        guard envelope.count >= headerCount + 16 else {
            throw CardDataEnvelopeError(
                .malformed,
                "envelope of \(envelope.count) bytes is shorter than the \(headerCount)-byte header and a tag"
            )
        }
        let suite = (uint16(envelope, 5), uint16(envelope, 7), uint16(envelope, 9))
        guard suite == (HPKE.kemID, HPKE.kdfID, HPKE.aeadID) else {
            throw CardDataEnvelopeError(
                .unsupported,
                "HPKE suite kem \(suite.0) kdf \(suite.1) aead \(suite.2); expected kem 16 (DHKEM P-256), kdf 1, aead 1"
            )
        }
        let encCount = Int(uint16(envelope, 11))
        guard encCount == HPKE.encapsulatedKeyByteCount else {
            throw CardDataEnvelopeError(.malformed, "enc length \(encCount) at offset 11; expected 65")
        }
        let lengthOffset = headerCount - 4
        let ciphertextCount = envelope[lengthOffset..<headerCount].reduce(0) { $0 << 8 | Int($1) }
        guard ciphertextCount == envelope.count - headerCount else {
            throw CardDataEnvelopeError(
                .malformed,
                "ciphertext length \(ciphertextCount) at offset \(lengthOffset), but \(envelope.count - headerCount) "
                    + "bytes follow"
            )
        }
        let enc = Array(envelope[13..<78])
        let header = Array(envelope[0..<headerCount])
        let ciphertext = Array(envelope[headerCount...])
        var senderKeyID: [UInt8]?
        let plaintext: [UInt8]
        do {
            if authenticated {
                let keyID = Array(envelope[78..<110])
                guard let readerKey = readerKeys.first(where: { ReaderKeyStore.keyID(of: $0) == keyID }) else {
                    throw CardDataEnvelopeError(
                        .unknownSender,
                        "the envelope was sealed by reader key \(keyID.hexString), which is not registered with "
                            + "this processor (register the reader's public key: proxima psp reader-key)"
                    )
                }
                plaintext = try HPKE.openAuthenticated(
                    enc: enc,
                    privateKey: privateKey,
                    senderPublicKey: readerKey,
                    info: authenticatedInfo,
                    aad: header,
                    ciphertext: ciphertext
                )
                senderKeyID = keyID
            } else {
                plaintext = try HPKE.open(
                    enc: enc,
                    privateKey: privateKey,
                    info: info,
                    aad: header,
                    ciphertext: ciphertext
                )
            }
        } catch let error as CardDataEnvelopeError {
            throw error
        } catch {
            let code = (error as? CryptoError).map { "\($0.code)" } ?? "\(error)"
            throw CardDataEnvelopeError(
                .decryptionFailed,
                "the envelope does not open with this key"
                    + (authenticated ? " and this reader key" : "")
                    + " (wrong processor key, another sender, or altered bytes): \(code)"
            )
        }
        var contents = try parse(plaintext, version: Int(version))
        contents.senderKeyID = senderKeyID
        guard now < contents.expiresAt else {
            throw CardDataEnvelopeError(
                .expired,
                "the card data expired at \(AccountLinkStore.format(contents.expiresAt)) (now "
                    + "\(AccountLinkStore.format(now))); the processor must refuse it"
            )
        }
        return contents
    }

    private static func uint16(_ bytes: [UInt8], _ offset: Int) -> UInt16 {
        UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    /// Parses and checks the JSON payload.
    static func parse(_ plaintext: [UInt8], version: Int = 1) throws -> Contents {
        do {
            let json = try JSONValue.parse(plaintext, limits: JSONValue.Limits(maxDepth: 4, maxBytes: maximumByteCount))
            var object = try StrictObject(json, at: "", errorCode: .malformedData)
            _ = try object.integer("v", in: Int64(version)...Int64(version))
            let kindText = try object.string("type")
            guard let kind = Contents.Kind(rawValue: kindText) else {
                throw object.fail("type", "\"\(kindText)\" is not purchase, refund or verification")
            }
            let transaction = try object.string("txn")
            let amount = try object.string("amount")
            let currency = try object.string("currency")
            let merchant = try object.string("merchant")
            let reader = try object.string("reader")
            let lane = try object.string("lane")
            let device = try object.string("device")
            let readAt = try object.integer("readAt", in: 0...Int64(UInt32.max))
            let expiresAt = try object.integer("expiresAt", in: 0...Int64(UInt32.max))
            let outcome = try object.string("outcome")
            let cvm = try object.string("cvm")
            let emvValue = try object.required("emv", expected: "an object of tag → hex value")
            let emvPath = object.path(of: "emv")
            try object.finish()
            guard case .object(let members) = emvValue else {
                throw object.mismatch(emvValue, "an object of tag → hex value", at: emvPath)
            }
            let emv = try members.map { member -> TLV in
                guard let tagBytes = strictHex(member.key), let tag = TLVTag(bytes: tagBytes) else {
                    throw ProximaError(.malformedData, "\(emvPath): \"\(member.key)\" is not a BER-TLV tag in hex")
                }
                guard case .string(let hex) = member.value, let value = strictHex(hex) else {
                    throw ProximaError(.malformedData, "\(emvPath).\(member.key): expected a hex string")
                }
                return try TLV(tag: tag, encodedValue: value)
            }
            return Contents(
                transactionID: transaction,
                kind: kind,
                amount: amount,
                currencyCode: currency,
                merchantID: merchant,
                readerIdentifier: reader,
                lane: lane,
                device: device,
                readAt: Date(timeIntervalSince1970: TimeInterval(readAt)),
                expiresAt: Date(timeIntervalSince1970: TimeInterval(expiresAt)),
                outcome: outcome,
                cardholderVerification: cvm,
                emv: emv
            )
        } catch let error as ProximaError {
            throw CardDataEnvelopeError(.invalidPayload, "the decrypted payload is not valid: \(error.pathAndReason)")
        }
    }

    /// Hex digits only (either case), an even count.
    private static func strictHex(_ text: String) -> [UInt8]? {
        guard text.utf8.count.isMultiple(of: 2),
            text.utf8.allSatisfy({ byte in
                (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
            })
        else { return nil }
        return [UInt8](hex: text)
    }
}

/// Why a card data envelope did not open.
package struct CardDataEnvelopeError: Error, Hashable, Sendable, CustomStringConvertible {
    package let code: Code
    package let reason: String

    package init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    package var description: String { "\(code): \(reason)" }

    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// A stable error code. Compare codes, never reasons.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String, Hashable, Sendable {
            case malformed, unsupported, unknownSender, decryptionFailed, invalidPayload, expired
        }
        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }
        package var description: String { backing.rawValue }

        /// Not an envelope: wrong magic, a length that does not match, trailing bytes, not base64.
        package static let malformed = Code(.malformed)
        /// Another envelope version or HPKE suite.
        package static let unsupported = Code(.unsupported)
        /// A version 2 envelope names a reader key the processor has not registered.
        package static let unknownSender = Code(.unknownSender)
        /// The HPKE open failed: another processor key, another sender, or bytes changed on the way.
        package static let decryptionFailed = Code(.decryptionFailed)
        /// The plaintext is not the documented JSON payload.
        package static let invalidPayload = Code(.invalidPayload)
        /// `expiresAt` has passed.
        package static let expired = Code(.expired)
    }
}
