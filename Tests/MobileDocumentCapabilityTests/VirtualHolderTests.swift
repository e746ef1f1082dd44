import Foundation
import ProximaCardEmulator
import ProximaCore
import ProximaCrypto
import Testing

@testable import MobileDocumentCapability

/// `Config/keys` of this package, found from this file's path.
let keysDirectory: String = {
    var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    while directory.path != "/" {
        if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
            return directory.appendingPathComponent("Config/keys").path
        }
        directory.deleteLastPathComponent()
    }
    return "Config/keys"
}()

/// 2026-06-01: inside the TEST credential's validity.
let holderNow = CivilTime(year: 2026, month: 6, day: 1).unixSeconds

let ageRequest = DocumentRequest(elements: [
    "org.iso.18013.5.1": ["family_name": false, "given_name": false, "age_over_21": false, "portrait": false]
])

func testTrust() throws -> MdocTrust {
    let text = try String(contentsOfFile: keysDirectory + "/mdl-iaca-test.pem", encoding: .utf8)
    return try MdocTrust(anchors: try X509Certificate.certificates(pemRepresentation: text))
}

@Suite("readDocument against the virtual mDL holder (in-process, short APDUs)")
struct VirtualHolderTests {
    let credential: MobileDocumentHolder.Credential
    let trust: MdocTrust

    init() throws {
        credential = try MobileDocumentHolder.Credential.test(keysIn: keysDirectory)
        trust = try testTrust()
    }

    func read(_ holder: MobileDocumentHolder, now: Int64 = holderNow) async throws -> (
        VerifiedDocument, InProcessCardChannel
    ) {
        let channel = InProcessCardChannel(card: holder)
        let document = try await readDocument(ageRequest, on: channel, trust: trust, clock: { now })
        return (document, channel)
    }

    @Test func aGoodHolderIsVerifiedByMAC() async throws {
        let (document, channel) = try await read(MobileDocumentHolder(credential: credential))
        #expect(document.docType == "org.iso.18013.5.1.mDL")
        #expect(document.issuer == "CN=Proxima TEST IACA,C=UT")
        #expect(document.deviceAuthentication == .mac)
        let elements = try #require(document.elements["org.iso.18013.5.1"])
        #expect(elements.keys.sorted() == ["age_over_21", "family_name", "given_name", "portrait"])
        #expect(elements["age_over_21"] == true)
        #expect(elements["given_name"] == "Erika")
        #expect(elements["portrait"]?.bytesValue == [0xFF, 0xD8, 0xFF, 0xD9])
        // Engagement (6 APDUs), SELECT, the chained SessionEstablishment, GET RESPONSEs, termination.
        let instructions = channel.commands.map { $0[1] }
        #expect(instructions.prefix(7) == [0xA4, 0xA4, 0xB0, 0xA4, 0xB0, 0xB0, 0xA4])
        #expect(instructions.filter { $0 == 0xC3 }.count >= 2)  // a short reader chains the ENVELOPE
        #expect(instructions.contains(0xC0))  // and collects the answer with GET RESPONSE
        #expect(channel.commands.allSatisfy { $0.count <= 261 })
        #expect(
            channel.commands.last.map { Array($0.suffix(12)) } == [0x53, 0x09] + Array(MdocSession.termination) + [0x00]
        )
    }

    @Test func aGoodHolderIsVerifiedBySignature() async throws {
        var bySignature = credential
        bySignature.authenticatesByMAC = false
        let (document, _) = try await read(MobileDocumentHolder(credential: bySignature))
        #expect(document.deviceAuthentication == .signature)
    }

    @Test(
        "each tamper switch is refused for its own reason",
        arguments: [
            (MobileDocumentHolder.Tamper.tamperedElement, MobileDocumentError.Code.digestMismatch),
            (.expiredMSO, .msoExpired),
            (.unknownIACA, .issuerUntrusted),
            (.wrongDocType, .docTypeMismatch),
            (.badDeviceMAC, .deviceMacInvalid),
            (.badDeviceSignature, .deviceSignatureInvalid),
        ]
    )
    func tamper(_ tamper: MobileDocumentHolder.Tamper, _ code: MobileDocumentError.Code) async throws {
        let error = try await #require(throws: MobileDocumentError.self) {
            _ = try await read(MobileDocumentHolder(credential: credential, tamper: tamper))
        }
        #expect(error.code == code, "\(error)")
        #expect(!error.description.contains("Mustermann"))
        #expect(!error.description.contains("Erika"))
    }

    @Test func aHolderMuteAfterEngagementFailsAtTheTransferSelect() async throws {
        let channel = InProcessCardChannel(
            card: MobileDocumentHolder(credential: credential, tamper: .muteAfterEngagement)
        )
        let error = await #expect(throws: ProximaError.self) {
            _ = try await readDocument(ageRequest, on: channel, trust: trust, clock: { holderNow })
        }
        // In process a mute card gives a response of no bytes; a live transport reports cardTimeout instead,
        // which the capability maps to holderSilent (NFCTests.errorStatusesAndSilenceAreNamed).
        #expect(error?.code == .malformedData)
        #expect(channel.commands.count == 7)
    }

    @Test func anExpiredDocumentSignerIsUntrustedAfterFiveYears() async throws {
        let later = CivilTime(year: 2030, month: 1, day: 1).unixSeconds
        let error = try await #require(throws: MobileDocumentError.self) {
            _ = try await read(MobileDocumentHolder(credential: credential), now: later)
        }
        #expect(error.code == .issuerUntrusted)
    }

    /// The trust remembers a validated path only inside the window where all its certificates are valid: the same
    /// trust that verified a read refuses the same signer after it expired and before it was valid.
    @Test func aRememberedPathIsStillCheckedForValidity() async throws {
        let holder = MobileDocumentHolder(credential: credential)
        _ = try await read(holder)
        _ = try await read(holder)  // from the remembered path
        for time in [CivilTime(year: 2030, month: 1, day: 1), CivilTime(year: 2020, month: 1, day: 1)] {
            let error = try await #require(throws: MobileDocumentError.self) {
                _ = try await read(holder, now: time.unixSeconds)
            }
            #expect(error.code == .issuerUntrusted, "\(time)")
        }
    }
}
