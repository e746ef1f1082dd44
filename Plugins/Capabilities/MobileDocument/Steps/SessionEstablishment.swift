import ProximaCore
import ProximaCrypto

/// The session of one mDL read (ISO/IEC 18013-5 §9.1.1): SessionTranscript, session keys and the AES-256-GCM
/// message counters of both directions.
///
/// `SessionTranscript = [DeviceEngagementBytes, EReaderKeyBytes, Handover]`, and
/// `SessionTranscriptBytes = #6.24(bstr .cbor SessionTranscript)`. With `Z` the ECDH x-coordinate of the reader's
/// and the holder's ephemeral keys and `salt = SHA-256(SessionTranscriptBytes)`:
/// `SKReader = HKDF-SHA256(Z, salt, "SKReader", 32)`, `SKDevice = HKDF-SHA256(Z, salt, "SKDevice", 32)` (§9.1.1.5).
/// The IV is an 8-byte identifier (`0` reader→mdoc, `1` mdoc→reader) and a 4-byte big-endian counter that starts
/// at 1 in each direction; there is no additional data.
///
/// Not `Sendable`: it holds counters and the reader's ephemeral key, for one read on one task.
package struct MdocSession {
    /// The holder's engagement.
    package let engagement: DeviceEngagement
    /// The reader's ephemeral key, on the engagement key's curve.
    let readerKey: ECPrivateKey
    /// The encoded SessionTranscript (the content of SessionTranscriptBytes).
    package let sessionTranscript: [UInt8]
    /// `#6.24(bstr .cbor SessionTranscript)`, encoded.
    package let sessionTranscriptBytes: [UInt8]
    /// The content of EReaderKeyBytes (the reader's COSE_Key, encoded).
    package let readerKeyBytes: [UInt8]
    private let readerSessionKey: [UInt8]
    private let deviceSessionKey: [UInt8]
    private var readerCounter: UInt32 = 1
    private var deviceCounter: UInt32 = 1

    /// Starts a session with a fresh ephemeral reader key on the holder's curve.
    /// - Parameter handover: The Handover element: `[HS, HR-or-nil]` bytes for NFC, `null` for QR.
    /// - Throws: ``CryptoError`` if OpenSSL fails.
    package init(engagement: DeviceEngagement, handover: CBORValue) throws {
        try self.init(
            engagement: engagement,
            handover: handover,
            readerKey: try ECPrivateKey(generatingOn: engagement.deviceKey.curve)
        )
    }

    /// Starts a session with a given reader key (tests replay Annex D with its published key).
    package init(engagement: DeviceEngagement, handover: CBORValue, readerKey: ECPrivateKey) throws {
        guard readerKey.curve == engagement.deviceKey.curve else {
            throw MobileDocumentError(
                .unsupportedEngagement,
                "reader key on \(readerKey.curve), holder on another curve"
            )
        }
        self.engagement = engagement
        self.readerKey = readerKey
        readerKeyBytes = CBOREncoder.encode(COSEKey.value(of: readerKey.publicKey))
        var transcript: [UInt8] = [0x83]
        CBOREncoder.append(.embedded(encoded: engagement.encoded), to: &transcript)
        CBOREncoder.append(.embedded(encoded: readerKeyBytes), to: &transcript)
        CBOREncoder.append(handover, to: &transcript)
        sessionTranscript = transcript
        sessionTranscriptBytes = CBOREncoder.encode(.embedded(encoded: transcript))
        let salt = try SHA256.hash(sessionTranscriptBytes)
        let z = try readerKey.sharedSecret(with: engagement.deviceKey)
        readerSessionKey = try HKDF.deriveKey(
            inputKeyMaterial: z,
            salt: salt,
            info: Array("SKReader".utf8),
            outputByteCount: 32
        )
        deviceSessionKey = try HKDF.deriveKey(
            inputKeyMaterial: z,
            salt: salt,
            info: Array("SKDevice".utf8),
            outputByteCount: 32
        )
    }

    /// EMacKey for a deviceMac (§9.1.3.5): HKDF-SHA256 over ECDH(reader ephemeral key, device key), same salt.
    /// - Throws: ``CryptoError/Code/invalidKey`` when the device key is on another curve.
    package func deviceMacKey(deviceKey: ECPublicKey) throws -> [UInt8] {
        let z = try readerKey.sharedSecret(with: deviceKey)
        return try HKDF.deriveKey(
            inputKeyMaterial: z,
            salt: try SHA256.hash(sessionTranscriptBytes),
            info: Array("EMacKey".utf8),
            outputByteCount: 32
        )
    }

    private static func iv(identifier: UInt8, counter: UInt32) -> [UInt8] {
        [0, 0, 0, 0, 0, 0, 0, identifier]
            + [
                UInt8(counter >> 24), UInt8(truncatingIfNeeded: counter >> 16), UInt8(truncatingIfNeeded: counter >> 8),
                UInt8(truncatingIfNeeded: counter),
            ]
    }

    /// Encrypts the next reader→holder message under SKReader.
    package mutating func encrypt(_ plaintext: [UInt8]) throws -> [UInt8] {
        let sealed = try AES.GCM.seal(
            plaintext,
            key: readerSessionKey,
            iv: Self.iv(identifier: 0, counter: readerCounter)
        )
        readerCounter &+= 1
        return sealed
    }

    /// Decrypts the next holder→reader message under SKDevice.
    /// - Throws: ``MobileDocumentError/Code/sessionDecryptionFailed`` when the tag does not verify.
    package mutating func decrypt(_ ciphertext: [UInt8]) throws -> [UInt8] {
        do {
            let plaintext = try AES.GCM.open(
                ciphertext,
                key: deviceSessionKey,
                iv: Self.iv(identifier: 1, counter: deviceCounter)
            )
            deviceCounter &+= 1
            return plaintext
        } catch {
            throw MobileDocumentError(
                .sessionDecryptionFailed,
                "SessionData \(deviceCounter) does not decrypt under SKDevice",
                underlying: error
            )
        }
    }

    /// `SessionEstablishment = {"eReaderKey": EReaderKeyBytes, "data": bstr}` with the encrypted DeviceRequest.
    package mutating func sessionEstablishment(deviceRequest: [UInt8]) throws -> [UInt8] {
        let data = try encrypt(deviceRequest)
        return CBOREncoder.encode(["eReaderKey": .embedded(encoded: readerKeyBytes), "data": .byteString(data)])
    }

    /// `SessionData = {"status": 20}`: the reader ends the session (§9.1.1.4).
    package static let termination: [UInt8] = CBOREncoder.encode(["status": 20])

    /// Reads a holder's SessionData and returns the decrypted payload.
    /// - Throws: ``MobileDocumentError``: `.malformedSessionMessage`, `.sessionDecryptionFailed`,
    ///   `.sessionTerminated` when the holder sends a status without data.
    package mutating func openSessionData(_ encoded: [UInt8]) throws -> [UInt8] {
        let value: CBORValue
        do {
            value = try CBORDecoder.decode(encoded)
        } catch {
            throw MobileDocumentError.decoding(.malformedSessionMessage, "SessionData", error)
        }
        guard case .map = value else { throw MobileDocumentError(.malformedSessionMessage, "SessionData is not a map") }
        if let data = value["data"] {
            guard let bytes = data.bytesValue else {
                throw MobileDocumentError(.malformedSessionMessage, "SessionData data is not a bstr")
            }
            return try decrypt(bytes)
        }
        let status = value["status"]?.intValue
        let meaning =
            switch status {
            case 10: "error: session encryption"
            case 11: "error: CBOR decoding"
            case 20: "session termination"
            default: "status \(status.map(String.init) ?? "absent")"
            }
        throw MobileDocumentError(.sessionTerminated, "holder sent SessionData without data (\(meaning))")
    }
}
