import Foundation
import ProximaCore
import ProximaCrypto
import StoreAndForwardCapability

/// A processor key for the deletion-token parser (its signature check fails cleanly on fuzzer tokens).
let verifier: DeletionTokenVerifier? = {
    guard let key = try? P256.PrivateKey(rawRepresentation: [UInt8](repeating: 0x11, count: 32)) else { return nil }
    return DeletionTokenVerifier(
        processorKey: key.publicKey,
        issuer: "https://psp.example.test",
        readerIdentifier: "fuzz",
        now: { Date(timeIntervalSince1970: 1_700_000_000) }
    )
}()

/// libFuzzer entry: the batch container and record parsers (outside bytes a processor receives), their signature
/// verification, and the deletion-token parser (outside text the store receives). Any input must end in a value or
/// a `BatchContainerError` / `StoreAndForwardError`, never a trap or a hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let container = try? BatchContainer.parse(bytes) {
        _ = try? container.verify()
        // A parsed container re-serializes to the same bytes: the format has one encoding.
        precondition(container.bytes == bytes, "a parsed batch container does not re-encode to its bytes")
    }
    _ = try? StoredReadRecord(body: bytes)
    _ = try? verifier?.verify(String(decoding: bytes, as: UTF8.self))
    return 0
}
