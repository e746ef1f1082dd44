public import ProximaCore

/// The host's side of the ISO/IEC 7816-3 T=1 block protocol (§11), for CCID readers at the TPDU exchange level: the
/// reader carries one block per XfrBlock and the host does the rest. Pure Swift over a ``T1BlockLink``, so the rules
/// are tested with known block sequences apart from libusb.
///
/// - An APDU longer than the card's IFSC goes as a chain of I-blocks (`M` set on all but the last), each
///   acknowledged by an R-block carrying the next N(S); a response chained by the card is acknowledged the same way
///   (§11.6.2.2).
/// - ``negotiateInformationFieldSize(over:)`` sends S(IFS request) with the host's IFSD 254 (§11.4.2); a card's own
///   S(IFS request) changes the IFSC for the blocks that follow.
/// - S(WTX request) is answered by S(WTX response) with the same multiplier, which the link passes to the reader
///   (`bBWI`); at most ``maximumWaitingTimeExtensions`` per APDU.
/// - A block received with a wrong LRC, a bad PCB or length, or none at all (the reader's ICC_MUTE) is answered by
///   an R-block asking for it again; a card's R-block asking for a block again is answered by repeating it. After
///   ``maximumRetransmissions`` on one block the host resynchronises (S(RESYNCH request), §11.6.3.2 rule 6): the
///   sequence numbers and sizes go back to their initial values and the APDU is sent once more from its start. A
///   failed resynchronisation ends the exchange with `cardTimeout`.
/// - S(ABORT request) from the card ends the chain with `transmitFailed` (and is answered).
public struct T1Protocol: Sendable {
    public static let maximumRetransmissions = 3
    public static let maximumWaitingTimeExtensions = 64
    public static let hostInformationFieldSize: UInt8 = 254
    /// The most response bytes a chain may add up to (an extended response and its status word).
    public static let maximumResponseLength = 65_538

    public let parameters: T1Parameters
    /// The card's information field size now (from the ATR, then from S(IFS) exchanges).
    public private(set) var cardInformationFieldSize: Int
    /// N(S) of the host's next I-block.
    public private(set) var sendSequence: UInt8 = 0
    /// N(S) expected on the card's next I-block.
    public private(set) var receiveSequence: UInt8 = 0
    public let reader: ReaderID?

    /// - Throws: `unsupported` when the ATR does not offer T=1 or asks for a CRC epilogue (only the LRC is done).
    public init(parameters: T1Parameters, reader: ReaderID? = nil) throws {
        guard parameters.offersT1 else {
            throw ProximaError.t1(
                .unsupported,
                "the card's ATR does not offer T=1 (T=0 is not supported)",
                reader: reader
            )
        }
        guard !parameters.usesCRC else {
            throw ProximaError.t1(
                .unsupported,
                "the card asks for a CRC epilogue; only the LRC is supported",
                reader: reader
            )
        }
        self.parameters = parameters
        self.reader = reader
        cardInformationFieldSize = parameters.cardInformationFieldSize
    }

    /// Sends S(IFS request) with IFSD 254 and waits for the card's S(IFS response), repeated on errors, as
    /// ``maximumRetransmissions`` allows.
    public mutating func negotiateInformationFieldSize(over link: inout some T1BlockLink) throws {
        let request = T1Block(
            kind: .supervisory(.informationFieldSize, response: false),
            information: [Self.hostInformationFieldSize]
        )
        try supervisoryExchange(request, over: &link)
    }

    /// Sends one APDU and returns the card's response (data and status word).
    ///
    /// - Throws: `cardTimeout` when the card stays silent or garbled through a resynchronisation, `transmitFailed`
    ///   when the card aborts the chain or breaks the protocol, `malformedData` for a response longer than
    ///   ``maximumResponseLength``; what the link throws otherwise.
    public mutating func transmit(_ apdu: [UInt8], over link: inout some T1BlockLink) throws -> [UInt8] {
        do {
            return try chain(apdu, over: &link)
        } catch let error as Resynchronise {
            try resynchronise(after: error.reason, over: &link)
        }
        do {
            return try chain(apdu, over: &link)
        } catch let error as Resynchronise {
            throw ProximaError.t1(.cardTimeout, "\(error.reason), again after a resynchronisation", reader: reader)
        }
    }

