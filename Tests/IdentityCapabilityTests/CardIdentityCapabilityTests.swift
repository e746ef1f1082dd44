import EMVCommon
import IdentityCapability
import ProximaCore
import Testing

@testable import PaymentCapability

@Suite struct CardIdentityCapabilityTests {
    static let selectPPSE = "00A404000E325041592E5359532E444446303100"
    let context = TapContext(lane: "lane-1", reader: "scripted", tapID: 1)

    /// Two applications listed lowest priority first: the capability must sort them.
    /// Two applications listed lowest priority first (labels "TES", "TEV"): the capability must sort them.
    static let twoApplicationFCI =
        "6F3B840E325041592E5359532E4444463031A529BF0C26"
        + "61114F07A0000000041010500354455387010"
        + "261114F07A000000003101050035445568701019000"

    @Test func listsApplicationsByPriority() async throws {
        let fci = try #require([UInt8](hex: Self.twoApplicationFCI))
        let channel = ScriptedChannel(uid: [0x04, 1, 2, 3, 4, 5, 6])
        channel.expect(try #require([UInt8](hex: Self.selectPPSE)), respond: try ResponseAPDU(bytes: fci))
        let identity = try await CardIdentityCapability().run(.init(), on: channel, context: context)
        try channel.finish()
        #expect(identity.uidLength == 7)
        #expect(identity.directoryStatus == .success)
        #expect(identity.applications.map(\.applicationIdentifier.hexString) == ["A0000000031010", "A0000000041010"])
        #expect(identity.applications.map(\.label) == ["TEV", "TES"])
        #expect(identity.applications.map(\.priority) == [1, 2])
    }

    @Test func cardWithoutDirectoryHasNoApplications() async throws {
        let channel = ScriptedChannel()
        channel.expect(Self.selectPPSE, respond: "6A82")
        let identity = try await CardIdentityCapability().run(.init(), on: channel, context: context)
        #expect(identity.directoryStatus == .fileNotFound)
        #expect(identity.applications.isEmpty)
    }

    @Test(arguments: [
        ("6F0584031234569000", "no proprietary template (A5)"),
        ("6F10840E325041592E5359539000", "exceeds"),
        ("7005A503BF0C009000", "FCI: template 6F expected, found 70"),
    ])
    func malformedDirectoryNamesTheStep(responseHex: String, reason: String) async throws {
        let channel = ScriptedChannel()
        channel.expect(Self.selectPPSE, respond: responseHex)
        let error = await #expect(throws: PaymentError.self) {
            try await CardIdentityCapability().run(.init(), on: channel, context: context)
        }
        #expect(error?.code == .cardReadFailed)
        #expect(error?.step == "SELECT PPSE")
        #expect(error?.reason.contains(reason) == true, "\(String(describing: error?.reason))")
    }

    /// EMV Book B §3.3.2.5: a directory entry without a valid ADF Name is skipped, not fatal.
    @Test func entryWithoutAnAIDIsSkipped() async throws {
        let channel = ScriptedChannel()
        channel.expect(Self.selectPPSE, respond: "6F0AA508BF0C0561035001589000")
        let identity = try await CardIdentityCapability().run(.init(), on: channel, context: context)
        #expect(identity.directoryStatus == .success)
        #expect(identity.applications.isEmpty)
    }
}
