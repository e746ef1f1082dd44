internal import ProximaCore
package import ProximaCrypto

/// The cryptography of Google Smart Tap 2.1's secure session (Google's sample terminal
/// `NegotiateCryptoCommand.java` / `GetDataResponse.java`, Apache-2.0; proxmark3 `cmdhfgst.c`; kormax
/// google-smart-tap README). Only the key schedule and the record bundle so far: the NEGOTIATE SECURE SESSION and
/// GET DATA steps, the NDEF records and the Android-like responder are not implemented yet.
///
/// 1. The reader signs `readerNonce(32) ‖ deviceNonce(32) ‖ collectorID(4, BE) ‖ readerEphemeral(33, compressed)`
///    with the collector's long-term key (ECDSA P-256 SHA-256).
/// 2. `Z` = ECDH(reader ephemeral, device ephemeral); HKDF-SHA256 with IKM `Z`, salt the device ephemeral key's 33
///    bytes as received, info `readerNonce ‖ deviceNonce ‖ collectorID ‖ readerEphemeral ‖ signature (DER)`,
///    48 bytes: the AES-128 key, then the HMAC-SHA256 key.
/// 3. A record bundle (`reb`) is `flags(1) ‖ IV(12) ‖ ciphertext ‖ HMAC-SHA256(IV ‖ ciphertext)(32)`; AES-128-CTR
///    with the counter block `IV ‖ 00000000`. Flags: bit 0 encrypted, bit 1 zlib-compressed.
package enum SmartTapCrypto {
    package struct SessionKeys: Hashable, Sendable {
        package var encryption: [UInt8]
        package var authentication: [UInt8]

        package init(encryption: [UInt8], authentication: [UInt8]) {
            self.encryption = encryption
            self.authentication = authentication
        }
    }

    static let step = "SMART TAP record bundle"

    /// The bytes the collector signs.
    package static func signedData(
        readerNonce: [UInt8],
        deviceNonce: [UInt8],
        collectorID: UInt32,
        readerEphemeral: P256.PublicKey
    ) -> [UInt8] {
        readerNonce + deviceNonce + bigEndian(collectorID) + readerEphemeral.compressedRepresentation
    }

    /// The session keys of one negotiation.
    package static func sessionKeys(
        readerEphemeral: P256.PrivateKey,
        deviceEphemeral: [UInt8],
        readerNonce: [UInt8],
        deviceNonce: [UInt8],
        collectorID: UInt32,
        signature: P256.ECDSASignature
    ) throws -> SessionKeys {
        guard deviceEphemeral.count == 33, deviceEphemeral[0] == 0x02 || deviceEphemeral[0] == 0x03 else {
            throw CryptoError(.invalidKey, "the device key has \(deviceEphemeral.count) bytes; expected 33, compressed")
        }
        // On the process's P-256 group: no EVP keys built for keys used once.
        let z = try readerEphemeral.sharedSecret(withPoint: deviceEphemeral)
        let info =
            signedData(
                readerNonce: readerNonce,
                deviceNonce: deviceNonce,
                collectorID: collectorID,
                readerEphemeral: readerEphemeral.publicKey
            ) + signature.derRepresentation
        let okm = try HKDF.deriveKey(inputKeyMaterial: z, salt: deviceEphemeral, info: info, outputByteCount: 48)
        return SessionKeys(encryption: Array(okm[0..<16]), authentication: Array(okm[16..<48]))
    }

    /// Checks the bundle's HMAC, then decrypts it. Total: any bytes give a plaintext or an error.
    /// - Returns: The flags byte and the plaintext (still compressed when flag bit 1 is set).
    /// - Throws: ``LoyaltyError/Code/cardReadFailed`` (too short), ``LoyaltyError/Code/cryptogramRejected``
    ///   (the HMAC fails).
    package static func openBundle(_ bundle: [UInt8], keys: SessionKeys) throws(LoyaltyError)
        -> (flags: UInt8, plaintext: [UInt8])
    {
        guard bundle.count >= 1 + 12 + 32, bundle.count <= 65_536 else {
            throw LoyaltyError(.cardReadFailed, step: step, "a bundle of \(bundle.count) bytes; expected 45…65536")
        }
        let flags = bundle[0]
        let body = Array(bundle[1..<(bundle.count - 32)])
        let tag = Array(bundle[(bundle.count - 32)...])
        guard (try? HMAC.isValidAuthenticationCode(tag, for: body, key: keys.authentication)) == true else {
            throw LoyaltyError(
                .cryptogramRejected,
                step: step,
                "the bundle's HMAC does not verify: altered or another session"
            )
        }
        guard flags & 0x01 != 0 else { return (flags, Array(body[12...])) }
        do {
            let plaintext = try AES.CTR.decrypt(
                Array(body[12...]),
                key: keys.encryption,
                iv: Array(body[0..<12]) + [0, 0, 0, 0]
            )
            return (flags, plaintext)
        } catch {
            throw LoyaltyError(.cryptogramRejected, step: step, "AES-CTR failed: \(VASSession.reason(of: error))")
        }
    }

    /// The bundle a phone sends (the virtual phone's side and tests).
    package static func sealBundle(_ plaintext: [UInt8], iv: [UInt8], keys: SessionKeys, flags: UInt8 = 0x01) throws
        -> [UInt8]
    {
        let ciphertext = try AES.CTR.encrypt(plaintext, key: keys.encryption, iv: iv + [0, 0, 0, 0])
        let tag = try HMAC.authenticationCode(for: iv + ciphertext, key: keys.authentication)
        return [flags] + iv + ciphertext + tag
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
