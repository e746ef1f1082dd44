import EMVCommon
import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// `capabilities.payment.terminal`, `applications`, `preferredAIDs`, `caPublicKeys` and `readerKey`: read as
/// issue 8 writes them, defaults, and every refusal naming its JSON path.
@Suite struct TerminalSettingsTests {
    static let base =
        #""processorPublicKey": "keys/psp-test-public.pem", "tokenIssuer": "https://psp.example.test", "readerIdentifier": "proxima-test-001""#

    /// The issue's configuration, verbatim apart from the "…".
    static let issueBlock = """
        { \(base),
          "terminal": { "countryCode": 250, "type": "22", "capabilities": "E0F8C8",
                        "additionalCapabilities": "F000F0A001", "merchantCategoryCode": "5411" },
          "applications": [
            { "aid": "A0000000031010", "kernel": 3, "partialSelection": true,
              "limits": { "EUR": { "contactlessTransaction": "50.00", "cvmRequired": "50.00", "floor": "0.00" } },
              "ttq": "36004000" },
            { "aid": "A0000000421010", "kernel": 3, "label": "CB" },
            { "aid": "A0000000041010", "kernel": 2 }
          ],
          "preferredAIDs": ["A0000000421010"],
          "caPublicKeys": "keys/ca-public-keys-test.json" }
        """

    static func settings(_ block: String) throws -> PaymentSettings {
        guard case .object(let members) = try JSONValue.parse(Array(block.utf8)) else {
            throw ProximaError(.invalidArgument, "not an object")
        }
        return try PaymentSettings(
            json: .object(members),
            path: "capabilities.payment",
            baseDirectory: Package.configDirectory
        )
    }

    @Test func issueConfigurationIsRead() throws {
        let settings = try Self.settings(Self.issueBlock)
        let terminal = settings.terminal
        #expect(terminal.countryCode == 250)
        #expect(terminal.terminalType == 0x22)
        #expect(terminal.terminalCapabilities == bytes("E0F8C8"))
        #expect(terminal.additionalTerminalCapabilities == bytes("F000F0A001"))
        #expect(terminal.merchantCategoryCode == 5411)
        #expect(terminal.supportedApplications.count == 3)
        let visa = terminal.supportedApplications[0]
        #expect(visa.identifier == bytes("A0000000031010"))
        #expect(visa.kernel == .visa)
        #expect(visa.partialSelection)
        #expect(visa.limits[978] == ReaderLimits(contactlessTransaction: 5000, cvmRequired: 5000, floor: 0))
        #expect(visa.terminalTransactionQualifiers == bytes("36004000"))
        #expect(terminal.supportedApplications[1].label == "CB")
        #expect(terminal.supportedApplications[1].limits.isEmpty)
        #expect(terminal.supportedApplications[2].kernel == .mastercard)
        #expect(terminal.preferredApplications == [bytes("A0000000421010")])
        #expect(terminal.caPublicKeysPaths == [Package.configDirectory + "/keys/ca-public-keys-test.json"])
    }

    @Test func withoutApplicationsEveryImplementedKernelRunsOnItsSchemesAIDs() throws {
        let settings = try Self.settings("{ \(Self.base) }")
        let applications = settings.terminal.supportedApplications
        #expect(Set(applications.map(\.kernel)) == Set(KernelImplementation.implementedKernels))
        #expect(applications.contains { $0.kernel == .visa && $0.matches(bytes("A0000000031010")) })
        #expect(applications.contains { $0.kernel == .mastercard && $0.matches(bytes("A0000000043060")) })
        #expect(settings.terminal.preferredApplications.isEmpty)
        #expect(settings.terminal.caPublicKeysPaths.isEmpty)
        #expect(settings.readerKeyPath == nil)
    }

