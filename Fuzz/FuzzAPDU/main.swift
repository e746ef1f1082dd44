import FuzzSupport
import ProximaCore

/// Runs `transceive` over a fuzzed card and checks what it sent.
private func fuzzTransceive(_ bytes: [UInt8]) {
    guard bytes.count >= 3 else { return }
    let flags = bytes[0]
    let commandLength = min(Int(bytes[1]), bytes.count - 2)
    let commandBytes = Array(bytes[2..<(2 + commandLength)])
    let answers = Array(bytes[(2 + commandLength)...])
    let command: CommandAPDU
    if let parsed = try? CommandAPDU(bytes: commandBytes) {
        command = parsed
    } else if let built = try? CommandAPDU(
        cla: flags,
        ins: 0xC3,
        p1: 0,
        p2: 0,
        data: Array(repeating: 0xA5, count: Int(flags) * 5),
        expectedLength: flags & 1 == 0 ? nil : 65_536
    ) {
        command = built
    } else {
        return
    }
    let extended = flags & 0x80 != 0
    let maximum = flags & 0x40 != 0 ? 8 + Int(flags & 0x3F) * 3 : (extended ? 65_544 : 261)
    let channel = FuzzedChannel(answers: answers, supportsExtendedLength: extended, maximumCommandLength: maximum)
    let options = TransceiveOptions(maximumResponseLength: 2048, maximumGetResponseCount: 8)

    runToCompletion {
        let result: ResponseAPDU
        do {
            result = try await channel.transceive(command, options: options)
        } catch let error as ProximaError {
            let expected: Set<ProximaError.Code> = [.cardRemoved, .malformedData, .unsupported]
            guard expected.contains(error.code) else { fatalError("unexpected error \(error)") }
            return
        } catch {
            fatalError("non-Proxima error \(error)")
        }
        // The first answer is at most 255 bytes; the chain adds at most the limit.
        guard result.data.count <= 255 + options.maximumResponseLength else {
            fatalError("collected \(result.data.count) bytes past the limit")
        }
        let sent = channel.sent
        // Chunks, one 6Cxx re-issue of them, and two APDUs per GET RESPONSE.
        guard sent.count <= 2 * (1 + command.data.count) + 2 * options.maximumGetResponseCount else {
            fatalError("sent \(sent.count) APDUs")
        }
        for apdu in sent {
            guard apdu.bytes.count <= maximum else { fatalError("sent \(apdu) over the maximum of \(maximum)") }
            guard extended || !apdu.isExtended else { fatalError("sent extended \(apdu) to a short-only reader") }
        }
    }
}

/// libFuzzer entry: APDU parsing must never trap and must round-trip; `transceive` must stay within its bounds
/// against any card.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))

    if let command = try? CommandAPDU(bytes: bytes) {
        let encoded = command.bytes
        guard let again = try? CommandAPDU(bytes: encoded), again == command else {
            fatalError("command APDU round trip failed for \(bytes.hexString)")
        }
        guard again.bytes == encoded else { fatalError("command APDU encoding is not stable for \(bytes.hexString)") }
        // Only an extended encoding of something short enough for the short form may re-encode differently.
        guard encoded == bytes || (bytes.count > 4 && bytes[4] == 0 && !command.isExtended) else {
            fatalError("canonical command APDU \(bytes.hexString) re-encoded as \(encoded.hexString)")
        }
    }

    if let response = try? ResponseAPDU(bytes: bytes) {
        guard response.bytes == bytes else { fatalError("response APDU round trip failed for \(bytes.hexString)") }
    }

    fuzzTransceive(bytes)
    return 0
}
