import ProximaCore

/// Self-issued X.509 v3 certificates for a P-256 key (RFC 5280 §4.1), as a reader's store key needs: DER written
/// here, signed with ECDSA-with-SHA256 by the key itself, then read back by OpenSSL so what is returned is a
/// certificate OpenSSL accepts.
extension X509Certificate {
    /// A certificate for `privateKey`'s public key, issued by itself: subject and issuer `CN=commonName`, key usage
    /// `digitalSignature` (critical), basic constraints `cA FALSE` (critical).
    ///
    /// - Parameters:
    ///   - commonName: 1–64 printable characters (UTF8String).
    ///   - privateKey: The key that is certified and signs.
    ///   - serialNumber: A positive serial, at most 20 bytes big-endian (RFC 5280 §4.1.2.2).
    ///   - notBefore: Seconds since 1970 (UTC), from 1950 to 2049 (UTCTime).
    ///   - notAfter: Seconds since 1970 (UTC), after `notBefore`, at most 2049.
    /// - Throws: `ProximaError.invalidArgument` for a field out of range; ``CryptoError`` if signing fails.
    public static func selfIssued(
        commonName: String,
        privateKey: P256.PrivateKey,
        serialNumber: [UInt8],
        notBefore: Int64,
        notAfter: Int64
    ) throws -> X509Certificate {
        guard (1...64).contains(commonName.count) else {
            throw ProximaError(.invalidArgument, "a certificate common name has 1 to 64 characters")
        }
        let serial = Array(serialNumber.drop { $0 == 0 })
        guard (1...20).contains(serial.count) else {
            throw ProximaError(.invalidArgument, "a certificate serial is 1 to 20 bytes and not zero")
        }
        // UTCTime covers 1950-01-01 to 2049-12-31.
        let utcRange: ClosedRange<Int64> = -631_152_000...2_524_607_999
        guard utcRange.contains(notBefore), utcRange.contains(notAfter), notBefore < notAfter else {
            throw ProximaError(.invalidArgument, "certificate validity must lie in 1950…2049 and not be empty")
        }
        let ecdsaWithSHA256 = DER.sequence(DER.objectIdentifier([0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02]))
        let name = DER.sequence(
            DER.set(
                DER.sequence(
                    DER.objectIdentifier([0x55, 0x04, 0x03]) + DER.element(0x0C, Array(commonName.utf8))
                )
            )
        )
        let keyUsage = DER.sequence(
            DER.objectIdentifier([0x55, 0x1D, 0x0F]) + DER.element(0x01, [0xFF])
                + DER.element(0x04, DER.element(0x03, [0x07, 0x80]))
        )
        let basicConstraints = DER.sequence(
            DER.objectIdentifier([0x55, 0x1D, 0x13]) + DER.element(0x01, [0xFF]) + DER.element(0x04, DER.sequence([]))
        )
        let tbs = DER.sequence(
            DER.element(0xA0, DER.element(0x02, [0x02]))
                + DER.element(0x02, (serial[0] & 0x80 != 0 ? [0] : []) + serial)
                + ecdsaWithSHA256
                + name
                + DER.sequence(DER.utcTime(notBefore) + DER.utcTime(notAfter))
                + name
                + privateKey.publicKey.derRepresentation
                + DER.element(0xA3, DER.sequence(keyUsage + basicConstraints))
        )
        let signature = try privateKey.signature(for: tbs).derRepresentation
        let certificate = DER.sequence(tbs + ecdsaWithSHA256 + DER.element(0x03, [0] + signature))
        return try X509Certificate(derRepresentation: certificate)
    }
}

/// The few DER encodings a certificate needs (X.690 §8, §10).
private enum DER {
    static func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag] + length(content.count) + content }
    static func sequence(_ content: [UInt8]) -> [UInt8] { element(0x30, content) }
    static func set(_ content: [UInt8]) -> [UInt8] { element(0x31, content) }
    static func objectIdentifier(_ encoded: [UInt8]) -> [UInt8] { element(0x06, encoded) }

    static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    /// `YYMMDDHHMMSSZ` for seconds since 1970 in 1950…2049 (civil-from-days, H. Hinnant's algorithm).
    static func utcTime(_ seconds: Int64) -> [UInt8] {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let fields = [year % 100, month, day, secondOfDay / 3600, secondOfDay / 60 % 60, secondOfDay % 60]
        let text = fields.map { $0 < 10 ? "0\($0)" : "\($0)" }.joined() + "Z"
        return element(0x17, Array(text.utf8))
    }
}
