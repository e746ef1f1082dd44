// CPU cost of offline data authentication per payment read, against the same reads without it, in one process.
//
// Each card profile is read `reads` times through an in-process channel twice: once with the TEST CA keys (the
// terminal recovers the issuer and ICC keys and verifies fDDA or CDA) and once without CA keys (no ODA: the same
// APDUs for fDDA; for CDA the card is not asked to sign). The virtual card's own work (its RSA signature) is
// measured alone by replaying the recorded commands to a fresh copy and subtracted, so "terminal" is what the
// reader side pays. Ratio = terminal µs with ODA / terminal µs without.
//
// Run: swift run -c release ODABenchmark [reads-per-profile]

import EMVCommon
import Foundation
import PaymentCapability
import ProximaCardEmulator
import ProximaCore

let reads = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 500
let configDirectory = FileManager.default.currentDirectoryPath + "/Config"
let keys = try CertificationAuthorityKeys(contentsOf: configDirectory + "/keys/ca-public-keys-test.json")
let transaction = EMVTransaction(
    amountAuthorised: 2999,
    currencyCode: 840,
    date: TransactionDate(year: 2026, month: 3, day: 14)
)
let context = TapContext(lane: "bench", reader: "bench", tapID: 1)

func cpuNow() -> Duration {
    var ts = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return .seconds(ts.tv_sec) + .nanoseconds(ts.tv_nsec)
}

func microseconds(_ d: Duration) -> Double {
    let (s, atto) = d.components
    return Double(s) * 1e6 + Double(atto) / 1e12
}

/// µs CPU per read (card included), the card's share alone, and the last outcome.
func measure(_ profile: String, keys: CertificationAuthorityKeys) async throws -> (
    total: Double, card: Double, outcome: String
) {
    let card = try CardProfiles.load(contentsOf: "\(configDirectory)/cards/\(profile).json")
    let capability = EMVPaymentCapability(
        unpredictableNumbers: UnpredictableNumberSource { 0x1234_5678 },
        certificationAuthorities: keys
    )
    var outcome = ""
    for _ in 0..<10 {
        outcome = try await capability.run(
            transaction,
            on: InProcessCardChannel(card: card, reader: "bench"),
            context: context
        ).status.description
    }
    let start = cpuNow()
    for _ in 0..<reads {
        _ = try await capability.run(
            transaction,
            on: InProcessCardChannel(card: card, reader: "bench", recordsExchanges: false),
            context: context
        )
    }
    let total = microseconds((cpuNow() - start) / reads)
    // The card alone: the commands of one read replayed to fresh copies.
    let recorder = InProcessCardChannel(card: card, reader: "bench")
    _ = try await capability.run(transaction, on: recorder, context: context)
    let commands = recorder.commands
    let cardStart = cpuNow()
    for _ in 0..<reads {
        var copy = card
        for command in commands { _ = copy.respond(to: command) }
    }
    return (total, microseconds((cpuNow() - cardStart) / reads), outcome)
}

print("reads per profile: \(reads); µs CPU per read; terminal = total − card alone")
print("profile                      ODA  outcome          total   card  terminal   no ODA: outcome  terminal   ratio")
for profile in ["pay-visa-fdda", "pay-unionpay-quics", "pay-mastercard-cda", "pay-amex-expresspay", "pay-visa-qvsdc"] {
    let with = try await measure(profile, keys: keys)
    let without = try await measure(profile, keys: .none)
    let terminalWith = with.total - with.card
    let terminalWithout = without.total - without.card
    print(
        String(
            format: "%@  yes  %@ %7.1f %6.1f %9.1f   %@ %9.1f %7.2f",
            profile.padding(toLength: 26, withPad: " ", startingAt: 0),
            with.outcome.padding(toLength: 14, withPad: " ", startingAt: 0),
            with.total,
            with.card,
            terminalWith,
            without.outcome.padding(toLength: 15, withPad: " ", startingAt: 0),
            terminalWithout,
            terminalWith / terminalWithout
        )
    )
}

// The terminal's ODA work alone, without the card: the issuer and ICC key recovery and the fDDA verification on the
// data objects one read of pay-visa-fdda returned, against a whole read of pay-visa-qvsdc (no ODA, card included).
let fddaCard = try CardProfiles.load(contentsOf: "\(configDirectory)/cards/pay-visa-fdda.json")
let recorder = InProcessCardChannel(card: fddaCard, reader: "bench")
_ = try await EMVPaymentCapability(
    unpredictableNumbers: UnpredictableNumberSource { 0x1234_5678 },
    certificationAuthorities: keys
).run(transaction, on: recorder, context: context)
var objects: [TLVTag: [UInt8]] = [:]
var staticData: [UInt8] = []
for (command, response) in zip(recorder.commands, recorder.responses) where command.count > 1 {
    guard let decoded = try? TLV.decode(Array(response.dropLast(2))) else { continue }
    func collect(_ tlv: TLV) {
        if tlv.isConstructed { tlv.children.forEach(collect) } else { objects[tlv.tag] = tlv.value }
    }
    collect(decoded)
    if command[1] == 0xB2, command[3] >> 3 == 1 { staticData += decoded.value }
}
staticData += objects[0x82] ?? []
let authority = keys.key(rid: [0xA0, 0x00, 0x00, 0x00, 0x03], index: 0xE1)!
let today = CivilTime(year: 2026, month: 3, day: 14)
let terminalData = SignedDynamicData.fastDDATerminalData(
    unpredictableNumber: [0x12, 0x34, 0x56, 0x78],
    amountAuthorised: [0, 0, 0, 0, 0x29, 0x99],
    currencyCode: [0x08, 0x40],
    cardAuthenticationData: objects[0x9F69]
)
@MainActor func verifyOnce() throws {
    let issuer = try PublicKeyCertificate.issuerKey(
        certificate: objects[0x90] ?? [],
        remainder: objects[0x92] ?? [],
        exponent: objects[0x9F32] ?? [],
        authority: authority,
        pan: objects[0x5A] ?? [],
        today: today
    )
    let icc = try PublicKeyCertificate.iccKey(
        certificate: objects[0x9F46] ?? [],
        remainder: objects[0x9F48] ?? [],
        exponent: objects[0x9F47] ?? [],
        issuerKey: issuer.key,
        staticData: staticData,
        pan: objects[0x5A] ?? [],
        today: today
    )
    _ = try SignedDynamicData.verify(objects[0x9F4B] ?? [], iccKey: icc.key, terminalDynamicData: terminalData)
}
try verifyOnce()
let plain = try await measure("pay-visa-qvsdc", keys: .none)
let verifyStart = cpuNow()
for _ in 0..<reads { try verifyOnce() }
let verify = microseconds((cpuNow() - verifyStart) / reads)
print(
    String(
        format: "terminal ODA alone (issuer + ICC recovery + fDDA): %.1f µs; a whole no-ODA read (pay-visa-qvsdc, card "
            + "included): %.1f µs; ratio %.2f",
        verify,
        plain.total,
        verify / plain.total
    )
)
