import Foundation
import ProximaCardEmulator
import ProximaCore
import ProximaTestSupport
import Synchronization
import Testing

@testable import PaymentCapability

/// Loads an EMV card profile from `Config/cards`.
func loadEMVCard(_ file: String) throws -> EMVCard {
    let card = try CardProfiles.load(contentsOf: PackageFiles.cardsDirectory + "/" + file)
    return try #require(card as? EMVCard, "\(file) is no EMV card profile")
}

/// Every test PAN of the payment profiles: none may ever appear in a description, log line or error.
let testPANs = [
    "4761739001010119", "4761739001010010", "5413330089010012", "5413330089010020", "5413330089010038",
]

/// The in-process channel the payment tests read through, reporting the reader of ``tapContext``.
func hostedChannel(_ card: any VirtualCard) -> InProcessCardChannel {
    InProcessCardChannel(card: card, reader: "test/hosted")
}

extension InProcessCardChannel {
    /// The data field of the last command with this instruction byte.
    func lastData(ofInstruction ins: UInt8) throws -> [UInt8] {
        let bytes = try #require(commands.last { $0.count > 1 && $0[1] == ins })
        return try CommandAPDU(bytes: bytes).data
    }
}

/// Records the unpredictable numbers handed out and the events reported.
final class Recorder: Sendable {
    private let numbers = Mutex<[UInt32]>([])
    private let reported = Mutex<[EMVPaymentEvent]>([])
    private let generator: Mutex<SplitMix64>

    init(seed: UInt64 = 0x5EED) { generator = Mutex(SplitMix64(seed: seed)) }

    var unpredictableNumbers: UnpredictableNumberSource {
        UnpredictableNumberSource { [self] in
            let value = generator.withLock { UInt32(truncatingIfNeeded: $0.next()) }
            numbers.withLock { $0.append(value) }
            return value
        }
    }

    var issuedNumbers: [UInt32] { numbers.withLock { $0 } }
    var events: [EMVPaymentEvent] { reported.withLock { $0 } }

    func record(_ event: EMVPaymentEvent) { reported.withLock { $0.append(event) } }

    /// The last unpredictable number as the 4 bytes of `9F37`.
    var lastNumberBytes: [UInt8] {
        guard let value = issuedNumbers.last else { return [] }
        return [
            UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8),
            UInt8(truncatingIfNeeded: value),
        ]
    }
}

let tapContext = TapContext(lane: "lane-1", reader: "test/hosted", tapID: 7)
let transactionDate = TransactionDate(year: 2026, month: 3, day: 14, hour: 9, minute: 26, second: 53)

func purchase(_ amount: Int64 = 2999, preferred: [UInt8]? = nil, type: EMVTransactionType = .purchase)
    -> EMVTransaction
{
    EMVTransaction(
        amountAuthorised: amount,
        currencyCode: 840,
        type: type,
        date: transactionDate,
        preferredApplication: preferred
    )
}

func capability(_ recorder: Recorder, settings: TerminalSettings = TerminalSettings()) -> EMVPaymentCapability {
    EMVPaymentCapability(settings: settings, unpredictableNumbers: recorder.unpredictableNumbers) { event, context in
        #expect(context.tapID == tapContext.tapID)
        recorder.record(event)
    }
}

let visaAID = bytes("A0000000031010")
let mastercardAID = bytes("A0000000041010")
let maestroAID = bytes("A0000000043060")

/// BER-TLV with a one- or two-byte definite length, built independently of `TLV`.
func tlv(_ tag: String, _ value: [UInt8]) -> [UInt8] {
    let length: [UInt8] = value.count < 0x80 ? [UInt8(value.count)] : [0x81, UInt8(value.count)]
    return bytes(tag) + length + value
}

func tlv(_ tag: String, _ valueHex: String) -> [UInt8] { tlv(tag, bytes(valueHex)) }

/// SELECT PPSE as the capability sends it.
let selectPPSE = "00A404000E325041592E5359532E444446303100"

/// A PPSE answer listing `entries` (each `(aid, label, priority, kernel id or nil)`), status 9000.
func ppseAnswer(_ entries: [(aid: String, label: String, priority: UInt8, kernel: String?)]) -> String {
    let directory = entries.flatMap { entry in
        tlv(
            "61",
            tlv("4F", entry.aid) + tlv("50", Array(entry.label.utf8)) + tlv("87", [entry.priority])
                + (entry.kernel.map { tlv("9F2A", $0) } ?? [])
        )
    }
    return (tlv("6F", tlv("84", Array("2PAY.SYS.DDF01".utf8)) + tlv("A5", tlv("BF0C", directory))) + [0x90, 0x00])
        .hexString
}

/// SELECT of an AID as the capability sends it.
func selectCommand(_ aid: String) -> String {
    "00A40400" + [UInt8(aid.count / 2)].hexString + aid + "00"
}

/// An application FCI with `pdol` (hex, may be empty), status 9000.
func applicationFCI(_ aid: String, pdol: String) -> String {
    let proprietary = tlv("50", Array("TEST".utf8)) + (pdol.isEmpty ? [] : tlv("9F38", pdol))
    return (tlv("6F", tlv("84", aid) + tlv("A5", proprietary)) + [0x90, 0x00]).hexString
}
