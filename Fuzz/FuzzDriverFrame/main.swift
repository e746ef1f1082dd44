import ExternalTransport
import ProximaCore
import RemoteTransport

/// Feeds the bytes to the driver-protocol frame decoder in pieces whose sizes come from the input, parses every frame
/// as a driver message and as a kernel request (what a remote agent parses), and checks that re-encoding a decoded payload gives the same frame.
@_cdecl("LLVMFuzzerTestOneInput")
public func test(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    guard let first = bytes.first else { return 0 }
    // A small cap reaches the oversized check with small inputs.
    var decoder = DriverFrame.Decoder(maximumPayload: first & 1 == 0 ? 4096 : 64)
    let step = Int(first >> 1) + 1
    var offset = 1
    var reassembled: [UInt8] = []
    decoding: while offset < bytes.count {
        let end = min(bytes.count, offset + step)
        decoder.append(bytes[offset..<end])
        offset = end
        while true {
            let payload: [UInt8]
            do {
                guard let next = try decoder.next() else { break }
                payload = next
            } catch {
                break decoding
            }
            guard payload.count <= decoder.maximumPayload else { fatalError("payload over the cap") }
            reassembled += DriverFrame.encode(payload: payload)
            _ = try? DriverMessage.parse(payload)
            _ = try? AgentRequest.parse(payload)
        }
    }
    // Whatever was decoded is a prefix of the input, byte for byte.
    guard bytes[1...].starts(with: reassembled) else { fatalError("re-encoded frames differ from the input") }
    return 0
}
