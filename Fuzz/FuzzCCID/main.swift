import CCIDTransport
import ProximaCore

/// A reader that answers with the fuzzer's bytes, cut into messages by one length byte each.
struct FuzzedPipe: CCIDBulkPipe {
    var bytes: ArraySlice<UInt8>

    mutating func write(_ message: [UInt8]) throws {}

    mutating func sendAbortRequest(slot: UInt8, sequence: UInt8) throws {}

    mutating func read() throws -> [UInt8] {
        guard let length = bytes.first else { throw ProximaError(.cardTimeout, "no more answers") }
        bytes = bytes.dropFirst()
        let message = Array(bytes.prefix(Int(length)))
        bytes = bytes.dropFirst(message.count)
        return message
    }
}

/// A card that answers T=1 blocks with the fuzzer's bytes, cut as ``FuzzedPipe`` cuts them.
struct FuzzedT1Link: T1BlockLink {
    var pipe: FuzzedPipe

    mutating func exchange(_ block: [UInt8], waitingTimeMultiplier: UInt8) throws -> [UInt8] { try pipe.read() }
}

/// The RDR_to_PC parser, NotifySlotChange, the class descriptor, T=1 blocks, ATR parameters and the host's T=1, and a
/// whole slot exchange (bSeq, time extensions, chaining) on hostile reader bytes: never a trap, only `ProximaError`s, and bounded output.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let response = try? CCIDResponse(bytes: bytes, maximumDataLength: 261) {
        guard response.data.count == bytes.count - 10, response.data.count <= 261 else { fatalError("bad length") }
        _ = response.outcome
        _ = response.cardState
    }
    _ = try? CCIDSlotChange(bytes: bytes, slots: Int(bytes.first ?? 0))
    _ = try? CCIDClassDescriptor(extra: bytes)
    if let block = try? T1Block(bytes: bytes) {
        guard block.information.count <= T1Block.maximumInformationLength, block.bytes == bytes else {
            fatalError("T=1 block does not re-encode")
        }
    }
    _ = T1Parameters(atr: bytes)
    guard bytes.count >= 2 else { return 0 }
    // The host's T=1 against hostile card blocks (IFSC from the first byte, an APDU of the second's length).
    if var t1 = try? T1Protocol(parameters: T1Parameters(atr: [0x3B, 0x80, 0x80, 0x11, max(1, bytes[0]), 0])) {
        var link = FuzzedT1Link(pipe: FuzzedPipe(bytes: bytes[2...]))
        do {
            try t1.negotiateInformationFieldSize(over: &link)
            let response = try t1.transmit([UInt8](repeating: 0xA5, count: Int(bytes[1])), over: &link)
            guard response.count <= T1Protocol.maximumResponseLength else { fatalError("T=1 response too long") }
        } catch is ProximaError {
        } catch {
            fatalError("non-Proxima error from T=1: \(error)")
        }
    }
    let features: UInt32 = bytes[0] & 1 == 0 ? 0x0002_00BA : 0x0004_00FE
    var descriptorBytes = [UInt8](repeating: 0, count: 54)
    descriptorBytes[0] = 54
    descriptorBytes[1] = 0x21
    descriptorBytes[40] = UInt8(features & 0xFF)
    descriptorBytes[42] = UInt8(features >> 16 & 0xFF)
    descriptorBytes[44] = 11 + bytes[1] % 64
    guard let descriptor = try? CCIDClassDescriptor(extra: descriptorBytes) else { return 0 }
    var exchange = CCIDSlotExchange(slot: 0, descriptor: descriptor, readerName: "fuzz", firstSequence: bytes[0])
    var pipe = FuzzedPipe(bytes: bytes[2...])
    do {
        let response = try exchange.transmit([UInt8](repeating: 0, count: Int(bytes[1] % 160)), over: &pipe)
        guard response.count <= CCIDSlotExchange.maximumResponseLength else { fatalError("response too long") }
    } catch is ProximaError {
    } catch {
        fatalError("non-Proxima error \(error)")
    }
    return 0
}