    private struct Resynchronise: Error {
        var reason: String
    }

    /// One APDU as a chain; throws ``Resynchronise`` after too many errors on one block.
    private mutating func chain(_ apdu: [UInt8], over link: inout some T1BlockLink) throws -> [UInt8] {
        var offset = 0
        var chunkEnd = min(apdu.count, cardInformationFieldSize)
        var lastInformation = informationBlock(apdu, offset..<chunkEnd)
        var toSend = lastInformation
        var multiplier: UInt8 = 0
        var receiving = false
        var lastAcknowledgement = lastInformation
        var errors = 0
        var extensions = 0
        var response: [UInt8] = []
        // Every block the card sends either advances the chain, is an error (bounded by `errors`), or is a WTX
        // (bounded by `extensions`); this bounds the rest.
        for _ in 0..<(4 * (apdu.count + Self.maximumResponseLength) / 16 + 64) {
            let received: T1Block
            do {
                received = try T1Block(bytes: try link.exchange(toSend.bytes, waitingTimeMultiplier: multiplier))
            } catch let error as T1BlockError {
                toSend = try retransmissionRequest(&errors, error.receiveStatus, error.reason)
                multiplier = 0
                continue
            } catch let error as ProximaError where error.code == .cardTimeout {
                toSend = try retransmissionRequest(&errors, .otherError, "no block within the waiting time")
                multiplier = 0
                continue
            }
            multiplier = 0
            switch received.kind {
            case .supervisory(.waitingTimeExtension, response: false):
                extensions += 1
                guard extensions <= Self.maximumWaitingTimeExtensions else {
                    throw ProximaError.t1(
                        .cardTimeout,
                        "more than \(Self.maximumWaitingTimeExtensions) waiting time extensions",
                        reader: reader
                    )
                }
                multiplier = received.information[0]
                toSend = T1Block(
                    kind: .supervisory(.waitingTimeExtension, response: true),
                    information: received.information
                )
            case .supervisory(.informationFieldSize, response: false):
                cardInformationFieldSize = Int(received.information[0])
                toSend = T1Block(
                    kind: .supervisory(.informationFieldSize, response: true),
                    information: received.information
                )
            case .supervisory(.abort, response: false):
                _ = try? link.exchange(
                    T1Block(kind: .supervisory(.abort, response: true)).bytes,
                    waitingTimeMultiplier: 0
                )
                throw ProximaError.t1(.transmitFailed, "the card aborted the chain (S(ABORT request))", reader: reader)
            case .supervisory:
                toSend = try retransmissionRequest(&errors, .otherError, "unexpected \(received)")
            case .receiveReady(let sequence, _):
                if !receiving, sequence != sendSequence, chunkEnd < apdu.count {
                    // The card acknowledges a chained I-block: the next part, cut at the IFSC of now.
                    sendSequence ^= 1
                    offset = chunkEnd
                    chunkEnd = min(apdu.count, offset + cardInformationFieldSize)
                    lastInformation = informationBlock(apdu, offset..<chunkEnd)
                    toSend = lastInformation
                    errors = 0
                } else {
                    // The card asks for the last block again (or acknowledges what it may not): repeat it.
                    errors += 1
                    guard errors <= Self.maximumRetransmissions else {
                        throw Resynchronise(reason: "the card asked \(errors) times for a block again")
                    }
                    toSend = receiving ? lastAcknowledgement : lastInformation
                }
            case .information(let sequence, let more):
                if !receiving {
                    guard chunkEnd == apdu.count else {
                        toSend = try retransmissionRequest(
                            &errors,
                            .otherError,
                            "an I-block in the middle of the host's chain"
                        )
                        continue
                    }
                    // The card's I-block acknowledges the host's last one.
                    sendSequence ^= 1
                    receiving = true
                }
                guard sequence == receiveSequence else {
                    // A repeat of an I-block already taken: acknowledge it again.
                    toSend = lastAcknowledgement
                    errors += 1
                    guard errors <= Self.maximumRetransmissions else {
                        throw Resynchronise(reason: "the card repeated an I-block \(errors) times")
                    }
                    continue
                }
                receiveSequence ^= 1
                errors = 0
                response += received.information
                guard response.count <= Self.maximumResponseLength else {
                    throw ProximaError.t1(
                        .malformedData,
                        "chained response longer than \(Self.maximumResponseLength) bytes",
                        reader: reader
                    )
                }
                guard more else { return response }
                lastAcknowledgement = T1Block(kind: .receiveReady(sequence: receiveSequence, status: .ok))
                toSend = lastAcknowledgement
            }
        }
        throw ProximaError.t1(.transmitFailed, "the card's chain did not end", reader: reader)
    }

