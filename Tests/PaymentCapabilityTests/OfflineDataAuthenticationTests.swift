import EMVCommon
import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// The CA public keys of `Config/keys/ca-public-keys-test.json`.
func testCertificationAuthorities() throws -> CertificationAuthorityKeys {
    try CertificationAuthorityKeys(contentsOf: PackageFiles.configDirectory + "/keys/ca-public-keys-test.json")
}

/// Certificate and signature recovery (EMV Book 2 §6.3–6.6) against vectors made by an independent Python
/// implementation (scripts/make-emv-oda-vectors.py).
@Suite struct OfflineDataAuthenticationTests {
    static let today = CivilTime(year: 2026, month: 3, day: 14)

    func authority() throws -> CertificationAuthorityKey {
        try #require(try testCertificationAuthorities().key(rid: bytes("A000000003"), index: 0xE1))
    }

    func issuerKey(today: CivilTime = Self.today, pan: String = ODAVectors.pan, certificate: [UInt8]? = nil)
        throws -> RecoveredPublicKey
    {
        try PublicKeyCertificate.issuerKey(
            certificate: certificate ?? bytes(ODAVectors.issuerCertificate),
            remainder: bytes(ODAVectors.issuerRemainder),
            exponent: [0x03],
            authority: try authority(),
            pan: bytes(pan),
            today: today
        )
    }

    func iccKey(staticData: String = ODAVectors.staticData, today: CivilTime = Self.today, pan: String = ODAVectors.pan)
        throws -> RecoveredPublicKey
    {
        try PublicKeyCertificate.iccKey(
            certificate: bytes(ODAVectors.iccCertificate),
            remainder: bytes(ODAVectors.iccRemainder),
            exponent: [0x03],
            issuerKey: try issuerKey().key,
            staticData: bytes(staticData),
            pan: bytes(pan),
            today: today
        )
    }

    func failure(_ body: () throws -> Void) -> OfflineAuthenticationFailure.Code? {
        do {
            try body()
            return nil
        } catch let error as OfflineAuthenticationFailure {
            return error.code
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test func rawRecoveryShowsTheCertificateFrame() throws {
        let recovered = try authority().key.recover(bytes(ODAVectors.issuerCertificate))
        #expect(recovered.count == 176)
        #expect(recovered.prefix(2) == [0x6A, 0x02])
        #expect(Array(recovered[2..<6]) == bytes("476173FF"))
        #expect(Array(recovered[6..<8]) == bytes("1229"))
        #expect(recovered.last == 0xBC)
    }

    @Test func recoversTheIssuerKeyWithItsRemainder() throws {
        let issuer = try issuerKey()
        #expect(issuer.key.modulus == bytes(ODAVectors.issuerModulus))
        #expect(issuer.key.exponent == [0x03])
        #expect(issuer.serialNumber == bytes("000001"))
        #expect(issuer.expiry == bytes("1229"))
    }

    @Test func recoversTheICCKeyOverTheStaticData() throws {
        let icc = try iccKey()
        #expect(icc.key.modulus == bytes(ODAVectors.iccModulus))
        #expect(icc.owner == bytes("4761739001010119FFFF"))
        #expect(icc.serialNumber == bytes("000002"))
    }

    @Test func refusesEachBrokenIssuerCertificate() throws {
        var flipped = bytes(ODAVectors.issuerCertificate)
        flipped[40] ^= 0x01
        #expect(failure { _ = try issuerKey(certificate: flipped) } == .invalidCertificate)
        #expect(failure { _ = try issuerKey(certificate: Array(flipped.dropLast())) } == .invalidCertificate)
        // Valid through December 2029, expired from January 2030.
        #expect(failure { _ = try issuerKey(today: CivilTime(year: 2029, month: 12, day: 31)) } == nil)
        #expect(failure { _ = try issuerKey(today: CivilTime(year: 2030, month: 1, day: 1)) } == .expiredCertificate)
        // The Issuer Identifier 476173 must begin the PAN.
        #expect(failure { _ = try issuerKey(pan: "5413330089010012") } == .invalidCertificate)
    }

    @Test func refusesEachBrokenICCCertificate() throws {
        #expect(failure { _ = try iccKey(staticData: ODAVectors.staticData + "00") } == .invalidCertificate)
        #expect(failure { _ = try iccKey(pan: "4761739001010010") } == .invalidCertificate)
        #expect(failure { _ = try iccKey(today: CivilTime(year: 2029, month: 1, day: 1)) } == .expiredCertificate)
    }

    @Test func verifiesFastDDAOverTheTerminalData() throws {
        let icc = try iccKey().key
        func terminalData(_ un: String) -> [UInt8] {
            SignedDynamicData.fastDDATerminalData(
                unpredictableNumber: bytes(un),
                amountAuthorised: bytes(ODAVectors.amountAuthorised),
                currencyCode: bytes(ODAVectors.currencyCode),
                cardAuthenticationData: bytes(ODAVectors.cardAuthenticationData)
            )
        }
        let verified = try SignedDynamicData.verify(
            bytes(ODAVectors.fastDDASignature),
            iccKey: icc,
            terminalDynamicData: terminalData(ODAVectors.unpredictableNumber)
        )
        #expect(verified.iccDynamicNumber == [0x00, 0x01])
        // Another unpredictable number (a replayed signature) does not verify.
        #expect(
            failure {
                _ = try SignedDynamicData.verify(
                    bytes(ODAVectors.fastDDASignature),
                    iccKey: icc,
                    terminalDynamicData: terminalData("12345679")
                )
            } == .invalidSignature
        )
    }

    @Test func verifiesCDAAndItsTransactionDataHash() throws {
        let icc = try iccKey().key
        let verified = try SignedDynamicData.verify(
            bytes(ODAVectors.cdaSignature),
            iccKey: icc,
            terminalDynamicData: bytes(ODAVectors.unpredictableNumber)
        )
        let fields = try #require(verified.combinedFields)
        #expect(fields.cryptogramInformationData == 0x80)
        #expect(fields.applicationCryptogram == bytes(ODAVectors.cdaCryptogram))
        let objects = try TLV.decodeAll(bytes(ODAVectors.generateACResponseObjects))
        let hash = SignedDynamicData.transactionDataHashCode(
            processingOptionsData: bytes(ODAVectors.processingOptionsData),
            cdol1Data: bytes(ODAVectors.cdol1Data),
            responseObjects: objects + [TLV(tag: 0x9F4B, value: bytes(ODAVectors.cdaSignature))]
        )
        #expect(hash == fields.transactionDataHashCode)
    }

    @Test func loadsTheTestCAKeysAndRefusesADamagedOne() throws {
        let keys = try testCertificationAuthorities()
        #expect(keys.keys.count == 6)
        #expect(Set(keys.keys.map(\.rid.hexString)).count == 6)
        #expect(keys.key(rid: bytes("A000000003"), index: 0xE9) == nil)
        let json = try JSONValue.parse(
            """
            {"keys": [{"rid": "A000000003", "index": "E1", "modulus": "\(keys.keys[0].key.modulus.hexString)",
              "exponent": "03", "expiry": "2035-12-31", "checksum": "0000000000000000000000000000000000000000"}]}
            """
        )
        #expect(throws: ProximaError.self) { try CertificationAuthorityKeys(json: json) }
        do {
            _ = try CertificationAuthorityKeys(json: json)
        } catch let error as ProximaError {
            #expect(error.jsonPath == "keys[0].checksum")
        }
    }

    @Test func rsaRefusesUnusableKeysAndSignatures() throws {
        #expect(throws: ProximaError.self) {
            try RSA.PublicKey(modulus: [UInt8](repeating: 0xFE, count: 128), exponent: [3])
        }
        let key = try authority().key
        #expect(throws: ProximaError.self) { try key.recover(key.modulus) }
        #expect(throws: ProximaError.self) { try key.recover([0x01]) }
    }

