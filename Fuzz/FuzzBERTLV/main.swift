import ProximaCore

/// libFuzzer entry: BER-TLV and DOL decoding must never trap, and whatever decodes must re-encode to bytes that
/// decode to the same objects.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))

    if let objects = try? TLV.decodeAll(bytes) {
        let encoded = objects.bytes
        guard encoded.count <= bytes.count else {
            fatalError("re-encoding grew \(bytes.count) bytes to \(encoded.count)")
        }
        guard let again = try? TLV.decodeAll(encoded), again == objects else {
            fatalError("TLV round trip failed for \(bytes.hexString)")
        }
        guard again.bytes == encoded else { fatalError("TLV re-encoding is not stable for \(bytes.hexString)") }
        for object in objects {
            _ = object.first(0x9F02)
            _ = object.find(path: [0xA5, 0xBF0C])
        }
        _ = objects.find(path: [0x6F, 0xA5, 0xBF0C])
    }

    // Shallow limits reach the depth check with small inputs.
    _ = try? TLV.decodeAll(bytes, maximumDepth: 2)

    if let list = try? DataObjectList(bytes: bytes, maximumTotalLength: 4096) {
        guard let again = try? DataObjectList(bytes: list.bytes, maximumTotalLength: 4096), again == list else {
            fatalError("DOL round trip failed for \(bytes.hexString)")
        }
        var values: [TLVTag: [UInt8]] = [:]
        for (index, entry) in list.entries.enumerated() {
            // Shorter, equal and longer values, so every pad and truncate path runs.
            values[entry.tag] = Array(repeating: 0x5A, count: max(0, entry.length + index % 3 - 1))
        }
        let filled = list.fill(with: values)
        guard filled.count == list.totalLength else {
            fatalError("DOL fill gave \(filled.count) bytes for a total of \(list.totalLength)")
        }
    }
    return 0
}
