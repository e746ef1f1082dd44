import Foundation
import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import StoreAndForwardCapability
import Testing

/// The worked example of `Docs/store-and-forward-batch.md` §7: the record body and the bytes before the batch
/// signature are exactly the document's; the document's signatures verify under its TEST key; and the parser reads
/// the document's container back into the same fields.
@Suite struct BatchContainerSpecTests {
    /// The example's TEST store key: the scalar is SHA-256 of "proxima store-and-forward example key" (never a
    /// real store's key).
    static let key: P256.PrivateKey = {
        guard let scalar = try? SHA256.hash(Array("proxima store-and-forward example key".utf8)),
            let key = try? P256.PrivateKey(rawRepresentation: scalar)
        else { fatalError("the example key does not load") }
        return key
    }()

    static let record = StoredReadRecord(
        id: "5f0c2e1a-0000-4000-8000-000000000001",
        lane: "lane-1",
        device: "r1",
        readAtMilliseconds: 1_764_633_600_000,
        kind: .purchase,
        currencyCode: "USD",
        amountMinorUnits: 2999,
        amount: "29.99",
        brand: "Visa",
        lastFourDigits: "0010",
        expirationMonth: 12,
        expirationYear: 2028,
        expirationState: .notExpired,
        effectiveState: .unknown,
        envelopeDigest: (try? SHA256.hash(Array(0..<16))) ?? []
    )

    static let bodyHex =
        "24" + hex(Array("5f0c2e1a-0000-4000-8000-000000000001".utf8)) + "06" + hex(Array("lane-1".utf8)) + "02"
        + hex(Array("r1".utf8)) + "0000019adc5be000" + "00" + "03" + hex(Array("USD".utf8)) + "0000000000000bb7" + "05"
        + hex(Array("29.99".utf8)) + "04" + hex(Array("Visa".utf8)) + "04" + hex(Array("0010".utf8)) + "0c" + "07ec"
        + "00" + "02" + "be45cb2605bf36bebde684841a28f0fd43c69850a3dce5fedba69928ee3a8991"

    @Test func theRecordBodyIsTheDocumentsBytes() throws {
        #expect(hex(Self.record.body) == Self.bodyHex)
        #expect(try StoredReadRecord(body: Self.record.body) == Self.record)
        #expect(hex(Self.record.signedBytes).hasPrefix("50585231"))
    }

    @Test func theDocumentsContainerVerifiesAndParses() throws {
        let container = try BatchContainer.parse(bytes(Self.containerHex))
        try container.verify()
        #expect(container.id == "7d3f5b2a-0000-4000-8000-000000000002")
        #expect(container.readerIdentifier == "proxima-store-001")
        #expect(container.createdAt == 1_764_637_200)
        #expect(container.entries.map(\.record) == [Self.record])
        #expect(container.entries.first?.envelope == Array(0..<16))
        #expect(try X509Certificate(derRepresentation: container.certificate).publicKey?.p256 == Self.key.publicKey)
        #expect(hex(try BatchContainer.digest(bytes(Self.containerHex))) == Self.digestHex)
        // Built again from its parts, the bytes before the signature are the same.
        #expect(hex(container.signedBytes) == String(Self.containerHex.dropLast(128)))
    }

    @Test func printsAFreshExampleWhenAsked() throws {
        guard ProcessInfo.processInfo.environment["PROXIMA_PRINT_BATCH_EXAMPLE"] != nil else { return }
        let certificate = try X509Certificate.selfIssued(
            commonName: "proxima store proxima-store-001",
            privateKey: Self.key,
            serialNumber: [0x01, 0x02, 0x03, 0x04],
            notBefore: 1_764_633_600,
            notAfter: 2_395_785_600
        )
        let body = Self.record.body
        let entry = BatchContainer.Entry(
            record: Self.record,
            body: body,
            envelope: Array(0..<16),
            signature: try Self.key.signature(for: Self.record.signedBytes).rawRepresentation
        )
        let container = try BatchContainer.sign(
            id: "7d3f5b2a-0000-4000-8000-000000000002",
            readerIdentifier: "proxima-store-001",
            createdAt: 1_764_637_200,
            entries: [entry],
            certificate: certificate.derRepresentation,
            key: Self.key
        )
        print("CONTAINER", hex(container.bytes))
        print("DIGEST", hex(try BatchContainer.digest(container.bytes)))
        print("PUBLIC", hex(Self.key.publicKey.x963Representation))
    }

    /// `Docs/store-and-forward-batch.md` §7.
    static let containerHex =
        "50584231012437643366356232612d303030302d343030302d383030302d3030303030303030303030321170726f7869"
        + "6d612d73746f72652d30303100000000692e3a1000000001000000792435663063326531612d303030302d343030302d"
        + "383030302d303030303030303030303031066c616e652d310272310000019adc5be00000035553440000000000000bb7"
        + "0532392e3939045669736104303031300c07ec0002be45cb2605bf36bebde684841a28f0fd43c69850a3dce5fedba699"
        + "28ee3a899100000010000102030405060708090a0b0c0d0e0fd34a8d47cdcd7c25d1372042a57dfbd2c20fe70820da42"
        + "166311c1b92e7056f30e7ffb8ce8ce813e282467cc1e430294c15504169da34dbd9d7c20157650cc17016a3082016630"
        + "82010ca003020102020401020304300a06082a8648ce3d040302302a3128302606035504030c1f70726f78696d612073"
        + "746f72652070726f78696d612d73746f72652d303031301e170d3235313230323030303030305a170d34353132303230"
        + "30303030305a302a3128302606035504030c1f70726f78696d612073746f72652070726f78696d612d73746f72652d30"
        + "30313059301306072a8648ce3d020106082a8648ce3d03010703420004e94df06c8d25bb07767c5f4e607cf84e807535"
        + "6986536d3fa39cca6fac4179351f7e4d001001adfc2fddcdd34dbf8003f46fab2b36505ef88902d6ecec499f0da32030"
        + "1e300e0603551d0f0101ff040403020780300c0603551d130101ff04023000300a06082a8648ce3d0403020348003045"
        + "022100ddad5121bed6b88537e012edd4bad25d64232c4f42e768edc15e47695fe1dcfe022011361098621485b3d91ee9"
        + "2c7f461105c7097326ebbb564308ff9ca4aee21c5377d0ecdc7458a8ceb0bcb12155da4897f58e3f21908d34c292ebe4"
        + "c1ed60ef776ec88ffeefc151dd1392813415f6a1b8f785630456010d91772dbf1fe419eebe"
    static let digestHex = "5cb8e28d4d6457f4ec4a189fd206e99d8bb03f9e82321f21acbd5f860a675265"
}
