public import ProximaCore

/// One bulk pipe pair of a CCID reader, as the exchange logic sees it: a message out, a message in. The libusb
/// transport implements it with bulk transfers; tests with a scripted reader.
public protocol CCIDBulkPipe {
    /// Sends one PC_to_RDR message (bulk OUT).
    mutating func write(_ message: [UInt8]) throws
    /// Receives one RDR_to_PC message (bulk IN).
    mutating func read() throws -> [UInt8]
}

/// The command/response rules of one CCID slot (CCID Rev 1.1 §6), over any ``CCIDBulkPipe``:
///
/// - every command carries the next `bSeq` (wrapping at 255); an answer with an older `bSeq` (left from an aborted
///   command) is skipped, at most ``maximumStaleAnswers`` times, then the exchange fails; an answer for another slot
///   or of the wrong message type fails it at once;
/// - a time extension (`bmCommandStatus` 2) means "wait for the next answer", looped at most
///   ``maximumTimeExtensions`` times, so a reader stuck in extensions cannot hang the exchange;
/// - a failed command (`bmCommandStatus` 1) throws with its `bError` named (``CCIDSlotError``), `cardRemoved` when
///   the slot reports no card;
/// - APDUs go as one XfrBlock at the short-APDU level and are chained (`wLevelParameter`, `bChainParameter`) at the
///   extended level; the character and TPDU levels are refused (`unsupported`).
public struct CCIDSlotExchange: Sendable {
    public static let maximumTimeExtensions = 64
    public static let maximumStaleAnswers = 3
    /// The most response bytes one chained answer may add up to (an extended response and its status word).
    public static let maximumResponseLength = 65_538

    public let slot: UInt8
    public let descriptor: CCIDClassDescriptor
    /// The `bSeq` of the next command.
    public private(set) var sequence: UInt8
    /// A name for errors (`ACS ACR1252 slot 0`), never card data.
    public let readerName: String
    public let reader: ReaderID?

    public init(
        slot: UInt8,
        descriptor: CCIDClassDescriptor,
        readerName: String,
        reader: ReaderID? = nil,
        firstSequence: UInt8 = 0
    ) {
        self.slot = slot
        self.descriptor = descriptor
        self.readerName = readerName
        self.reader = reader
        sequence = firstSequence
    }

    private var maximumDataLength: Int { max(1, descriptor.maximumMessageLength - CCID.headerLength) }

    /// Sends one command and returns its final answer.
    public mutating func run(
        _ type: CCID.Command,
        parameters: (UInt8, UInt8, UInt8) = (0, 0, 0),
        data: [UInt8] = [],
        over pipe: inout some CCIDBulkPipe
    ) throws -> CCIDResponse {
        let expected = sequence
        sequence &+= 1
        try pipe.write(CCID.command(type, slot: slot, sequence: expected, parameters: parameters, data: data))
        var extensions = 0
        var stale = 0
        while true {
            let answer = try CCIDResponse(bytes: try pipe.read(), maximumDataLength: maximumDataLength)
            let step = "PC_to_RDR \(Self.name(of: type)) on \(readerName) slot \(slot)"
            guard answer.sequence == expected else {
                stale += 1
                guard stale <= Self.maximumStaleAnswers else {
                    throw ProximaError(
                        .transmitFailed,
                        "\(step): the reader answered bSeq \(answer.sequence), expected \(expected)",
                        reader: reader
                    )
                }
                continue
            }
            guard answer.slot == slot, answer.messageType == type.responseType else {
                throw ProximaError(
                    .malformedData,
                    "\(step): answer of type \(answer.messageType) for slot \(answer.slot), expected type \(type.responseType)",
                    reader: reader
                )
            }
            switch answer.outcome {
            case .processed:
                return answer
            case .timeExtension:
                extensions += 1
                guard extensions <= Self.maximumTimeExtensions else {
                    throw ProximaError(
                        .cardTimeout,
                        "\(step): more than \(Self.maximumTimeExtensions) time extensions",
                        reader: reader
                    )
                }
            case .failed(let error):
                let code: ProximaError.Code = answer.cardState == .absent ? .cardRemoved : error.errorCode
                throw ProximaError(code, "\(step) failed with \(error), card \(answer.cardState)", reader: reader)
            case .reserved:
                throw ProximaError(.malformedData, "\(step): reserved bmCommandStatus in bStatus", reader: reader)
            }
        }
    }

    /// PC_to_RDR_IccPowerOn (automatic voltage): the ATR.
    public mutating func powerOn(over pipe: inout some CCIDBulkPipe) throws -> [UInt8] {
        try run(.iccPowerOn, over: &pipe).data
    }

    /// PC_to_RDR_GetSlotStatus: whether a card is there and powered.
    public mutating func slotStatus(over pipe: inout some CCIDBulkPipe) throws -> CCIDCardState {
        try run(.getSlotStatus, over: &pipe).cardState
    }

    /// One APDU, chained at the extended APDU level; returns the response APDU bytes.
    public mutating func transmit(_ apdu: [UInt8], over pipe: inout some CCIDBulkPipe) throws -> [UInt8] {
        switch descriptor.exchangeLevel {
        case .character, .tpdu:
            throw ProximaError(
                .unsupported,
                "\(readerName) exchanges at the \(descriptor.exchangeLevel) level; only APDU-level readers are supported",
                reader: reader
            )
        case .shortAPDU:
            guard apdu.count <= maximumDataLength else {
                throw ProximaError(
                    .unsupported,
                    "\(readerName) takes at most \(maximumDataLength) bytes per APDU, got \(apdu.count)",
                    reader: reader
                )
            }
            return try xfrBlock(apdu, chain: .complete, over: &pipe).data
        case .extendedAPDU:
            var start = 0
            var answer: CCIDResponse
            repeat {
                let end = min(start + maximumDataLength, apdu.count)
                let chain: CCID.Chain =
                    switch (start == 0, end == apdu.count) {
                    case (true, true): .complete
                    case (true, false): .begins
                    case (false, true): .ends
                    case (false, false): .continues
                    }
                answer = try xfrBlock(Array(apdu[start..<end]), chain: chain, over: &pipe)
                start = end
            } while start < apdu.count
            var response = answer.data
            while answer.chain == .begins || answer.chain == .continues {
                answer = try xfrBlock([], chain: .nextResponsePart, over: &pipe)
                response += answer.data
                guard response.count <= Self.maximumResponseLength else {
                    throw ProximaError(
                        .malformedData,
                        "\(readerName): chained response longer than \(Self.maximumResponseLength) bytes",
                        reader: reader
                    )
                }
            }
            return response
        }
    }

    private mutating func xfrBlock(
        _ data: [UInt8],
        chain: CCID.Chain,
        over pipe: inout some CCIDBulkPipe
    ) throws -> CCIDResponse {
        let level = chain.rawValue
        return try run(
            .xfrBlock,
            parameters: (0, UInt8(truncatingIfNeeded: level), UInt8(truncatingIfNeeded: level >> 8)),
            data: data,
            over: &pipe
        )
    }

    static func name(of command: CCID.Command) -> String {
        switch command {
        case .setParameters: "SetParameters"
        case .iccPowerOn: "IccPowerOn"
        case .iccPowerOff: "IccPowerOff"
        case .getSlotStatus: "GetSlotStatus"
        case .escape: "Escape"
        case .getParameters: "GetParameters"
        case .resetParameters: "ResetParameters"
        case .xfrBlock: "XfrBlock"
        case .abort: "Abort"
        }
    }
}