    private func informationBlock(_ apdu: [UInt8], _ range: Range<Int>) -> T1Block {
        T1Block(
            kind: .information(sequence: sendSequence, more: range.upperBound < apdu.count),
            information: Array(apdu[range])
        )
    }

    /// An R-block asking the card for its last block again, or ``Resynchronise`` once that was asked too often.
    private func retransmissionRequest(
        _ errors: inout Int,
        _ status: T1Block.ReceiveStatus,
        _ reason: String
    ) throws -> T1Block {
        errors += 1
        guard errors <= Self.maximumRetransmissions else {
            throw Resynchronise(reason: "\(reason), \(errors) times")
        }
        return T1Block(kind: .receiveReady(sequence: receiveSequence, status: status))
    }

    /// S(RESYNCH request) until S(RESYNCH response); then both sequence numbers are 0 and the IFSC is the ATR's.
    private mutating func resynchronise(after reason: String, over link: inout some T1BlockLink) throws {
        do {
            try supervisoryExchange(T1Block(kind: .supervisory(.resynchronise, response: false)), over: &link)
        } catch let error as ProximaError {
            throw ProximaError.t1(
                .cardTimeout,
                "\(reason); then resynchronisation failed: \(error.reason)",
                reader: reader
            )
        }
        sendSequence = 0
        receiveSequence = 0
        cardInformationFieldSize = parameters.cardInformationFieldSize
    }

    /// Sends an S-block request until its response comes, at most ``maximumRetransmissions`` + 1 times.
    private mutating func supervisoryExchange(_ request: T1Block, over link: inout some T1BlockLink) throws {
        guard case .supervisory(let function, _) = request.kind else { return }
        var last = "no answer"
        for _ in 0...Self.maximumRetransmissions {
            do {
                let answer = try T1Block(bytes: try link.exchange(request.bytes, waitingTimeMultiplier: 0))
                if answer.kind == .supervisory(function, response: true), answer.information == request.information {
                    return
                }
                last = "the card answered \(answer)"
            } catch let error as T1BlockError {
                last = error.reason
            } catch let error as ProximaError where error.code == .cardTimeout {
                last = "no block within the waiting time"
            }
        }
        throw ProximaError.t1(
            .cardTimeout,
            "S(\(function) request) got no S(\(function) response): \(last)",
            reader: reader
        )
    }
}

/// Where T=1 blocks go: one block out, the card's next block back. `waitingTimeMultiplier` is the BWT multiplier
/// granted by the last S(WTX response) (0: none), for the reader's timeout (CCID `bBWI`).
public protocol T1BlockLink {
    /// - Throws: `ProximaError` `cardTimeout` when no block came in time (the host then asks for it again).
    mutating func exchange(_ block: [UInt8], waitingTimeMultiplier: UInt8) throws -> [UInt8]
}
