import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import MobileDocumentCapability

/// Replaces the first occurrence of `pattern` in `bytes` with `replacement` (same length), or records an issue.
func replacing(
    _ pattern: [UInt8],
    with replacement: [UInt8],
    in bytes: [UInt8],
    sourceLocation: SourceLocation = #_sourceLocation
) -> [UInt8] {
    guard pattern.count == replacement.count, pattern.count <= bytes.count else { return bytes }
    for start in 0...(bytes.count - pattern.count) where Array(bytes[start..<(start + pattern.count)]) == pattern {
        var out = bytes
        out.replaceSubrange(start..<(start + pattern.count), with: replacement)
        return out
    }
    Issue.record("pattern not found", sourceLocation: sourceLocation)
    return bytes
}

@Suite("DeviceResponse verification: each check fails on its own")
struct VerificationFailureTests {
    let session: MdocSession
    let iaca: X509Certificate

    init() throws {
        session = try annexDSession()
        iaca = try X509Certificate(derRepresentation: bytes(AnnexD.iaca))
    }

    func verify(
        _ response: [UInt8],
        request: DocumentRequest = annexDRequest,
        anchors: [X509Certificate]? = nil,
        now: Int64 = annexDNow,
        skew: Int64 = 300,
        transcript: [UInt8]? = nil
    ) throws -> VerifiedDocument {
        let session = self.session
        return try verifyDeviceResponse(
            response,
            request: request,
            sessionTranscript: transcript ?? session.sessionTranscript,
            macKey: { try session.deviceMacKey(deviceKey: $0) },
            trust: try MdocTrust(anchors: anchors ?? [iaca], clockSkewSeconds: skew),
            now: now
        )
    }

    @Test func aTamperedElementFailsItsDigest() throws {
        // family_name "Doe" → "Dof" inside its IssuerSignedItemBytes.
        let tampered = replacing(Array("Doe".utf8), with: Array("Dof".utf8), in: bytes(AnnexD.deviceResponse))
        let error = try #require(throws: MobileDocumentError.self) { try verify(tampered) }
        #expect(error.code == .digestMismatch)
        #expect(error.reason.contains("family_name"))
        #expect(!error.description.contains("Dof"))
    }

    @Test func anUnknownIACAIsRefused() throws {
        let root = try X509Certificate(derRepresentation: bytes(AnnexD.readerRoot))
        #expect(throws: MobileDocumentError(.issuerUntrusted, "")) {
            try verify(bytes(AnnexD.deviceResponse), anchors: [root])
        }
    }

    @Test func anAlteredMSOFailsTheIssuerSignature() throws {
        let tampered = replacing(
            Array("2021-10-01T13:30:02Z".utf8),
            with: Array("2031-10-01T13:30:02Z".utf8),
            in: bytes(AnnexD.deviceResponse)
        )
        #expect(throws: MobileDocumentError(.issuerSignatureInvalid, "")) { try verify(tampered) }
    }

    @Test func aFlippedDeviceMacFails() throws {
        let tag = bytes(AnnexD.deviceMacTag)
        var bent = tag
        bent[0] ^= 1
        let tampered = replacing(tag, with: bent, in: bytes(AnnexD.deviceResponse))
        #expect(throws: MobileDocumentError(.deviceMacInvalid, "")) { try verify(tampered) }
    }

    @Test func anotherSessionTranscriptFailsTheDeviceMac() throws {
        var transcript = session.sessionTranscript
        transcript[transcript.count - 1] ^= 1
        #expect(throws: MobileDocumentError(.deviceMacInvalid, "")) {
            try verify(bytes(AnnexD.deviceResponse), transcript: transcript)
        }
    }

    @Test func anotherDocTypeIsNotReturned() throws {
        #expect(throws: MobileDocumentError(.documentNotReturned, "")) {
            try verify(
                bytes(AnnexD.deviceResponse),
                request: DocumentRequest(docType: "org.iso.23220.photoid.1", elements: [:])
            )
        }
    }

    @Test func validFromHonoursTheClockSkew() throws {
        // validFrom is 2020-10-01T13:30:02Z; the DS certificate is valid from midnight.
        let early = CivilTime(year: 2020, month: 10, day: 1, hour: 13, minute: 29, second: 0).unixSeconds
        #expect(throws: MobileDocumentError(.msoNotYetValid, "")) {
            try verify(bytes(AnnexD.deviceResponse), now: early, skew: 0)
        }
        _ = try verify(bytes(AnnexD.deviceResponse), now: early, skew: 300)
    }

    @Test func anExpiredCertificateIsUntrusted() throws {
        let late = CivilTime(year: 2021, month: 10, day: 2).unixSeconds
        let error = try #require(throws: MobileDocumentError.self) {
            try verify(bytes(AnnexD.deviceResponse), now: late)
        }
        #expect(error.code == .issuerUntrusted)
        #expect((error.underlying as? X509Error)?.reason.contains("expired") == true)
    }

    @Test func statusAndStructureFailuresAreNamed() throws {
        #expect(throws: MobileDocumentError(.responseStatus, "")) {
            try verify(CBOREncoder.encode(["version": "1.0", "status": 10]))
        }
        #expect(throws: MobileDocumentError(.malformedResponse, "")) {
            try verify(CBOREncoder.encode(["version": "2.0", "status": 0]))
        }
        #expect(throws: MobileDocumentError(.malformedResponse, "")) { try verify([0xA1, 0x01]) }
        let errors = CBOREncoder.encode([
            "version": "1.0", "status": 0, "documentErrors": [["org.iso.18013.5.1.mDL": 0]],
        ])
        let error = try #require(throws: MobileDocumentError.self) { try verify(errors) }
        #expect(error.code == .documentNotReturned)
        #expect(error.reason.contains("org.iso.18013.5.1.mDL: 0"))
    }

    @Test func everyTruncationOfTheResponseIsRefusedCleanly() throws {
        let response = bytes(AnnexD.deviceResponse)
        for length in stride(from: 0, to: response.count, by: 97) {
            #expect(throws: MobileDocumentError.self) { try verify(Array(response[..<length])) }
        }
    }
}
