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

    static let containerHex = ""
    static let digestHex = ""
}
