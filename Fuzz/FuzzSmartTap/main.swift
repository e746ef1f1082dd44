import Foundation
import FuzzSupport
import LoyaltyCapability
import ProximaCore
import ProximaCrypto

/// Fixed session keys and session, so the bundle and session checks are reached with any input.
let keys = SmartTapCrypto.SessionKeys(
    encryption: [UInt8](repeating: 0x01, count: 16),
    authentication: [UInt8](repeating: 0x02, count: 32)
)
let session = SmartTapSessionRecord(sessionID: [0x6B, 0x15, 0x9A, 0x80, 0xFC, 0x82, 0x83, 0xFD], sequence: 0)

/// The collector of Google's published sample (key from `NegotiateCryptoCommand.java`, Apache-2.0).
let smartTap: LoyaltySettings.SmartTap = {
    let scalar: [UInt8] = [
        0x82, 0x6d, 0x17, 0xe5, 0x07, 0x67, 0xb1, 0x65, 0xb0, 0xe4, 0xd9, 0xe3, 0x32, 0xf8, 0xd1, 0xd1,
        0xe2, 0x02, 0x24, 0x28, 0x4f, 0xb4, 0xda, 0xf1, 0xe5, 0x0a, 0x03, 0x24, 0x6e, 0x70, 0x79, 0x7d,
    ]
    // A constant known to be a valid scalar; a failure here is a build defect.
    guard let key = try? P256.PrivateKey(rawRepresentation: scalar),
        let collector = try? LoyaltySettings.SmartTap(collectorID: 20_180_608, keyVersion: 1, privateKey: key)
    else { fatalError("the sample key does not load") }
    return collector
}()

/// libFuzzer entry: the Smart Tap parsers (NDEF, SELECT Smart Tap 2, `nrs`, `srs`, the bundle down to its
/// redemption value, zlib) and a whole read against a phone answering fuzzer bytes. Any input must end in a value
/// or a `LoyaltyError` / `ProximaError`, never a trap or a hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    _ = try? SmartTapResponses.ndef(bytes)
    _ = try? SmartTapResponses.selection(bytes)
    _ = try? SmartTapResponses.negotiate(bytes, sent: session)
    _ = try? SmartTapResponses.serviceResponse(bytes, sent: session)
    _ = try? SmartTapResponses.redemptionValue(bytes)
    _ = try? SmartTapResponses.openPass(bytes, keys: keys)
    _ = try? Zlib.inflate(bytes, maximumOutput: 65_536)
    if let bundle = try? SmartTapCrypto.sealBundle(bytes, iv: [UInt8](repeating: 3, count: 12), keys: keys, flags: 0x03)
    {
        _ = try? SmartTapResponses.openPass(bundle, keys: keys)
    }

    let channel = FuzzedChannel(answers: bytes)
    runToCompletion {
        let capability = AppleVASCapability(
            settings: LoyaltySettings(merchants: [], maxCryptogramAge: .seconds(300), smartTap: smartTap),
            smartTapRandomness: SmartTapRandomness(
                bytes: { [UInt8](repeating: 0x33, count: $0) },
                ephemeralKey: { try P256.PrivateKey(rawRepresentation: [UInt8](repeating: 0x11, count: 32)) }
            )
        )
        let request = VASReadRequest(merchants: [VASMerchantRequest(passTypeIdentifier: "20180608")], mode: .vasOnly)
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
        // Bounded work: SELECT OSE, SELECT Smart Tap 2, NEGOTIATE, GET DATA and 32 GET MORE DATA, each with at
        // most 8 GET RESPONSE and a 6Cxx resend.
        guard channel.sent.count <= 36 * 10 else { fatalError("sent \(channel.sent.count) APDUs") }
    }
    return 0
}
