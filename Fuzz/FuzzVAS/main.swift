import Foundation
import FuzzSupport
import LoyaltyCapability
import ProximaCore
import ProximaCrypto

/// The merchant of the published trace, keyed with PassKit's public demo key (proxmark3
/// `client/resources/vas.passkit.der`), so the seed `tap-trace` reaches decryption.
let merchant: LoyaltySettings.Merchant = {
    let scalar: [UInt8] = [
        0x3d, 0x15, 0x47, 0xf2, 0x3c, 0xd7, 0x8a, 0xd0, 0x52, 0xa5, 0x88, 0x60, 0xf1, 0x21, 0x9e, 0x8f,
        0xb7, 0x91, 0xec, 0x4d, 0xfe, 0x33, 0x76, 0x9f, 0x5b, 0x9b, 0xfa, 0x62, 0x7a, 0x65, 0x6c, 0xa1,
    ]
    let identifier = "pass.com.passkit.pksamples.nfcdemo"
    // The scalar and identifier are constants known to be valid; a failure here is a build defect.
    guard let key = try? P256.PrivateKey(rawRepresentation: scalar),
        let vasKey = try? LoyaltySettings.VASKey(privateKey: key, path: "fuzz"),
        let hash = try? SHA256.hash(Array(identifier.utf8))
    else { fatalError("the demo key does not load") }
    return LoyaltySettings.Merchant(passTypeIdentifier: identifier, passTypeHash: hash, keys: [vasKey])
}()

/// Fixed Smart Tap session keys: the bundle parser is reached with any key (a wrong HMAC is a clean error).
let smartTapKeys = SmartTapCrypto.SessionKeys(
    encryption: [UInt8](repeating: 0x01, count: 16),
    authentication: [UInt8](repeating: 0x02, count: 32)
)

/// libFuzzer entry: the VAS response parsers, the cryptogram decryption, and a whole VAS read against a phone that
/// answers with fuzzer bytes. Any input must end in an outcome or a `LoyaltyError` / `ProximaError`, never a trap
/// or a hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    _ = try? VASResponses.selectResponse(bytes)
    if let (cryptogram, _) = try? VASResponses.vasData(bytes) {
        _ = try? VASCryptogram.decrypt(cryptogram, merchant: merchant)
    }
    _ = try? VASCryptogram.decrypt(bytes, merchant: merchant)
    _ = try? SmartTapCrypto.openBundle(bytes, keys: smartTapKeys)

    let channel = FuzzedChannel(answers: bytes)
    runToCompletion {
        let capability = AppleVASCapability(
            settings: LoyaltySettings(merchants: [merchant], maxCryptogramAge: .seconds(86_400)),
            now: { Date(timeIntervalSinceReferenceDate: 710_613_358) },
            terminalNonces: { [0, 0, 0, 0] }
        )
        let request = VASReadRequest(
            merchants: [
                VASMerchantRequest(passTypeIdentifier: merchant.passTypeIdentifier),
                VASMerchantRequest(passTypeIdentifier: merchant.passTypeIdentifier),
            ],
            mode: .vasAndPayment
        )
        do {
            _ = try await capability.run(
                request,
                on: channel,
                context: TapContext(lane: "fuzz", reader: "fuzz", tapID: 1)
            )
        } catch is LoyaltyError {
        } catch let error as ProximaError {
            let expected: Set<ProximaError.Code> = [.cardRemoved, .malformedData, .unsupported, .invalidArgument]
            guard expected.contains(error.code) else { fatalError("unexpected error \(error)") }
        } catch {
            fatalError("unexpected error type \(error)")
        }
        // Bounded work: SELECT and two GET VAS DATA, each with at most 8 GET RESPONSE and a 6Cxx resend.
        guard channel.sent.count <= 30 else { fatalError("sent \(channel.sent.count) APDUs") }
    }
    return 0
}
