import ProximaCore

/// libFuzzer entry: CBOR decoding must never trap; whatever decodes must encode deterministically to bytes that
/// decode to the same value and encode to the same bytes again.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let value = try? CBORDecoder.decode(bytes) {
        let encoded = CBOREncoder.encode(value)
        guard let again = try? CBORDecoder.decode(encoded) else {
            fatalError("deterministic encoding does not decode for \(bytes.hexString)")
        }
        guard CBOREncoder.encode(again) == encoded else { fatalError("encoding is not stable for \(bytes.hexString)") }
        _ = value.diagnostic
        _ = value.description
        _ = try? value.decodeEmbedded()
        _ = value.dateTimeValue
        _ = value.fullDateValue
    }
    // Stepping over an item (for its bytes as received) must reach the same end or the same error as decoding it.
    var decoding = CBORDecoder(bytes)
    var stepping = CBORDecoder(bytes)
    let decoded = Result { _ = try decoding.decodeNext() }.map { decoding.offset }
    let stepped = Result { _ = try stepping.nextEncodedItem() }.map { stepping.offset }
    switch (decoded, stepped) {
    case (.success(let a), .success(let b)) where a == b: break
    case (.failure(let a as CBORError), .failure(let b as CBORError)) where a == b: break
    default: fatalError("stepping and decoding disagree for \(bytes.hexString)")
    }
    // Decoding embedded CBOR in place must give what decoding and then unwrapping gives, value or error.
    let copied = Result { try CBORDecoder.decode(bytes).decodeEmbedded() }
    let inPlace = Result { try CBORDecoder.decodeEmbedded(bytes[...]) }
    switch (copied, inPlace) {
    case (.success(let a), .success(let b)) where a.encoded == b.encoded: break  // encoded: NaN is not equal to itself
    case (.failure(let a as CBORError), .failure(let b as CBORError)) where a == b: break
    default: fatalError("embedded decoding in place and by copy disagree for \(bytes.hexString)")
    }
    _ = try? CBORDecoder.decode(bytes, limits: CBORDecoder.Limits(maximumDepth: 2, maximumItemCount: 16))
    _ = try? CBORDecoder.encodedItem(in: bytes, at: [.index(0), .key("a"), .index(1)])
    _ = try? CBORDecoder.encodedElements(ofArray: bytes)
    return 0
}