    /// A lab reader: the schemes' published TEST CA keys for lab test cards next to the virtual cards' TEST keys.
    @Test func severalCAKeyFilesAreMerged() throws {
        let settings = try Self.settings(
            #"{ \#(Self.base), "caPublicKeys": ["keys/ca-public-keys-test.json", "keys/ca-public-keys-scheme-test.json"] }"#
        )
        #expect(
            settings.terminal.caPublicKeysPaths == [
                Package.configDirectory + "/keys/ca-public-keys-test.json",
                Package.configDirectory + "/keys/ca-public-keys-scheme-test.json",
            ]
        )
        #expect(settings.certificationAuthorities.keys.count == 6 + 26)
        #expect(settings.certificationAuthorities.key(rid: bytes("A000000004"), index: 0xE1) != nil)
        #expect(settings.certificationAuthorities.key(rid: bytes("A000000004"), index: 0xF1) != nil)
    }

    struct Broken: Sendable, CustomTestStringConvertible {
        var name: String
        var members: String
        var path: String
        var message: String
        var testDescription: String { name }
    }

    @Test func terminalActionCodesAreReadAndDefaultToTheConservativeOnes() throws {
        let settings = try Self.settings(
            """
            { \(Self.base), "applications": [
                { "aid": "A0000000041010", "kernel": 2,
                  "terminalActionCodes": { "denial": "0000000000", "online": "F45084800C" } },
                { "aid": "A000000025", "kernel": 4 } ] }
            """
        )
        let mastercard = settings.terminal.supportedApplications[0].actionCodes
        #expect(mastercard.denial == bytes("0000000000"))
        #expect(mastercard.online == bytes("F45084800C"))
        #expect(mastercard.defaultAction == bytes("FFFFFFFFFF"))
        #expect(settings.terminal.supportedApplications[1].actionCodes == .conservative)
    }

    static let broken: [Broken] = [
        .init(
            name: "short terminal action code",
            members:
                #""applications": [ { "aid": "A0000000041010", "kernel": 2, "terminalActionCodes": { "online": "F450" } } ]"#,
            path: "capabilities.payment.applications[0].terminalActionCodes.online",
            message: "Terminal Action Code"
        ),
        .init(
            name: "unknown terminal action code",
            members:
                #""applications": [ { "aid": "A0000000041010", "kernel": 2, "terminalActionCodes": { "offline": "0000000000" } } ]"#,
            path: "capabilities.payment.applications[0].terminalActionCodes.offline",
            message: "unknown member"
        ),
        .init(
            name: "comma in a limit",
            members:
                #""applications": [ { "aid": "A0000000031010", "kernel": 3, "limits": { "EUR": { "cvmRequired": "1,50" } } } ]"#,
            path: "capabilities.payment.applications[0].limits.EUR.cvmRequired",
            message: "use a dot as the decimal separator"
        ),
        .init(
            name: "number instead of string",
            members:
                #""applications": [ { "aid": "A0000000031010", "kernel": 3, "limits": { "EUR": { "floor": 0 } } } ]"#,
            path: "capabilities.payment.applications[0].limits.EUR.floor",
            message: "expected a string"
        ),
        .init(
            name: "yen with decimals",
            members:
                #""applications": [ { "aid": "A0000000031010", "kernel": 3, "limits": { "JPY": { "floor": "1.0" } } } ]"#,
            path: "capabilities.payment.applications[0].limits.JPY.floor",
            message: "JPY has no minor unit"
        ),
        .init(
            name: "unknown currency",
            members: #""applications": [ { "aid": "A0000000031010", "kernel": 3, "limits": { "EUX": {} } } ]"#,
            path: "capabilities.payment.applications[0].limits.EUX",
            message: "not an active ISO 4217"
        ),
        .init(
            name: "unknown limit",
            members:
                #""applications": [ { "aid": "A0000000031010", "kernel": 3, "limits": { "EUR": { "cvm": "1.00" } } } ]"#,
            path: "capabilities.payment.applications[0].limits.EUR.cvm",
            message: "unknown member"
        ),
        .init(
            name: "short AID",
            members: #""applications": [ { "aid": "A000", "kernel": 3 } ]"#,
            path: "capabilities.payment.applications[0].aid",
            message: "is not an AID"
        ),
        .init(
            name: "odd hex",
            members: #""applications": [ { "aid": "A00000000310101", "kernel": 3 } ]"#,
            path: "capabilities.payment.applications[0].aid",
            message: "is not an AID"
        ),
        .init(
            name: "kernel not implemented",
            members:
                #""applications": [ { "aid": "A0000000031010", "kernel": 3 }, { "aid": "A000000025", "kernel": 99 } ]"#,
            path: "capabilities.payment.applications[1].kernel",
            message: "not implemented in this build"
        ),
        .init(
            name: "duplicate combination",
            members:
                #""applications": [ { "aid": "A0000000031010", "kernel": 3 }, { "aid": "A0000000031010", "kernel": 3 } ]"#,
            path: "capabilities.payment.applications[1]",
            message: "is already capabilities.payment.applications[0]"
        ),
        .init(
            name: "empty list",
            members: #""applications": []"#,
            path: "capabilities.payment.applications",
            message: "leave \"applications\" out"
        ),
        .init(
            name: "short TTQ",
            members: #""applications": [ { "aid": "A0000000031010", "kernel": 3, "ttq": "3600" } ]"#,
            path: "capabilities.payment.applications[0].ttq",
            message: "expected 4 bytes"
        ),
        .init(
            name: "unknown application member",
            members: #""applications": [ { "aid": "A0000000031010", "kernel": 3, "priority": 1 } ]"#,
            path: "capabilities.payment.applications[0].priority",
            message: "unknown member"
        ),
        .init(
            name: "terminal type",
            members: #""terminal": { "type": "99" }"#,
            path: "capabilities.payment.terminal.type",
            message: "Book 4 Annex A1"
        ),
        .init(
            name: "terminal capabilities length",
            members: #""terminal": { "capabilities": "E0F8" }"#,
            path: "capabilities.payment.terminal.capabilities",
            message: "expected 3 bytes"
        ),
        .init(
            name: "preferred AID twice",
            members: #""preferredAIDs": ["A0000000421010", "A0000000421010"]"#,
            path: "capabilities.payment.preferredAIDs[1]",
            message: "listed twice"
        ),
        .init(
            name: "no CA key file",
            members: #""caPublicKeys": []"#,
            path: "capabilities.payment.caPublicKeys",
            message: "expected at least one path"
        ),
        .init(
            name: "CA key file not a path",
            members: #""caPublicKeys": ["keys/ca-public-keys-test.json", 7]"#,
            path: "capabilities.payment.caPublicKeys[1]",
            message: "expected a string"
        ),
        .init(
            name: "CA key file twice",
            members: #""caPublicKeys": ["keys/ca-public-keys-test.json", "keys/ca-public-keys-test.json"]"#,
            path: "capabilities.payment.caPublicKeys[1]",
            message: "is listed twice"
        ),
        .init(
            name: "CA key in two files",
            members: #""caPublicKeys": ["keys/ca-public-keys-test.json", "keys/../keys/ca-public-keys-test.json"]"#,
            path: "capabilities.payment.caPublicKeys[1]",
            message: "RID A000000003 index E1 is also in"
        ),
        .init(
            name: "CA key file missing",
            members: #""caPublicKeys": ["keys/ca-public-keys-scheme-test.json", "keys/no-such-file.json"]"#,
            path: "capabilities.payment.caPublicKeys[1]",
            message: "cannot read"
        ),
        .init(
            name: "CA key file an object",
            members: #""caPublicKeys": { "file": "keys/ca-public-keys-test.json" }"#,
            path: "capabilities.payment.caPublicKeys",
            message: "expected a path or an array of paths"
        ),
        .init(
            name: "preferred AID not hex",
            members: #""preferredAIDs": ["CB"]"#,
            path: "capabilities.payment.preferredAIDs[0]",
            message: "is not an AID"
        ),
    ]

    @Test(arguments: broken)
    func brokenSettingsNameTheirPath(_ test: Broken) {
        do {
            _ = try Self.settings("{ \(Self.base), \(test.members) }")
            Issue.record("accepted")
        } catch let error as ProximaError {
            #expect(error.code == .invalidManifest)
            #expect(error.jsonPath == test.path, "\(error.pathAndReason)")
            #expect(error.reason.contains(test.message), "\(error.pathAndReason)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
