/// Bounds for ``CardChannel/transceive(_:options:)``: a card answers with `61xx` as often as it likes, so the
/// loop that collects the answer stops at these limits.
public struct TransceiveOptions: Hashable, Sendable {
    /// The most response data collected over a GET RESPONSE chain, in bytes.
    public var maximumResponseLength: Int
    /// The most GET RESPONSE commands sent for one command.
    public var maximumGetResponseCount: Int

    public init(maximumResponseLength: Int = 65_536, maximumGetResponseCount: Int = 256) {
        self.maximumResponseLength = maximumResponseLength
        self.maximumGetResponseCount = maximumGetResponseCount
    }
}

extension CardChannel {
    /// Sends a command and returns the card's complete answer, doing the transmission-level work of
    /// ISO/IEC 7816-4 that `transmit(_:)` leaves to the caller. Clauses below are those of the 2005 edition.
    ///
    /// - **Command chaining** (§5.1.1.1): when the command does not fit the channel (an extended
    ///   data field on a short-only reader, or more than `maximumCommandLength` bytes), its data is split into
    ///   the largest chunks that fit (255 bytes on a short-only reader). Every chunk but the last carries the
    ///   chaining bit (CLA b5, `CLA | 10`) and no Le; the last carries the original CLA and Le. A chunk answered
    ///   with anything but `9000` ends the chain, and that answer is returned.
    /// - **Short-only readers**: an Le over 256 becomes 256 (`00`); the card then announces the rest with `61xx`.
    /// - **`6Cxx`** (§5.1.3, wrong Le; Ne = SW2, `00` meaning 256): the command is sent once more with that Le. A
    ///   second `6Cxx` is returned as it is.
    /// - **`61xx`** (§5.1.3, SW2 more bytes available; §7.6.1 GET RESPONSE): GET RESPONSE `00 C0 00 00 Le=SW2` is
    ///   sent until another status arrives, and the data of all answers is concatenated under that final
    ///   status. GET RESPONSE is an interindustry command, so its CLA keeps only the command's logical channel
    ///   (§5.1.1, class byte): `00`–`03` from a first interindustry or proprietary CLA (so `80` and `84` give
    ///   `00`, as EMV does), `40`–`4F` from a further interindustry one; secure messaging and chaining bits are
    ///   dropped. A GET RESPONSE answered with `6Cxx` is sent once more with that Le.
    ///
    /// - Parameters:
    ///   - command: the command as the caller means it; it may exceed what the reader accepts in one APDU.
    ///   - options: the bounds of the GET RESPONSE chain.
    /// - Returns: the final status word with all the data collected.
    /// - Throws: whatever `transmit(_:)` throws; `ProximaError.malformedData` when a GET RESPONSE chain exceeds
    ///   `options`; `ProximaError.unsupported` when `maximumCommandLength` leaves no room for data;
    ///   `ProximaError.cancelled` when the task is cancelled between two APDUs.
    public func transceive(_ command: CommandAPDU, options: TransceiveOptions = TransceiveOptions()) async throws
        -> ResponseAPDU
    {
        var (response, completed) = try await transmitChained(command)
        guard completed else { return response }
        if let length = response.status.correctLength {
            var corrected = command
            corrected.expectedLength = length
            (response, completed) = try await transmitChained(corrected)
            guard completed else { return response }
        }
        guard response.status.bytesRemaining != nil else { return response }
        return try await collectRemaining(after: response, commandClass: command.cla, options: options)
    }

    /// Sends `command` as one APDU or as a chain of APDUs; returns the answer to the last one (`completed`), or
    /// the first non-`9000` answer to a chunk before the last (not `completed`).
    private func transmitChained(_ command: CommandAPDU) async throws -> (ResponseAPDU, completed: Bool) {
        let segments = try chainSegments(for: command)
        for segment in segments.dropLast() {
            let response = try await transmit(segment)
            guard response.status == .success else { return (response, false) }
            try checkCancellation(during: command)
        }
        // `chainSegments` never returns an empty list; falling back to `command` keeps this total.
        return (try await transmit(segments.last ?? command), true)
    }

