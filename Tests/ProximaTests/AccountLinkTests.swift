import Foundation
import Proxima
import ProximaCore
import Testing

@testable import PaymentCapability

/// Account linking: the file in the data directory, written atomically, read back by `isAccountLinked`; and the
/// rule that a read needs a linked account.
@Suite struct AccountLinkTests {
    static func inode(_ path: String) throws -> UInt64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return try #require((attributes[.systemFileNumber] as? NSNumber)?.uint64Value)
    }

    @Test func linkingWritesTheFileAtomicallyAndIsAccountLinkedReadsIt() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // A data directory that does not exist yet is created.
        let data = directory.path + "/state/proxima"
        let manifest = try PaymentHarness.manifest(
            readers: [PaymentHarness.reader("r1", cards: ["pay-visa-qvsdc.json"])],
            dataDirectory: data
        )
        try await PaymentHarness.withKernel(manifest) { kernel in
            let reader = PaymentCardReader(kernel: kernel)
            let token = try PaymentHarness.token()
            let before = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            try await reader.linkAccount(using: token)
            let file = data + "/account-link.json"

            // Exactly the link file: no temporary file left behind, mode 0600.
            #expect(directory.entries("state/proxima") == ["account-link.json"])
            let attributes = try FileManager.default.attributesOfItem(atPath: file)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)

            let json = try JSONValue.parse(Array(try #require(FileManager.default.contents(atPath: file))))
            #expect(json["version"] == .integer(1))
            #expect(json.string("merchantId") == PaymentHarness.merchant)
            #expect(json.string("processor") == PaymentHarness.issuer)
            #expect(json.string("readerIdentifier") == PaymentHarness.readerIdentifier)
            let link = try #require(try await reader.linkedAccount())
            #expect(link.linkedAt >= before && link.linkedAt <= Date())
            #expect(try await reader.isAccountLinked(using: token))

            // Linking the same merchant again leaves the file alone; relinking replaces it by rename (a new inode),
            // never by rewriting it in place.
            let first = try Self.inode(file)
            try await reader.linkAccount(using: token)
            #expect(try Self.inode(file) == first)
            try await reader.relinkAccount(using: try PaymentHarness.token(merchant: "merchant-002"))
            #expect(try Self.inode(file) != first)
            #expect(directory.entries("state/proxima") == ["account-link.json"])
            #expect(try await reader.isAccountLinked(using: try PaymentHarness.token(merchant: "merchant-002")))
            #expect(try await reader.isAccountLinked(using: token) == false)
        }
    }

    @Test func readBeforeLinkingIsAccountNotLinked() async throws {
        try await PaymentHarness.withReader(cards: ["pay-visa-qvsdc.json"]) { reader, _ in
            let token = try PaymentHarness.token()
            let session = try await PaymentCardReaderSession(reader: reader, token: token)
            // Before prepare(), and after a prepare() that failed: a read needs a linked account first.
            let read = await thrownError { try await session.readPaymentCard(PaymentHarness.purchase()) }
            #expect(readerCode(read) == .accountNotLinked)
            let prepared = await thrownError { try await session.prepare() }
            #expect(readerCode(prepared) == .accountNotLinked)
            #expect((prepared as? PaymentCardReaderError)?.reason.contains("linkAccount") == true)
            let viaReader = await thrownError { try await reader.prepare(using: token) }
            #expect(readerCode(viaReader) == .accountNotLinked)

            try await reader.linkAccount(using: token)
            // Linked but not prepared: notReady.
            let unprepared = await thrownError { try await session.readPaymentCard(PaymentHarness.purchase()) }
            #expect(readCode(unprepared) == .notReady)
            try await session.prepare()
            #expect(try await session.readPaymentCard(PaymentHarness.purchase()).outcome == .success)
        }
    }

    @Test func aLinkRemovedAfterPrepareStopsReads() async throws {
        try await PaymentHarness.withReader(cards: ["pay-visa-qvsdc.json"]) { reader, directory in
            let session = try await PaymentHarness.preparedSession(reader)
            try FileManager.default.removeItem(atPath: directory.path + "/account-link.json")
            let read = await thrownError { try await session.readPaymentCard(PaymentHarness.purchase()) }
            #expect(readerCode(read) == .accountNotLinked)
        }
    }

    @Test(arguments: [
        "", "{", "[]",
        #"{"version":2,"merchantId":"m","processor":"p","readerIdentifier":"r","linkedAt":"2026-01-01T00:00:00Z"}"#,
        #"{"version":1,"merchantId":"m","processor":"p","readerIdentifier":"r","linkedAt":"yesterday"}"#,
        #"{"version":1,"merchantId":"m","processor":"p","readerIdentifier":"r","linkedAt":"2026-01-01T00:00:00Z","x":1}"#,
    ])
    func corruptLinkFileIsACheckFailure(_ content: String) async throws {
        try await PaymentHarness.withReader(cards: ["pay-visa-qvsdc.json"]) { reader, directory in
            try Data(content.utf8).write(to: URL(fileURLWithPath: directory.path + "/account-link.json"))
            let error = await thrownError { try await reader.isAccountLinked(using: try PaymentHarness.token()) }
            #expect(readerCode(error) == .accountLinkingCheckFailed)
            #expect((error as? PaymentCardReaderError)?.reason.contains("account-link.json") == true)
        }
    }

    @Test func unwritableDataDirectoryIsALinkingFailure() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // A regular file where the data directory should be.
        let blocked = directory.path + "/not-a-directory"
        try Data("x".utf8).write(to: URL(fileURLWithPath: blocked))
        let manifest = try PaymentHarness.manifest(
            readers: [PaymentHarness.reader("r1", cards: ["pay-visa-qvsdc.json"])],
            dataDirectory: blocked
        )
        try await PaymentHarness.withKernel(manifest) { kernel in
            let reader = PaymentCardReader(kernel: kernel)
            let error = await thrownError { try await reader.linkAccount(using: try PaymentHarness.token()) }
            #expect(readerCode(error) == .accountLinkingFailed)
            #expect(directory.entries() == ["not-a-directory"])
        }
    }
}
