public import ProximaCore

/// One bulk pipe pair of a CCID reader, as the exchange logic sees it: a message out, a message in. The libusb
/// transport implements it with bulk transfers; tests with a scripted reader.
public protocol CCIDBulkPipe {
    /// Sends one PC_to_RDR message (bulk OUT).
    mutating func write(_ message: [UInt8]) throws
    /// Receives one RDR_to_PC message (bulk IN).
    mutating func read() throws -> [UInt8]
    /// Sends the class-specific ABORT request on the control pipe (CCID Rev 1.1 §5.3.1: `bmRequestType` 21,
    /// `bRequest` 01, `wValue` = `bSeq` << 8 | `bSlot`), which must precede PC_to_RDR_Abort with the same `bSeq`.
    mutating func sendAbortRequest(slot: UInt8, sequence: UInt8) throws
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
///   extended level; at the TPDU level the host speaks T=1 (``T1Protocol``: one block per XfrBlock, after
///   ``powerOn(over:)`` has set the T=1 parameters and negotiated the IFSD); the character level and T=0 cards are
///   refused (`unsupported`);
/// - ``abort(controlRequestSent:over:)`` stops a command that takes too long (CCID §5.3.1, §6.1.13): the ABORT
///   request on the control pipe, then PC_to_RDR_Abort with the same `bSeq`; the aborted command's late answer is
///   skipped as stale.
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
    /// The T=1 state of the powered card at the TPDU level; `nil` otherwise.
    public private(set) var t1: T1Protocol?

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
        try pipe.write(CCID.command(type, slot: slot, sequence: expected, parameters: parameters, data: data))
        // Only a command that went out uses its bSeq: an abort that follows a refused write takes the same one.
        sequence &+= 1
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

    /// PC_to_RDR_IccPowerOn (automatic voltage): the ATR. At the TPDU level, then PC_to_RDR_SetParameters for T=1
    /// (§6.1.7, from the ATR's interface bytes) and S(IFS request) with IFSD 254.
    ///
    /// - Throws: `unsupported` at the TPDU level for a card without T=1 or with a CRC epilogue.
    public mutating func powerOn(over pipe: inout some CCIDBulkPipe) throws -> [UInt8] {
        t1 = nil
        let atr = try run(.iccPowerOn, over: &pipe).data
        guard descriptor.exchangeLevel == .tpdu else { return atr }
        let parameters = T1Parameters(atr: atr)
        var protocolState = try T1Protocol(parameters: parameters, reader: reader)
        // abProtocolDataStructure for T=1: bmFindexDindex, bmTCCKST1, bGuardTimeT1, bmWaitingIntegersT1,
        // bClockStop, bIFSC, bNadValue.
        let structure: [UInt8] = [
            0x11, 0x10, 0x00, parameters.waitingIntegers, 0x00, UInt8(clamping: parameters.cardInformationFieldSize),
            0x00,
        ]
        do {
            _ = try run(.setParameters, parameters: (1, 0, 0), data: structure, over: &pipe)
        } catch let error as ProximaError where error.code == .unsupported {
            // A reader that sets the parameters by itself (automatic parameter negotiation) may refuse the command.
        }
        try overT1(&protocolState, &pipe) { protocolState, link in
            try protocolState.negotiateInformationFieldSize(over: &link)
        }
        t1 = protocolState
        return atr
    }

    /// PC_to_RDR_Abort after the control pipe's ABORT request (§5.3.1): the reader answers the aborted command (if
    /// it still runs) with CMD_ABORTED, which is skipped as stale, then the Abort with RDR_to_PC_SlotStatus.
    ///
    /// - Parameter controlRequestSent: whether the ABORT request for the next `bSeq` was already sent (from another
    ///   thread, while this one waited for an answer).
    public mutating func abort(controlRequestSent: Bool = false, over pipe: inout some CCIDBulkPipe) throws {
        if !controlRequestSent { try pipe.sendAbortRequest(slot: slot, sequence: sequence) }
        _ = try run(.abort, over: &pipe)
    }

    /// Runs `body` with a ``T1BlockLink`` over this exchange (one XfrBlock per block) and keeps the `bSeq` it used.
    private mutating func overT1<Pipe: CCIDBulkPipe, T>(
        _ protocolState: inout T1Protocol,
        _ pipe: inout Pipe,
        _ body: (inout T1Protocol, inout XfrBlockLink<Pipe>) throws -> T
    ) throws -> T {
        var link = XfrBlockLink(exchange: self, pipe: pipe)
        defer {
            sequence = link.exchange.sequence
            pipe = link.pipe
        }
        return try body(&protocolState, &link)
    }

    /// PC_to_RDR_GetSlotStatus: whether a card is there and powered.
    public mutating func slotStatus(over pipe: inout some CCIDBulkPipe) throws -> CCIDCardState {
        try run(.getSlotStatus, over: &pipe).cardState
    }

    /// One APDU, chained at the extended APDU level; returns the response APDU bytes.
    public mutating func transmit(_ apdu: [UInt8], over pipe: inout some CCIDBulkPipe) throws -> [UInt8] {
        switch descriptor.exchangeLevel {
        case .tpdu:
            guard var protocolState = t1 else {
                throw ProximaError(.cardRemoved, "\(readerName) slot \(slot): no card powered at T=1", reader: reader)
            }
            defer { t1 = protocolState }
            return try overT1(&protocolState, &pipe) { protocolState, link in
                try protocolState.transmit(apdu, over: &link)
            }
        case .character:
            throw ProximaError(
                .unsupported,
                "\(readerName) exchanges at the character level; only TPDU (T=1) and APDU-level readers are supported",
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

    /// The XfrBlock of one T=1 block at the TPDU level; `bBWI` carries the multiplier of the last S(WTX response).
    struct XfrBlockLink<Pipe: CCIDBulkPipe>: T1BlockLink {
        var exchange: CCIDSlotExchange
        var pipe: Pipe

        mutating func exchange(_ block: [UInt8], waitingTimeMultiplier: UInt8) throws -> [UInt8] {
            try exchange.run(.xfrBlock, parameters: (waitingTimeMultiplier, 0, 0), data: block, over: &pipe).data
        }
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
