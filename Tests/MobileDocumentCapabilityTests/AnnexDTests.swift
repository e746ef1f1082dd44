import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import MobileDocumentCapability

/// Bytes from hex written in a test; records an issue for a typo instead of trapping.
func bytes(_ hex: String, sourceLocation: SourceLocation = #_sourceLocation) -> [UInt8] {
    guard let value = [UInt8](hex: hex) else {
        Issue.record("test vector is not valid hex", sourceLocation: sourceLocation)
        return []
    }
    return value
}

/// 2021-01-01T00:00:00Z: inside the MSO's and every certificate's validity.
let annexDNow = CivilTime(year: 2021, month: 1, day: 1).unixSeconds

/// The request of Annex D D.4.1.1.
let annexDRequest = DocumentRequest(elements: [
    "org.iso.18013.5.1": [
        "family_name": true, "document_number": true, "driving_privileges": true, "issue_date": true,
        "expiry_date": true, "portrait": false,
    ]
])

/// The Annex D session: its engagement, negotiated-handover transcript and the published reader key.
func annexDSession() throws -> MdocSession {
    let engagement = try DeviceEngagement(encoded: bytes(AnnexD.deviceEngagement))
    let readerKey = try ECPrivateKey(curve: .p256, rawRepresentation: bytes(AnnexD.eReaderKeyScalar))
    let handover: CBORValue = [.byteString(bytes(AnnexD.handoverSelect)), .byteString(bytes(AnnexD.handoverRequest))]
    return try MdocSession(engagement: engagement, handover: handover, readerKey: readerKey)
}

@Suite("ISO/IEC 18013-5 Annex D end to end")
struct AnnexDTests {
    @Test func deviceEngagementCarriesTheEphemeralDeviceKey() throws {
        let engagement = try DeviceEngagement(encoded: bytes(AnnexD.deviceEngagement))
        #expect(engagement.version == "1.0")
        #expect(engagement.deviceKey.curve == .p256)
        let expected = try ECPrivateKey(curve: .p256, rawRepresentation: bytes(AnnexD.eDeviceKeyScalar)).publicKey
        #expect(engagement.deviceKey == expected)
        #expect(engagement.retrievalMethodTypes.isEmpty)  // the NFC form: methods travel in the Handover Select
    }

    @Test func sessionTranscriptAndKeysMatchAnnexD() throws {
        let session = try annexDSession()
        #expect(session.sessionTranscriptBytes == bytes(AnnexD.sessionTranscriptBytes))
        let staticDeviceKey = try ECPrivateKey(curve: .p256, rawRepresentation: bytes(AnnexD.staticDeviceKeyScalar))
        #expect(try session.deviceMacKey(deviceKey: staticDeviceKey.publicKey) == bytes(AnnexD.eMacKey))
    }

    @Test func ourSessionEstablishmentIsAnnexDs() throws {
        // The reader encrypts the Annex D DeviceRequest with counter 1: the ciphertext must be Annex D's.
        var session = try annexDSession()
        let ours = try session.sessionEstablishment(deviceRequest: bytes(AnnexD.deviceRequest))
        let theirs = try CBORDecoder.decode(bytes(AnnexD.sessionEstablishment))
        let decoded = try CBORDecoder.decode(ours)
        #expect(decoded["data"] == theirs["data"])
        #expect(decoded["eReaderKey"] == theirs["eReaderKey"])
    }

