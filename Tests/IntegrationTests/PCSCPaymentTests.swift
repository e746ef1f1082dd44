import ProximaCardEmulator
import ProximaCore
import ProximaKernel
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// Payment reads through the whole stack: kernel → PC/SC transport → libpcsclite → pcscd → vpcd → `VPCDCardHost`
/// → virtual EMV card, and back.
@Suite(
    "Payment reads through real pcscd with vpcd readers",
    .enabled(if: LivePCSCD.isAvailable),
    .serialized,
    .timeLimit(.minutes(1))
)
struct PCSCPaymentTests {
    struct Expected: Sendable {
        var file: String
        var status: EMVOutcome.Status
        var aid: String
        var lastFour: String
        /// The ATC of the card's first transaction (profile counter + 1).
        var atc: [UInt8]
    }

    /// One card per reader; every profile tells its read apart by AID, last four digits and ATC.
    static let cards: [Expected] = [
        Expected(
            file: "pay-visa-qvsdc.json",
            status: .onlineRequest,
            aid: "A0000000031010",
            lastFour: "0119",
            atc: [0, 1]
        ),
        Expected(
            file: "pay-mastercard-mchip.json",
            status: .onlineRequest,
            aid: "A0000000041010",
            lastFour: "0012",
            atc: [0, 0x2A]
        ),
        Expected(
            file: "pay-multi-aid.json",
            status: .onlineRequest,
            aid: "A0000000043060",
            lastFour: "0020",
            atc: [0, 0x2A]
        ),
        Expected(
            file: "pay-online-pin.json",
            status: .onlineRequest,
            aid: "A0000000031010",
            lastFour: "0010",
            atc: [0, 1]
        ),
        Expected(
            file: "pay-declined.json",
            status: .declined,
            aid: "A0000000041010",
            lastFour: "0038",
            atc: [0, 0x2A]
        ),
        Expected(
            file: "pay-visa-qvsdc.json",
            status: .onlineRequest,
            aid: "A0000000031010",
            lastFour: "0119",
            atc: [0, 1]
        ),
    ]

    @Test(
        "six readers read six cards in parallel, each tap routed by its lane to its reader",
        .livePCSCD(.exclusive)
    )
    func sixReadersInParallel() async throws {
        let readers = LivePCSCD.readers
        try #require(readers.count == 6)
        var hosts: [VPCDCardHost] = []
        for (reader, expected) in zip(readers, Self.cards) {
            let host = VPCDCardHost(card: try loadCard(expected.file), endpoint: reader.endpoint)
            try host.insert()
            hosts.append(host)
        }
        let lanes = readers.indices.map { (lane: "lane-\($0)", reader: readers[$0]) }
        let manifest = try pcscManifest(lanes: lanes)

        let results = try await withKernel(manifest, readers: 6) { kernel in
            try await withThrowingTaskGroup(of: (Int, EMVOutcome, ReaderID).self) { group in
                for index in lanes.indices {
                    group.addTask {
                        let read = try await readPayment(kernel, lane: LaneID(lanes[index].lane))
                        return (index, read.outcome, read.reader)
                    }
                }
                var results: [Int: (outcome: EMVOutcome, reader: ReaderID)] = [:]
                for try await (index, outcome, reader) in group { results[index] = (outcome, reader) }
                return results
            }
        }

        for (index, expected) in Self.cards.enumerated() {
            let result = try #require(results[index], "lane-\(index) has no result")
            #expect(result.reader == readers[index].id, "lane-\(index) was served by \(result.reader)")
            #expect(result.outcome.status == expected.status, "\(expected.file)")
            #expect(result.outcome.selectedApplicationIdentifier?.hexString == expected.aid, "\(expected.file)")
            #expect(result.outcome.lastFourDigits == expected.lastFour, "\(expected.file)")
            #expect(result.outcome.cardData[0x9F26]?.count == 8, "\(expected.file): application cryptogram")
            #expect(result.outcome.cardData[0x9F36] == expected.atc, "\(expected.file): ATC")
        }
        // Each card answered its own read only: GET DATA for the UID, then the payment APDUs.
        for (host, reader) in zip(hosts, readers) {
            #expect(host.presenceCount == 1, "\(reader)")
            #expect(host.commandsAnswered >= 5, "\(reader): \(host.commandsAnswered) APDUs")
        }
        await removeAndSettle(hosts)
    }

    @Test("a card that stays in the field is read again on each tap, its ATC counting up", .livePCSCD(.shared))
    func repeatedTapsOnOneReader() async throws {
        let reader = LivePCSCD.c1
        let host = VPCDCardHost(card: try loadCard("pay-visa-qvsdc.json"), endpoint: reader.endpoint)
        try host.insert()
        let manifest = try pcscManifest(lanes: [("lane-1", reader)])
        let counters = try await withKernel(manifest, readers: 1) { kernel in
            var counters: [[UInt8]] = []
            for _ in 0..<3 {
                let read = try await readPayment(kernel, lane: "lane-1")
                #expect(read.outcome.status == .onlineRequest)
                counters.append(read.outcome.cardData[0x9F36] ?? [])
            }
            return counters
        }
        #expect(counters == [[0, 1], [0, 2], [0, 3]])
        #expect(host.presenceCount == 1)
        await removeAndSettle([host])
    }
}
