import ProximaCore
import ProximaCrypto

/// The cose-wg example key (kid "11"): fuzzed messages are checked against a real key, so the verifier runs.
private let key = try! ECPublicKey(
    curve: .p256,
    x: [UInt8](hex: "bac5b11cad8f99f9c72b05cf4b9e26d244dc189f745228255a219a86d6a09eff")!,
    y: [UInt8](hex: "20138bf82dc1b6d562be0fa54ab7804a3a64b6d72ccfed6b6fb6ed28bbfc117e")!
)

/// libFuzzer entry: COSE_Sign1, COSE_Mac0 and COSE_Key parsing and verification must never trap, and nothing but
/// a correctly signed message may verify.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    guard let value = try? CBORDecoder.decode(bytes) else { return 0 }
    if let message = try? COSESign1(value) {
        _ = try? message.algorithm()
        _ = try? message.certificateChain().map { try X509Certificate(derRepresentation: $0) }
        _ = try? message.verify(with: key, detachedPayload: [])
        // The encoder sorts map keys (deterministic CBOR), so the unprotected header may come back reordered:
        // what must hold is that the encoding decodes and is stable, with the signed parts unchanged.
        let encoded = message.encoded(tagged: true)
        guard let again = try? COSESign1(encoded: encoded), again.encoded(tagged: true) == encoded,
            again.protectedBytes == message.protectedBytes, again.payload == message.payload,
            again.signature == message.signature
        else {
            fatalError("COSE_Sign1 does not survive re-encoding: \(bytes.hexString)")
        }
    }
    if let mac = try? COSEMac0(value) {
        _ = try? mac.verify(key: [UInt8](repeating: 0, count: 32), detachedPayload: [])
    }
    _ = try? COSEKey.publicKey(from: value)
    return 0
}
