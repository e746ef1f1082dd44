import ProximaCardEmulator
import ProximaCore

/// The PN532 emulator's side of the host link: whatever bytes a host sends, in whatever chunks, the frame decoder
/// never traps, never holds more than its bound, and every frame it returns re-encodes to bytes that decode to the
/// same frame; the chip answers every decoded frame without trapping, and its answers encode to valid frames.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = bytes.first else { return 0 }
    let chunk = Int(first % 17) + 1
    var decoder = PN532FrameDecoder()
    var chip = PN532Chip(
        card: ScriptedCard(
            name: "fuzz card",
            uid: [0x01, 0x02, 0x03, 0x04],
            ats: [0x05, 0x78, 0x80, 0x70, 0x02],
            exchanges: [
                ScriptedCard.Exchange(
                    command: [0x00],
                    match: .prefix,
                    response: [UInt8](repeating: 0x5A, count: 300) + [0x90, 0x00]
                )
            ]
        )
    )
    var index = 1
    while index < bytes.count {
        let end = min(index + chunk, bytes.count)
        decoder.append(bytes[index..<end])
        index = end
        while let item = decoder.next() {
            guard decoder.pendingCount <= PN532FrameDecoder.maximumBufferedBytes + 17 else {
                fatalError("decoder holds \(decoder.pendingCount) bytes")
            }
            guard case .frame(let frame) = item else { continue }
            var again = PN532FrameDecoder()
            again.append(frame.bytes)
            guard again.next() == .frame(frame) else { fatalError("frame did not round-trip") }
            guard case .information(let payload) = frame else { continue }
            switch chip.respond(to: payload) {
            case .errorFrame: continue
            case .information(let answer):
                guard answer.count <= PN532Chip.maximumDataLength + 3, answer.first == PN532Frame.pn532ToHost else {
                    fatalError("answer of \(answer.count) bytes")
                }
                var check = PN532FrameDecoder()
                check.append(PN532Frame.information(answer).bytes)
                guard check.next() == .frame(.information(answer)) else { fatalError("answer frame is invalid") }
            }
        }
    }
    return 0
}
