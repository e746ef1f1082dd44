import ProximaCore

/// NFC data transfer (ISO/IEC 18013-5 §8.3.3.1.2): SessionEstablishment and SessionData in DO'53' through
/// ENVELOPE, answers through GET RESPONSE.
///
/// SELECT `A0000002480400` with P1-P2 `04 0C`; each message is wrapped in DO'53' (`53 len` with BER lengths up
/// to `83 xxxxxx`) and sent as ENVELOPE `00 C3 00 00`. ``ProximaCore/CardChannel/transceive(_:options:)`` does the
/// ISO/IEC 7816-4 work: command chaining (CLA `10` on every chunk but the last, 255-byte chunks on a short-only
/// reader, one extended APDU otherwise) and the `61xx` GET RESPONSE loop.
package struct NFCDataTransfer {
    package static let application: [UInt8] = [0xA0, 0x00, 0x00, 0x02, 0x48, 0x04, 0x00]
    /// The largest answer collected: a DeviceResponse with a large portrait is tens of kilobytes.
    static let maximumResponseLength = 1 << 20

    package let channel: any CardChannel
    /// The largest command data field, the holder's and the reader's minimum.
    let maximumCommandData: Int

    package init(channel: any CardChannel, holderMaximumCommandData: Int = 65_535) {
        self.channel = channel
        let reader = channel.supportsExtendedLength ? CommandAPDU.maxExtendedData : CommandAPDU.maxShortData
        maximumCommandData = max(1, min(holderMaximumCommandData, reader))
    }

    /// SELECT the mdoc NFC data transfer application.
    /// - Throws: ``MobileDocumentError/Code/notAnMdoc`` when the card answers other than `9000`.
    package func select() async throws {
        let response = try await mapSilence {
            try await channel.transmit(try CommandAPDU(cla: 0, ins: 0xA4, p1: 0x04, p2: 0x0C, data: Self.application))
        }
        guard response.status.isSuccess else {
            throw MobileDocumentError(.notAnMdoc, "SELECT mdoc transfer application answered \(response.status)")
        }
    }

    /// Sends one message and returns the holder's answer, both unwrapped from DO'53'.
    /// - Throws: ``MobileDocumentError``: `.transferFailed` for an error status or an answer that is no DO'53',
    ///   `.holderSilent` when the holder stops answering; other transport errors as thrown.
    package func exchange(_ message: [UInt8]) async throws -> [UInt8] {
        let data = Self.wrap(message)
        let options = TransceiveOptions(
            maximumResponseLength: Self.maximumResponseLength,
            maximumGetResponseCount: 8192
        )
        var response: ResponseAPDU
        if data.count <= maximumCommandData {
            let command = try CommandAPDU(
                cla: 0,
                ins: 0xC3,
                p1: 0,
                p2: 0,
                data: data,
                expectedLength: channel.supportsExtendedLength ? CommandAPDU.maxExtendedExpected : 256
            )
            response = try await mapSilence { try await channel.transceive(command, options: options) }
        } else {
            // The holder's limit is below the reader's: chain by hand in chunks it takes.
            var start = 0
            response = ResponseAPDU(data: [], status: .success)
            while start < data.count {
                let end = min(start + maximumCommandData, data.count)
                let last = end == data.count
                let command = try CommandAPDU(
                    cla: last ? 0x00 : 0x10,
                    ins: 0xC3,
                    p1: 0,
                    p2: 0,
                    data: Array(data[start..<end]),
                    expectedLength: last
                        ? (channel.supportsExtendedLength ? CommandAPDU.maxExtendedExpected : 256) : nil
                )
                response = try await mapSilence { try await channel.transceive(command, options: options) }
                guard last || response.status.isSuccess else { break }
                start = end
            }
        }
        guard response.status.isSuccess else {
            throw MobileDocumentError(.transferFailed, "ENVELOPE answered \(response.status)")
        }
        return try Self.unwrap(response.data)
    }

    private func mapSilence<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ProximaError where error.code == .cardTimeout {
            throw MobileDocumentError(.holderSilent, "the holder stopped answering", underlying: error)
        }
    }

    /// DO'53' around `message`: `53 L` with L as a BER length (one byte below 128, else `81`–`83` and 1–3 bytes).
    package static func wrap(_ message: [UInt8]) -> [UInt8] {
        let count = message.count
        let length: [UInt8] =
            switch count {
            case 0..<0x80: [UInt8(count)]
            case 0x80...0xFF: [0x81, UInt8(count)]
            case 0x100...0xFFFF: [0x82, UInt8(count >> 8), UInt8(count & 0xFF)]
            default:
                [
                    0x83, UInt8(truncatingIfNeeded: count >> 16), UInt8(truncatingIfNeeded: count >> 8),
                    UInt8(truncatingIfNeeded: count),
                ]
            }
        return [0x53] + length + message
    }

    /// The content of one DO'53' filling `data`.
    /// - Throws: ``MobileDocumentError/Code/transferFailed`` for anything else.
    package static func unwrap(_ data: [UInt8]) throws -> [UInt8] {
        guard data.count >= 2, data[0] == 0x53 else {
            throw MobileDocumentError(.transferFailed, "answer of \(data.count) bytes is not a DO'53'")
        }
        var length = Int(data[1])
        var start = 2
        if data[1] >= 0x80 {
            let width = Int(data[1] & 0x7F)
            guard (1...3).contains(width), data.count >= 2 + width else {
                throw MobileDocumentError(.transferFailed, "DO'53' length field \(data[1]) is not 81–83")
            }
            length = data[2..<(2 + width)].reduce(0) { $0 << 8 | Int($1) }
            start = 2 + width
        }
        guard data.count - start == length else {
            throw MobileDocumentError(.transferFailed, "DO'53' says \(length) bytes, \(data.count - start) follow")
        }
        return Array(data[start...])
    }
}
