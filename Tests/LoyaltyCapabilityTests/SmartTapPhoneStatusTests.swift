import ProximaCardEmulator
import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import LoyaltyCapability

/// The status words the virtual Android phone answers, one test each, driven by APDUs the reader's own command
/// builders make: `9400` an unknown instruction, `9402` a command it cannot parse, `9403` GET DATA before a session,
/// `9405` GET MORE DATA with nothing pending, `9407` GET DATA for another collector, `9500` an unknown collector or
/// key version and a signature that does not verify (Google's status-words families, see `SmartTapStatus`).
@Suite struct SmartTapPhoneStatusTests {
    static let collectorID: UInt32 = 20_180_608
    static let selectOSE: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x0A] + Array("OSE.VAS.01".utf8) + [0x00]

    /// A phone with the collector's pass, a fixed device nonce, and SELECT OSE already answered.
    static func selectedPhone(collectorKey: P256.PublicKey? = nil) throws -> (SmartTapPhone, [UInt8]) {
        let nonce = [UInt8](repeating: 0x44, count: 32)
        let device = try P256.PrivateKey()
        var phone = try SmartTapCapabilityTests.android(collectorKey: collectorKey)
        phone.randomness = SmartTapPhone.Randomness(
            deviceNonce: { nonce },
            ephemeralKey: { device },
            iv: { [UInt8](repeating: 7, count: 12) }
        )
        #expect(Array(phone.respond(to: selectOSE).suffix(2)) == [0x90, 0x00])
        return (phone, nonce)
    }

    static let sent = SmartTapSessionRecord(sessionID: [1, 2, 3, 4, 5, 6, 7, 8], sequence: 0)

    /// NEGOTIATE SECURE CHANNEL as the reader builds it, signed by the TEST collector key.
    static func negotiate(deviceNonce: [UInt8], collectorID: UInt32 = collectorID, keyVersion: UInt32 = 1) throws
        -> [UInt8]
    {
        let ephemeral = try P256.PrivateKey()
        let readerNonce = [UInt8](repeating: 0x11, count: 32)
        let signed = SmartTapCrypto.signedData(
            readerNonce: readerNonce,
            deviceNonce: deviceNonce,
            collectorID: collectorID,
            readerEphemeral: ephemeral.publicKey
        )
        return try VASSession.negotiateCommand(
            session: sent,
            readerNonce: readerNonce,
            readerEphemeral: ephemeral.publicKey,
            keyVersion: keyVersion,
            collectorID: collectorID,
            signature: try SmartTapCapabilityTests.collectorKey.signature(for: signed)
        ).bytes
    }

    static func status(_ answer: [UInt8]) -> String { hex(Array(answer.suffix(2))) }

    @Test func anUnknownInstructionIs9400() throws {
        var (phone, _) = try Self.selectedPhone()
        #expect(Self.status(phone.respond(to: [0x90, 0x5F, 0x00, 0x00, 0x00])) == "9400")
    }

    @Test func aNegotiationItCannotParseIs9402() throws {
        var (phone, _) = try Self.selectedPhone()
        let garbage = try CommandAPDU(cla: 0x90, ins: 0x53, p1: 0, p2: 0, data: [0xD1, 0x01], expectedLength: 256)
        #expect(Self.status(phone.respond(to: garbage.bytes)) == "9402")
    }

    @Test func getDataBeforeASessionIs9403() throws {
        var (phone, _) = try Self.selectedPhone()
        let command = try VASSession.getDataCommand(session: Self.sent, collectorID: Self.collectorID, mode: .vasOnly)
        #expect(Self.status(phone.respond(to: command.bytes)) == "9403")
    }

    @Test func getMoreDataWithNothingPendingIs9405() throws {
        var (phone, _) = try Self.selectedPhone()
        #expect(Self.status(phone.respond(to: try VASSession.getMoreDataCommand().bytes)) == "9405")
    }

    @Test func getDataForAnotherCollectorIs9407() throws {
        var (phone, nonce) = try Self.selectedPhone()
        let answer = phone.respond(to: try Self.negotiate(deviceNonce: nonce))
        #expect(Self.status(answer) == "9000")
        let (session, _) = try VASSession.parseNegotiateResponse(
            Array(answer.dropLast(2)),
            sent: Self.sent,
            step: "test"
        )
        let command = try VASSession.getDataCommand(session: session, collectorID: 13_380_028, mode: .vasOnly)
        #expect(Self.status(phone.respond(to: command.bytes)) == "9407")
    }

    @Test(arguments: [(UInt32(13_380_028), UInt32(1)), (UInt32(20_180_608), UInt32(2))])
    func anUnknownCollectorOrKeyVersionIs9500(_ collector: UInt32, _ version: UInt32) throws {
        var (phone, nonce) = try Self.selectedPhone()
        let command = try Self.negotiate(deviceNonce: nonce, collectorID: collector, keyVersion: version)
        #expect(Self.status(phone.respond(to: command)) == "9500")
    }

    @Test func aSignatureThatDoesNotVerifyIs9500() throws {
        var (phone, nonce) = try Self.selectedPhone(collectorKey: try TestKeys.merchantKey.publicKey)
        #expect(Self.status(phone.respond(to: try Self.negotiate(deviceNonce: nonce))) == "9500")
    }

    @Test func theRightCollectorAndSignatureNegotiate() throws {
        var (phone, nonce) = try Self.selectedPhone()
        #expect(Self.status(phone.respond(to: try Self.negotiate(deviceNonce: nonce))) == "9000")
    }
}
