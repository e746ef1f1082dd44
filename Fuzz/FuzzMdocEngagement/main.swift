import MobileDocumentCapability
import ProximaCore

/// libFuzzer entry: NDEF messages, Handover Select and DeviceEngagement parsing must never trap; an NDEF message
/// that parses must re-encode to one that parses to the same records.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let records = try? NDEF.parse(bytes) {
        guard (try? NDEF.parse(NDEF.encode(records))) == records else {
            fatalError("NDEF round trip failed for \(bytes.hexString)")
        }
    }
    _ = try? HandoverSelect(message: bytes)
    _ = try? DeviceEngagement(encoded: bytes)
    _ = try? NFCDataTransfer.unwrap(bytes)
    return 0
}
