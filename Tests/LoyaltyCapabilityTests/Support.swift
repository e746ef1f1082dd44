import Foundation
import ProximaCardEmulator
import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import LoyaltyCapability

/// Files of this target's `Vectors/` (sources and licences in its README.md).
enum Vectors {
    static func text(_ name: String) throws -> String {
        let url = try #require(
            Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Vectors"),
            "no Vectors/\(name) in the test bundle"
        )
        return try String(contentsOf: url, encoding: .utf8)
    }
}

/// The TEST keys of `Config/keys` and settings built from them.
enum TestKeys {
    static let keysDirectory = PackageFiles.configDirectory + "/keys"

    static func privateKey(_ file: String) throws -> P256.PrivateKey {
        try P256.PrivateKey(pemRepresentation: String(contentsOfFile: keysDirectory + "/" + file, encoding: .utf8))
    }

    static var merchantKey: P256.PrivateKey { get throws { try privateKey("vas-test-private.pem") } }
    static var rotatedKey: P256.PrivateKey { get throws { try privateKey("vas-test-rotated-private.pem") } }

    static func merchant(_ passTypeIdentifier: String, keys: [P256.PrivateKey]) throws -> LoyaltySettings.Merchant {
        LoyaltySettings.Merchant(
            passTypeIdentifier: passTypeIdentifier,
            passTypeHash: try SHA256.hash(Array(passTypeIdentifier.utf8)),
            keys: try keys.map { try LoyaltySettings.VASKey(privateKey: $0, path: "test") }
        )
    }

    /// `pass.com.example.loyalty` (rotated key first, so the key id must pick) and `pass.com.example.coffee`.
    static func settings(maximumAge: Duration = .seconds(300)) throws -> LoyaltySettings {
        LoyaltySettings(
            merchants: [
                try merchant("pass.com.example.loyalty", keys: [try rotatedKey, try merchantKey]),
                try merchant("pass.com.example.coffee", keys: [try merchantKey]),
            ],
            maxCryptogramAge: maximumAge
        )
    }
}

/// A fixed clock for phone and reader.
let fixedNow = Date(timeIntervalSinceReferenceDate: 816_000_000)

let tapContext = TapContext(lane: "lane-1", reader: "test/phone", tapID: 1)

/// Runs the VAS capability for `merchants` against `card` in process.
func readVAS(
    _ card: any VirtualCard,
    merchants: [String] = ["pass.com.example.loyalty"],
    mode: VASMode = .vasOnly,
    settings: LoyaltySettings? = nil
) async throws -> (VASOutcome, InProcessCardChannel) {
    let channel = InProcessCardChannel(card: card, reader: "test/phone")
    let capability = AppleVASCapability(
        settings: try settings ?? TestKeys.settings(),
        now: { fixedNow },
        terminalNonces: { [0xA1, 0xA2, 0xA3, 0xA4] }
    )
    let outcome = try await capability.run(
        VASReadRequest(merchants: merchants.map { VASMerchantRequest(passTypeIdentifier: $0) }, mode: mode),
        on: channel,
        context: tapContext
    )
    return (outcome, channel)
}

func phone(_ passes: [VASPhone.Pass], paymentCard: (any VirtualCard)? = nil) -> VASPhone {
    VASPhone(name: "test phone", passes: passes, paymentCard: paymentCard, now: { fixedNow })
}

func pass(
    _ passTypeIdentifier: String = "pass.com.example.loyalty",
    message: String = "LOYAL-42",
    status: StatusWord? = nil,
    offset: Int64 = 0,
    keyID: [UInt8]? = nil,
    alterTag: Bool = false
) throws -> VASPhone.Pass {
    VASPhone.Pass(
        passTypeIdentifier: passTypeIdentifier,
        merchantKey: try TestKeys.merchantKey.publicKey,
        message: Array(message.utf8),
        statusWord: status,
        timestampOffsetSeconds: offset,
        keyIDOverride: keyID,
        alterTag: alterTag
    )
}

/// The `LoyaltyError` `body` throws, or a recorded issue.
func loyaltyError(
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> LoyaltyError? {
    do {
        try await body()
        Issue.record("expected a LoyaltyError, nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as LoyaltyError {
        return error
    } catch {
        Issue.record("expected a LoyaltyError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
