internal import EMVCommon
package import ProximaCore
package import ProximaCrypto

// Public key recovery for offline data authentication, after EMV 4.4 Book 2 (Security and Key Management):
// §5.3 / §6.3 retrieval of the issuer public key (Table 6 "Format of the data recovered from the Issuer Public Key
// Certificate"), §6.4 retrieval of the ICC public key (Table 14), Annex A2.1 (the digital signature scheme giving
// message recovery: header 6A, trailer BC, SHA-1 over the recovered data and the parts not in the certificate) and
// Annex B (RSA, public exponents 3 and 65537, SHA-1 = Hash Algorithm Indicator 01, RSA = algorithm indicator 01).
// Certificate revocation lists (§5.3 step 10) are not kept: no revocation list is configured.

/// Why offline data authentication failed. The reason names the check, never card data.
package struct OfflineAuthenticationFailure: Error, Hashable, Sendable, CustomStringConvertible {
    package enum Code: String, Hashable, Sendable, CustomStringConvertible {
        /// A data object ODA needs is missing or of the wrong length (`8F`, `90`, `9F32`, `9F46`, `9F47`, `9F4B`,
        /// `9F4A` naming something other than `82`, …): Book 2 §5.3 / §6.2 "ICC data missing".
        case missingData
        /// The terminal holds no CA public key for the card's RID and CA Public Key Index (`8F`), or the key is
        /// past its expiry date.
        case unknownCertificationAuthority
        /// A certificate or signature does not recover to the expected format: wrong length, header, trailer,
        /// format, algorithm, hash, issuer identifier or PAN.
        case invalidCertificate
        /// The issuer or ICC public key certificate is past its expiration month.
        case expiredCertificate
        /// The Signed Dynamic Application Data (`9F4B`) does not verify: wrong recovery, hash or cryptogram data.
        case invalidSignature

        package var description: String { rawValue }
    }

    package var code: Code
    package var reason: String

    package init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    package var description: String { "\(code): \(reason)" }

    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// A public key recovered from an EMV public key certificate, with the certificate's fields.
package struct RecoveredPublicKey: Hashable, Sendable {
    package var key: RSA.PublicKey
    /// Issuer Identifier (issuer certificate, 4 bytes) or Application PAN (ICC certificate, 10 bytes), F-padded.
    package var owner: [UInt8]
    /// Certificate Expiration Date, MMYY as BCD.
    package var expiry: [UInt8]
    /// Certificate Serial Number (3 bytes).
    package var serialNumber: [UInt8]
}

/// Recovery of the issuer and ICC public keys (EMV Book 2 §6.3 and §6.4).
package enum PublicKeyCertificate {
    static let header: UInt8 = 0x6A
    static let trailer: UInt8 = 0xBC
    static let issuerFormat: UInt8 = 0x02
    static let iccFormat: UInt8 = 0x04
    static let sha1Indicator: UInt8 = 0x01
    static let rsaIndicator: UInt8 = 0x01

    /// The Issuer Public Key from its certificate (`90`), remainder (`92`) and exponent (`9F32`), certified by `authority`.
    ///
    /// - Parameters:
    ///   - pan: the Application PAN (`5A`) as read, F-padded BCD; the Issuer Identifier must match its leftmost
    ///     3–8 digits (Book 2 §6.3 step 7).
    ///   - today: the transaction date; a certificate whose MMYY month is before it has expired (step 8).
    /// - Throws: ``OfflineAuthenticationFailure`` naming the failed step.
    package static func issuerKey(
        certificate: [UInt8],
        remainder: [UInt8],
        exponent: [UInt8],
        authority: CertificationAuthorityKey,
        pan: [UInt8],
        today: CivilTime
    ) throws(OfflineAuthenticationFailure) -> RecoveredPublicKey {
        let what = "Issuer Public Key Certificate (90)"
        let recovered = try recover(certificate, with: authority.key, format: issuerFormat, what: what)
        let n = recovered.count
        let hashInput = Array(recovered[1..<(n - 21)]) + remainder + exponent
        try checkHash(recovered, over: hashInput, what: what)
        let identifier = Array(recovered[2..<6])
        guard Self.issuerIdentifier(identifier, matches: pan) else {
            throw OfflineAuthenticationFailure(.invalidCertificate, "\(what): Issuer Identifier does not match the PAN")
        }
        let key = try publicKey(
            recovered,
            fieldStart: 15,
            lengthIndex: 13,
            exponentLengthIndex: 14,
            hashAlgorithmIndex: 11,
            remainder: remainder,
            exponent: exponent,
            what: what
        )
        let expiry = Array(recovered[6..<8])
        try checkExpiry(expiry, today: today, what: what)
        return RecoveredPublicKey(key: key, owner: identifier, expiry: expiry, serialNumber: Array(recovered[8..<11]))
    }

    /// The ICC Public Key from its certificate (`9F46`), remainder (`9F48`) and exponent (`9F47`), certified by the
    /// issuer key; the certificate's hash also covers `staticData` (Book 2 §6.4 step 5: the records flagged for
    /// offline data authentication and, when `9F4A` says so, the AIP).
    ///
    /// - Throws: ``OfflineAuthenticationFailure`` naming the failed step; a PAN that differs from `5A` is
    ///   `invalidCertificate` (step 8).
    package static func iccKey(
        certificate: [UInt8],
        remainder: [UInt8],
        exponent: [UInt8],
        issuerKey: RSA.PublicKey,
        staticData: [UInt8],
        pan: [UInt8],
        today: CivilTime
    ) throws(OfflineAuthenticationFailure) -> RecoveredPublicKey {
        let what = "ICC Public Key Certificate (9F46)"
        let recovered = try recover(certificate, with: issuerKey, format: iccFormat, what: what)
        let n = recovered.count
        let hashInput = Array(recovered[1..<(n - 21)]) + remainder + exponent + staticData
        try checkHash(recovered, over: hashInput, what: what)
        let certifiedPAN = Array(recovered[2..<12])
        let paddedPAN = pan.count <= 10 ? pan + Array(repeating: 0xFF, count: 10 - pan.count) : pan
        guard certifiedPAN == paddedPAN else {
            throw OfflineAuthenticationFailure(
                .invalidCertificate,
                "\(what): the certified PAN is not the card's PAN (5A)"
            )
        }
        let key = try publicKey(
            recovered,
            fieldStart: 21,
            lengthIndex: 19,
            exponentLengthIndex: 20,
            hashAlgorithmIndex: 17,
            remainder: remainder,
            exponent: exponent,
            what: what
        )
        let expiry = Array(recovered[12..<14])
        try checkExpiry(expiry, today: today, what: what)
        return RecoveredPublicKey(
            key: key,
            owner: certifiedPAN,
            expiry: expiry,
            serialNumber: Array(recovered[14..<17])
        )
    }

    // MARK: Steps shared by both certificates

    /// Book 2 §6.3 steps 1–4: the certificate is as long as the key, recovers with header `6A`, trailer `BC` and
    /// the expected format. Returns the recovered data.
    static func recover(_ certificate: [UInt8], with key: RSA.PublicKey, format: UInt8, what: String)
        throws(OfflineAuthenticationFailure) -> [UInt8]
    {
        guard certificate.count == key.byteCount else {
            throw OfflineAuthenticationFailure(
                .invalidCertificate,
                "\(what) has \(certificate.count) bytes; the certifying key has \(key.byteCount)"
            )
        }
        let recovered: [UInt8]
        do {
            recovered = try key.recover(certificate)
        } catch {
            throw OfflineAuthenticationFailure(.invalidCertificate, "\(what) does not recover: \(error)")
        }
        guard recovered.count >= 64, recovered.last == trailer, recovered.first == header else {
            throw OfflineAuthenticationFailure(.invalidCertificate, "\(what) recovers without header 6A and trailer BC")
        }
        guard recovered[1] == format else {
            throw OfflineAuthenticationFailure(
                .invalidCertificate,
                "\(what) has format \([recovered[1]].hexString), expected \([format].hexString)"
            )
        }
        return recovered
    }

    /// Book 2 §6.3 steps 5–6: SHA-1 of the input equals the Hash Result (the 20 bytes before the trailer).
    static func checkHash(_ recovered: [UInt8], over input: [UInt8], what: String) throws(OfflineAuthenticationFailure)
    {
        let n = recovered.count
        guard let digest = try? SHA1.hash(input), digest == Array(recovered[(n - 21)..<(n - 1)]) else {
            throw OfflineAuthenticationFailure(.invalidCertificate, "\(what): the hash result does not match")
        }
    }

    /// Book 2 §6.3 steps 9–11: algorithm indicators, then the key as leftmost digits (padded with `BB`) or leftmost
    /// digits followed by the remainder, and the exponent of the stated length.
    static func publicKey(
        _ recovered: [UInt8],
        fieldStart: Int,
        lengthIndex: Int,
        exponentLengthIndex: Int,
        hashAlgorithmIndex: Int,
        remainder: [UInt8],
        exponent: [UInt8],
        what: String
    ) throws(OfflineAuthenticationFailure) -> RSA.PublicKey {
        guard recovered[hashAlgorithmIndex] == sha1Indicator, recovered[hashAlgorithmIndex + 1] == rsaIndicator else {
            throw OfflineAuthenticationFailure(
                .invalidCertificate,
                "\(what) names an algorithm other than SHA-1 and RSA"
            )
        }
        let n = recovered.count
        let fieldLength = n - 21 - fieldStart
        let keyLength = Int(recovered[lengthIndex])
        let modulus: [UInt8]
        if keyLength <= fieldLength {
            guard remainder.isEmpty, recovered[(fieldStart + keyLength)..<(n - 21)].allSatisfy({ $0 == 0xBB }) else {
                throw OfflineAuthenticationFailure(
                    .invalidCertificate,
                    "\(what): a \(keyLength)-byte key fits the certificate, but the padding is not BB or a remainder was given"
                )
            }
            modulus = Array(recovered[fieldStart..<(fieldStart + keyLength)])
        } else {
            guard remainder.count == keyLength - fieldLength else {
                throw OfflineAuthenticationFailure(
                    .missingData,
                    "\(what): a \(keyLength)-byte key needs a remainder of \(keyLength - fieldLength) bytes, "
                        + "the card gave \(remainder.count)"
                )
            }
            modulus = Array(recovered[fieldStart..<(n - 21)]) + remainder
        }
        guard Int(recovered[exponentLengthIndex]) == exponent.count else {
            throw OfflineAuthenticationFailure(
                .invalidCertificate,
                "\(what) states a \(recovered[exponentLengthIndex])-byte exponent; the card gave \(exponent.count)"
            )
        }
        do {
            return try RSA.PublicKey(modulus: modulus, exponent: exponent)
        } catch {
            throw OfflineAuthenticationFailure(.invalidCertificate, "\(what) certifies no usable RSA key: \(error)")
        }
    }

    /// Book 2 §6.3 step 8: MMYY is valid to the end of that month.
    static func checkExpiry(_ mmyy: [UInt8], today: CivilTime, what: String) throws(OfflineAuthenticationFailure) {
        guard let month = BCD.value(mmyy[0]), let year = BCD.value(mmyy[1]), (1...12).contains(month) else {
            throw OfflineAuthenticationFailure(.invalidCertificate, "\(what) has no valid expiration date MMYY")
        }
        if (2000 + year, month) < (today.year, today.month) {
            throw OfflineAuthenticationFailure(
                .expiredCertificate,
                "\(what) expired at the end of \(mmyy.hexString.prefix(2))/\(mmyy.hexString.suffix(2))"
            )
        }
    }

    /// Book 2 §6.3 step 7: the Issuer Identifier is 3–8 digits followed by `F` padding, and they begin the PAN.
    static func issuerIdentifier(_ identifier: [UInt8], matches pan: [UInt8]) -> Bool {
        let nibbles = identifier.flatMap { [$0 >> 4, $0 & 0x0F] }
        let digits = nibbles.prefix { $0 != 0x0F }
        guard (3...8).contains(digits.count), digits.allSatisfy({ $0 <= 9 }),
            nibbles.dropFirst(digits.count).allSatisfy({ $0 == 0x0F })
        else { return false }
        let panNibbles = pan.flatMap { [$0 >> 4, $0 & 0x0F] }
        return panNibbles.starts(with: digits)
    }
}
