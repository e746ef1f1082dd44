package import Foundation
internal import ProximaCore
internal import ProximaCrypto

/// The VAS cryptogram (`9F27`) of a pass: `keyId(4) ‖ deviceEphemeralX(32) ‖ AES-256-GCM ciphertext ‖ tag(16)`
/// (kormax/apple-vas README and `examples/implementations/decryption.py`; proxmark3 `cmdhfvas.c`).
///
/// 1. `keyId` = the first 4 bytes of SHA-256 of the merchant public key's x coordinate: it picks the private key.
/// 2. The device's ephemeral point is the one with x = `deviceEphemeralX` (the sign of y does not change the ECDH
///    x coordinate, so `02 ‖ x` is used).
/// 3. `Z` = ECDH(merchant key, device point); `K` = ANSI X9.63 KDF (SHA-256, 32 bytes) with shared info
///    `0x0D ‖ "id-aes256-GCM" ‖ "ApplePay encrypted VAS data" ‖ SHA-256(passTypeIdentifier)`.
/// 4. AES-256-GCM with a 16-byte zero IV and no AAD. proxmark3 also accepts the older variant whose shared info is
///    `"ApplePay encrypted VAS data"` alone with SHA-256(passTypeIdentifier) as AAD; it is tried when the first
///    fails.
/// 5. The plaintext is a 4-byte big-endian timestamp (seconds since 2001-01-01 00:00:00 UTC) and the pass
///    message.
package enum VASCryptogram {
    package static let keyIDByteCount = 4
    package static let coordinateByteCount = 32
    /// The shortest cryptogram: key id, x, an empty ciphertext's 4-byte timestamp, tag.
    package static let minimumByteCount = keyIDByteCount + coordinateByteCount + 4 + AES.GCM.tagByteCount
    /// 16 zero bytes: the IV VAS uses (GCM hashes a non-12-byte IV through GHASH).
    package static let initializationVector = [UInt8](repeating: 0, count: 16)
    static let purpose = Array("ApplePay encrypted VAS data".utf8)

    /// The X9.63 shared info of the current scheme.
    package static func sharedInfo(passTypeHash: [UInt8]) -> [UInt8] {
        [0x0D] + Array("id-aes256-GCM".utf8) + purpose + passTypeHash
    }

    /// A decrypted pass: when the phone made the cryptogram, and the message.
    package struct Pass: Hashable, Sendable {
        package var timestamp: Date
        package var message: [UInt8]
    }

    static func step(_ merchant: String) -> String { "DECRYPT 9F27 \(merchant)" }

    /// Decrypts `cryptogram` with the key its id names among `merchant`'s keys.
    /// - Throws: ``LoyaltyError`` — `cardReadFailed` (too short, or an x that is no curve point), `unknownKey`
    ///   (no configured key has that id), `cryptogramRejected` (the tag fails under both shared-info variants).
    package static func decrypt(_ cryptogram: [UInt8], merchant: LoyaltySettings.Merchant) throws(LoyaltyError)
        -> Pass
    {
        let step = step(merchant.passTypeIdentifier)
        guard cryptogram.count >= minimumByteCount, cryptogram.count <= 1024 else {
            throw LoyaltyError(
                .cardReadFailed,
                step: step,
                "the cryptogram has \(cryptogram.count) bytes, expected \(minimumByteCount)…1024"
            )
        }
        let keyID = Array(cryptogram[0..<keyIDByteCount])
        let x = Array(cryptogram[keyIDByteCount..<(keyIDByteCount + coordinateByteCount)])
        let sealed = Array(cryptogram[(keyIDByteCount + coordinateByteCount)...])
        guard let key = merchant.keys.first(where: { $0.keyID == keyID }) else {
            let known = merchant.keys.map(\.keyID.hexString).joined(separator: ", ")
            throw LoyaltyError(
                .unknownKey,
                step: step,
                "key id \(keyID.hexString) is none of the merchant's keys (\(known)); was the pass made for another key?"
            )
        }
        // `02 ‖ x`: the sign of y does not change the x coordinate of d·Q. ECDH is a multiplication on the process's
        // P-256 group: the tap only decodes the point and multiplies.
        let z: [UInt8]
        do {
            z = try key.privateKey.sharedSecret(withPoint: [0x02] + x)
        } catch {
            throw LoyaltyError(.cardReadFailed, step: step, "the device's ephemeral x is not on P-256")
        }
        let plaintext: [UInt8]
        do {
            if let current = try? open(sealed, z: z, sharedInfo: sharedInfo(passTypeHash: merchant.passTypeHash)) {
                plaintext = current
            } else {
                plaintext = try open(sealed, z: z, sharedInfo: purpose, aad: merchant.passTypeHash)
            }
        } catch {
            throw LoyaltyError(
                .cryptogramRejected,
                step: step,
                "the cryptogram does not authenticate under key \(keyID.hexString): altered, or made for another "
                    + "pass type (\(VASSession.reason(of: error)))"
            )
        }
        guard plaintext.count >= 4 else {
            throw LoyaltyError(.cryptogramRejected, step: step, "the plaintext has no 4-byte timestamp")
        }
        let seconds =
            UInt32(plaintext[0]) << 24 | UInt32(plaintext[1]) << 16 | UInt32(plaintext[2]) << 8
            | UInt32(plaintext[3])
        return Pass(
            timestamp: Date(timeIntervalSinceReferenceDate: TimeInterval(seconds)),
            message: Array(plaintext[4...])
        )
    }

    private static func open(_ sealed: [UInt8], z: [UInt8], sharedInfo: [UInt8], aad: [UInt8] = []) throws
        -> [UInt8]
    {
        let key = try X963KDF.deriveKey(sharedSecret: z, sharedInfo: sharedInfo, outputByteCount: 32)
        return try AES.GCM.open(sealed, key: key, iv: initializationVector, authenticating: aad)
    }

    /// Refuses a pass made more than `maximumAge` before `now`, or as far after it (a phone's clock ahead).
    /// - Throws: ``LoyaltyError/Code/staleCryptogram`` with the age in whole seconds.
    package static func checkAge(of timestamp: Date, now: Date, maximumAge: Duration, merchant: String)
        throws(LoyaltyError)
    {
        let age = now.timeIntervalSince(timestamp)
        let limit = Double(maximumAge.components.seconds)
        guard abs(age) <= limit else {
            let direction = age > 0 ? "old" : "ahead of this host's clock"
            throw LoyaltyError(
                .staleCryptogram,
                step: step(merchant),
                "the cryptogram is \(Int64(abs(age).rounded())) s \(direction), beyond maxCryptogramAgeSeconds "
                    + "\(Int64(limit)); VAS has no reader nonce, so an old cryptogram may be a replay"
            )
        }
    }
}