    /// The APDUs that carry `command` over this channel (ISO/IEC 7816-4:2005 §5.1.1.1); one when it fits.
    func chainSegments(for command: CommandAPDU) throws -> [CommandAPDU] {
        var command = command
        if !supportsExtendedLength, let expected = command.expectedLength, expected > CommandAPDU.maxShortExpected {
            command.expectedLength = CommandAPDU.maxShortExpected
        }
        if (supportsExtendedLength || !command.isExtended) && command.bytes.count <= maximumCommandLength {
            return [command]
        }
        // Header, Lc and Le of the largest chunk in the encoding the channel takes.
        let overhead = supportsExtendedLength ? 4 + 3 + 2 : 4 + 1 + 1
        let largestChunk = supportsExtendedLength ? CommandAPDU.maxExtendedData : CommandAPDU.maxShortData
        let room = maximumCommandLength > overhead ? maximumCommandLength - overhead : 0
        let chunkSize = min(largestChunk, room)
        guard chunkSize >= 1, !command.data.isEmpty else {
            throw ProximaError(
                .unsupported,
                "reader accepts commands of at most \(maximumCommandLength) bytes; cannot send \(command)",
                reader: reader
            )
        }
        var segments: [CommandAPDU] = []
        var start = 0
        while start < command.data.count {
            let end = min(start + chunkSize, command.data.count)
            let chunk = Array(command.data[start..<end])
            let isLast = end == command.data.count
            segments.append(
                try CommandAPDU(
                    cla: isLast ? command.cla : command.cla | 0x10,
                    ins: command.ins,
                    p1: command.p1,
                    p2: command.p2,
                    data: chunk,
                    expectedLength: isLast ? command.expectedLength : nil
                )
            )
            start = end
        }
        return segments
    }

    /// Sends GET RESPONSE while the card answers `61xx`, concatenating the data.
    private func collectRemaining(
        after first: ResponseAPDU,
        commandClass: UInt8,
        options: TransceiveOptions
    ) async throws -> ResponseAPDU {
        var data = first.data
        var status = first.status
        var count = 0
        while let remaining = status.bytesRemaining {
            count += 1
            guard count <= options.maximumGetResponseCount else {
                throw ProximaError(
                    .malformedData,
                    "GET RESPONSE chain exceeds \(options.maximumGetResponseCount) commands (card still answers "
                        + "\(status) after \(data.count) bytes)",
                    reader: reader
                )
            }
            try checkCancellation(during: nil)
            var getResponse = try CommandAPDU(
                cla: Self.getResponseClass(for: commandClass),
                ins: 0xC0,
                p1: 0x00,
                p2: 0x00,
                expectedLength: remaining
            )
            var response = try await transmit(getResponse)
            if let length = response.status.correctLength {
                getResponse.expectedLength = length
                response = try await transmit(getResponse)
            }
            guard response.data.count <= options.maximumResponseLength - data.count else {
                throw ProximaError(
                    .malformedData,
                    "GET RESPONSE chain exceeds \(options.maximumResponseLength) bytes (had \(data.count), "
                        + "GET RESPONSE \(count) brought \(response.data.count) more)",
                    reader: reader
                )
            }
            data.append(contentsOf: response.data)
            status = response.status
        }
        return ResponseAPDU(data: data, status: status)
    }

    private func checkCancellation(during command: CommandAPDU?) throws {
        guard Task.isCancelled else { return }
        let step = command.map { "a command chain for \($0)" } ?? "a GET RESPONSE chain"
        throw ProximaError(.cancelled, "cancelled during \(step)", reader: reader)
    }

    /// The CLA of GET RESPONSE after a command with class `cla`: interindustry, same logical channel
    /// (ISO/IEC 7816-4:2005 §5.1.1; proprietary classes such as GlobalPlatform's encode the channel the same way).
    static func getResponseClass(for cla: UInt8) -> UInt8 {
        cla & 0x40 == 0 ? cla & 0x03 : 0x40 | (cla & 0x0F)
    }
}