    @Test func sessionDataDecryptsToTheDeviceResponseAndVerifies() throws {
        var session = try annexDSession()
        let response = try session.openSessionData(bytes(AnnexD.sessionData))
        #expect(response == bytes(AnnexD.deviceResponse))
        let iaca = try X509Certificate(derRepresentation: bytes(AnnexD.iaca))
        let document = try verifyDeviceResponse(
            response,
            request: annexDRequest,
            sessionTranscript: session.sessionTranscript,
            macKey: { try session.deviceMacKey(deviceKey: $0) },
            trust: try MdocTrust(anchors: [iaca]),
            now: annexDNow
        )
        #expect(document.docType == "org.iso.18013.5.1.mDL")
        #expect(document.issuer == "C=US,CN=utopia iaca")
        #expect(document.documentSigner == "C=US,CN=utopia ds")
        #expect(document.deviceAuthentication == .mac)
        #expect(document.validUntil == CivilTime(year: 2021, month: 10, day: 1, hour: 13, minute: 30, second: 2))
        let elements = try #require(document.elements["org.iso.18013.5.1"])
        #expect(
            elements.keys.sorted() == [
                "document_number", "driving_privileges", "expiry_date", "family_name", "issue_date", "portrait",
            ]
        )
        #expect(elements["family_name"] == "Doe")
        #expect(elements["document_number"] == "123456789")
        #expect(elements["issue_date"]?.fullDateValue?.year == 2019)
        #expect(elements["portrait"]?.bytesValue == bytes(AnnexD.portrait))
        #expect(!document.description.contains("Doe"))
        // A second SessionData with the same counter would be a replay: the counter moved on.
        #expect(throws: MobileDocumentError(.sessionDecryptionFailed, "")) {
            try session.openSessionData(bytes(AnnexD.sessionData))
        }
        #expect(throws: MobileDocumentError(.sessionTerminated, "")) {
            try session.openSessionData(bytes(AnnexD.sessionTermination))
        }
    }

    @Test func onlyRequestedElementsAreReturned() throws {
        let session = try annexDSession()
        let iaca = try X509Certificate(derRepresentation: bytes(AnnexD.iaca))
        let document = try verifyDeviceResponse(
            bytes(AnnexD.deviceResponse),
            request: DocumentRequest(elements: ["org.iso.18013.5.1": ["family_name": false]]),
            sessionTranscript: session.sessionTranscript,
            macKey: { try session.deviceMacKey(deviceKey: $0) },
            trust: try MdocTrust(anchors: [iaca]),
            now: annexDNow
        )
        #expect(document.elements == ["org.iso.18013.5.1": ["family_name": "Doe"]])
    }

    @Test func theReaderAuthOfAnnexDVerifiesOverOurReaderAuthenticationBytes() throws {
        let session = try annexDSession()
        let request = try CBORDecoder.decode(bytes(AnnexD.deviceRequest))
        let docRequest = try #require(request["docRequests"]?.arrayValue?.first)
        let items = try #require(docRequest["itemsRequest"]?.embeddedBytes)
        let readerAuth = try COSESign1(try #require(docRequest["readerAuth"]))
        #expect(readerAuth.encoded() == bytes(AnnexD.readerAuth))
        let certificate = try X509Certificate(derRepresentation: try #require(try readerAuth.certificateChain().first))
        let key = try #require(certificate.publicKey)
        let payload = readerAuthenticationBytes(sessionTranscript: session.sessionTranscript, itemsRequest: items)
        try readerAuth.verify(with: key, detachedPayload: payload)
        let root = try X509Certificate(derRepresentation: bytes(AnnexD.readerRoot))
        try MdocCertificateProfile.validateReaderAuthentication(certificate, anchors: [root], at: annexDNow)
        // Our DeviceRequest asks the same items with the same intent to retain.
        let ours = try deviceRequest(for: [annexDRequest], sessionTranscript: session.sessionTranscript)
        let ourItems = try #require(try CBORDecoder.decode(ours)["docRequests"]?.arrayValue?.first?["itemsRequest"])
        let theirItems = try CBORDecoder.decode(items)
        let decodedOurs = try ourItems.decodeEmbedded()
        #expect(decodedOurs["docType"] == theirItems["docType"])
        #expect(decodedOurs["nameSpaces"]?.encoded == theirItems["nameSpaces"]?.encoded)
    }

    @Test func ourReaderAuthVerifies() throws {
        let session = try annexDSession()
        let key = try ECPrivateKey(generatingOn: .p256)
        let request = try deviceRequest(
            for: [annexDRequest],
            sessionTranscript: session.sessionTranscript,
            readerAuthentication: ReaderAuthenticationKey(privateKey: key, certificateChain: [bytes(AnnexD.reader)])
        )
        let docRequest = try #require(try CBORDecoder.decode(request)["docRequests"]?.arrayValue?.first)
        let readerAuth = try COSESign1(try #require(docRequest["readerAuth"]))
        #expect(try readerAuth.certificateChain() == [bytes(AnnexD.reader)])
        let items = try #require(docRequest["itemsRequest"]?.embeddedBytes)
        try readerAuth.verify(
            with: key.publicKey,
            detachedPayload: readerAuthenticationBytes(
                sessionTranscript: session.sessionTranscript,
                itemsRequest: items
            )
        )
    }
}