    /// Hostile bytes: with a public exponent of 1 the bytes are the "recovered" data, so every check after the RSA
    /// step sees them (as FuzzEMV does). Every input ends in a result or an ``OfflineAuthenticationFailure``.
    @Test func recoveryIsTotalOnHostileBytes() throws {
        var random = SplitMix64(seed: 0x0DA)
        let identity = try RSA.PublicKey(modulus: [UInt8](repeating: 0xFF, count: 176), exponent: [0x01])
        let authority = CertificationAuthorityKey(
            rid: bytes("A000000003"),
            index: 0xE1,
            key: identity,
            expiry: CivilTime(year: 2035, month: 12, day: 31)
        )
        var codes: [OfflineAuthenticationFailure.Code: Int] = [:]
        for round in 0..<3000 {
            // Mostly well-framed (6A … BC) so that the later checks are reached.
            var data = (0..<176).map { _ in UInt8.random(in: 0...0xFE, using: &random) }
            if round % 3 != 0 {
                data[0] = 0x6A
                data[1] = [0x02, 0x04, 0x05][round % 3]
                data[175] = 0xBC
            }
            let length = round % 7 == 0 ? Int.random(in: 0...180, using: &random) : 176
            let certificate = Array(data.prefix(length))
            for attempt in 0..<3 {
                do throws(OfflineAuthenticationFailure) {
                    switch attempt {
                    case 0:
                        _ = try PublicKeyCertificate.issuerKey(
                            certificate: certificate,
                            remainder: [],
                            exponent: [0x03],
                            authority: authority,
                            pan: bytes(ODAVectors.pan),
                            today: Self.today
                        )
                    case 1:
                        _ = try PublicKeyCertificate.iccKey(
                            certificate: certificate,
                            remainder: [1, 2],
                            exponent: [0x03],
                            issuerKey: identity,
                            staticData: [],
                            pan: bytes(ODAVectors.pan),
                            today: Self.today
                        )
                    default:
                        _ = try SignedDynamicData.verify(certificate, iccKey: identity, terminalDynamicData: [])
                            .combinedFields
                    }
                } catch {
                    codes[error.code, default: 0] += 1
                }
            }
        }
        // The hash never matches random data, so everything fails, for a reason of the expected kinds.
        #expect(codes.values.reduce(0, +) == 9000)
        #expect(Set(codes.keys).isSubset(of: [.invalidCertificate, .invalidSignature]))
    }
}
