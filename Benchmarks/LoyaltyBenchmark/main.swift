// CPU time of a VAS-only tap and of a VAS+payment tap on the simulator, air time off, against the payment-only tap
// measured in the same run (the plastic card's, and the same phone's without the loyalty request), through the public API (`readVAS`, `readPaymentCard(_:vasRequest:)`); the same for Google
// Smart Tap taps (the virtual Android phones of Config/cards/smarttap-*.json). Issue 9's goal: the loyalty part adds
// ≤ 150 µs to a payment tap (one ECDH + KDF + GCM for VAS).
//
// CPU time is the whole process's (CLOCK_PROCESS_CPUTIME_ID), so the virtual phone's own work (for VAS a fresh
// ephemeral key, ECDH, X9.63 and AES-GCM per cryptogram; for Smart Tap the signature check, ECDH, HKDF, AES-CTR,
// HMAC and zlib) is inside every loyalty tap. It is measured two ways and subtracted to give the reader's share:
// inside the taps themselves (the simulator's cards wrapped so that each answer is timed on the thread that makes
// it, `TimedCard`; the payment-only tap's phone time is subtracted too), and alone, by replaying the tap's recorded
// commands to a fresh copy of the phone (its own key and randomness drawn as in a tap). The replay misses what the
// phone costs inside a tap (caches and allocator shared with the reader), so it is an upper bound of the reader's
// share; the in-tap figure is the one the goal is read on. Kinds are measured in interleaved rounds and medians are printed, so drift on a loaded machine
// hits all kinds alike; "added" is the median over rounds of (loyalty+payment − payment only) within one round.
//
// The reader's crypto is also timed alone, against a floor measured in the same run: one key generation, one ECDH
// and one ECDSA signature through ProximaCrypto (what the Smart Tap reader cannot avoid).
//
// Run: swift build -c release --product LoyaltyBenchmark && .build/release/LoyaltyBenchmark [reads] [rounds]

import Foundation
import LoyaltyCapability
import Proxima
import ProximaCardEmulator
import ProximaCore
import ProximaCrypto
import ProximaKernel
import ProximaProcessorSandbox
import SimulatorTransport
import Synchronization

let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let reads = arguments.first ?? 1_000
let rounds = max(1, arguments.dropFirst().first ?? 5)
let readsPerRound = max(1, reads / rounds)
var load = [Double](repeating: 0, count: 3)
_ = getloadavg(&load, 3)
let configDirectory = FileManager.default.currentDirectoryPath + "/Config"

func cpuNow() -> Duration {
    var ts = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return .seconds(ts.tv_sec) + .nanoseconds(ts.tv_nsec)
}

func microseconds(_ d: Duration) -> Double {
    let (s, atto) = d.components
    return Double(s) * 1e6 + Double(atto) / 1e12
}

func threadCPUNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Jobs enqueued on Swift's global (cooperative) executor, counted by the runtime's `swift_task_enqueueGlobal_hook`:
/// each may wake an idle thread, which on these VMs costs more than most of a tap's own work.
let poolEnqueues = Atomic<Int>(0)
typealias EnqueueGlobal = @convention(c) (UnsafeMutableRawPointer?) -> Void
typealias EnqueueGlobalHook = @convention(c) (UnsafeMutableRawPointer?, EnqueueGlobal?) -> Void
if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "swift_task_enqueueGlobal_hook") {
    let hook: EnqueueGlobalHook = { job, original in
        poolEnqueues.add(1, ordering: .relaxed)
        original?(job)
    }
    symbol.assumingMemoryBound(to: EnqueueGlobalHook?.self).pointee = hook
}
var enqueuesPerTap: [Kind: Double] = [:]

/// CPU time of the simulator's cards and phones answering, over the whole run (thread CPU around each answer).
let cardNanoseconds = Atomic<Int64>(0)

/// A card or phone whose answers are timed on the thread that makes them (inside the simulated reader), so that
/// the phone's work in a tap is measured in that tap.
struct TimedCard: VirtualCard {
    var inner: any VirtualCard
    var name: String { inner.name }
    var atr: [UInt8] { inner.atr }
    var ats: [UInt8] { inner.ats }
    var uid: [UInt8] { inner.uid }
    var technology: CardTechnology { inner.technology }

    mutating func respond(to command: [UInt8]) -> [UInt8] {
        let start = threadCPUNanoseconds()
        let answer = inner.respond(to: command)
        cardNanoseconds.add(threadCPUNanoseconds() - start, ordering: .relaxed)
        return answer
    }
}

/// The built-in plugins and `timed-simulator`: the simulator with every card wrapped in ``TimedCard``.
let benchmarkRegistry: PluginRegistry = {
    var registry = BuiltinPlugins.registry
    registry.register(
        TransportType(name: "timed-simulator", summary: "the simulator, its cards' answers timed") { context in
            var configuration = try SimulatorConfiguration(
                json: context.configuration,
                path: context.configurationPath,
                baseDirectory: context.baseDirectory
            )
            for index in configuration.readers.indices {
                configuration.readers[index].cards = configuration.readers[index].cards.map { TimedCard(inner: $0) }
            }
            return SimulatorTransport(
                id: context.id,
                configuration: configuration,
                reportsCardPresence: context.reportsCardPresence
            )
        }
    )
    return registry
}()

func manifest(card: String, dataDirectory: String) throws -> Manifest {
    let text = """
        {
          "schemaVersion": 1,
          "dataDirectory": "\(dataDirectory)",
          "plugins": [ { "id": "sim", "type": "timed-simulator", "config": { "airTime": false, "readers": [
            { "id": "bench", "cards": ["cards/\(card).json"], "arrival": { "pattern": "immediate" } } ] } } ],
          "lanes": [ { "id": "lane", "readers": ["bench"] } ],
          "capabilities": {
            "payment": { "processorPublicKey": "keys/psp-test-public.pem", "tokenIssuer": "https://psp.example.test",
                         "readerIdentifier": "proxima-bench-001" },
            "loyalty": { "appleVAS": { "merchants": [
              { "passTypeIdentifier": "pass.com.example.loyalty", "privateKeys": ["keys/vas-test-private.pem"] } ] },
              "smartTap": { "collectorID": 20180608, "keyVersion": 1, "privateKey": "keys/smarttap-test-private.pem" } } }
        }
        """
    return try Manifest.parse(Array(text.utf8), baseDirectory: configDirectory, registry: benchmarkRegistry)
}

enum Kind: String, CaseIterable {
    case paymentOnly = "payment only", vasOnly = "VAS only", vasAndPayment = "VAS + payment"
    case smartTapOnly = "Smart Tap only", smartTapAndPayment = "Smart Tap + payment"
    /// Payment-only taps on the very phones the combined taps use, so that "added" counts the loyalty part only
    /// (a phone's payment application is not the plastic card's: other records, other PDOL).
    case paymentOnlyIPhone = "payment only, iPhone", paymentOnlyAndroid = "payment only, Android"

    var card: String {
        switch self {
        case .paymentOnly: "pay-visa-qvsdc"
        case .paymentOnlyIPhone: "vas-iphone-loyalty-visa"
        case .paymentOnlyAndroid: "smarttap-android-loyalty-visa"
        case .vasOnly: "vas-iphone-loyalty"
        case .vasAndPayment: "vas-iphone-loyalty-visa"
        case .smartTapOnly: "smarttap-android-loyalty"
        case .smartTapAndPayment: "smarttap-android-loyalty-visa"
        }
    }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// CPU per read of `kind` over `reads` reads, after a warm-up, and the part of it the card or phone spent answering.
func measure(_ kind: Kind, reads: Int) async throws -> (tap: Duration, card: Duration, enqueues: Double) {
    let card = kind.card
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("proxima-bench-\(UUID())").path
    defer { try? FileManager.default.removeItem(atPath: data) }
    let manifest = try manifest(card: card, dataDirectory: data)
    let kernel = Kernel(manifest: manifest, registry: benchmarkRegistry)
    let token = try PaymentProcessorSandbox(manifest: manifest).issueToken(merchantID: "merchant-bench")
    let request = PaymentCardTransactionRequest(amount: Decimal(string: "29.99")!, currencyCode: "USD", type: .purchase)
    let vasRequest = VASRequest(merchantIdentifier: "pass.com.example.loyalty", localizedDescription: "Bench")
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await kernel.run() }
        await kernel.waitForReaders(count: 1)
        let reader = PaymentCardReader(kernel: kernel, lane: "lane")
        try await reader.linkAccount(using: token)
        let session = try await reader.prepare(using: token)
        let warmUp = 10
        var start = cpuNow()
        var cardStart = cardNanoseconds.load(ordering: .relaxed)
        var enqueueStart = poolEnqueues.load(ordering: .relaxed)
        for index in 0..<(warmUp + reads) {
            if index == warmUp {
                start = cpuNow()
                cardStart = cardNanoseconds.load(ordering: .relaxed)
                enqueueStart = poolEnqueues.load(ordering: .relaxed)
            }
            switch kind {
            case .paymentOnly, .paymentOnlyIPhone, .paymentOnlyAndroid:
                _ = try await session.readPaymentCard(request)
            case .vasOnly, .smartTapOnly:
                let result = try await session.readVAS(vasRequest)
                guard result.entries.contains(where: { $0.status == .success }) else {
                    fatalError("VAS read failed: \(result)")
                }
            case .vasAndPayment, .smartTapAndPayment:
                let result = try await session.readPaymentCard(request, vasRequest: vasRequest)
                guard result.vasReadResult?.entries.contains(where: { $0.status == .success }) == true else {
                    fatalError("VAS part failed")
                }
            }
        }
        let cpu = (cpuNow() - start) / reads
        let card = Duration.nanoseconds(cardNanoseconds.load(ordering: .relaxed) - cardStart) / reads
        let enqueues = Double(poolEnqueues.load(ordering: .relaxed) - enqueueStart) / Double(reads)
        group.cancelAll()
        return (cpu, card, enqueues)
    }
}

var taps: [Kind: [Double]] = [:]
/// The card's or phone's answers per tap, timed inside the taps.
var cardTimes: [Kind: [Double]] = [:]
for _ in 0..<rounds {
    for kind in Kind.allCases {
        let (tap, card, enqueues) = try await measure(kind, reads: readsPerRound)
        enqueuesPerTap[kind] = enqueues
        taps[kind, default: []].append(microseconds(tap))
        cardTimes[kind, default: []].append(microseconds(card))
    }
}
@MainActor func tap(_ kind: Kind) -> Double { median(taps[kind] ?? []) }
/// Per round, what `kind` adds to the payment-only tap on the same phone in the same round.
@MainActor func added(_ kind: Kind) -> [Double] {
    let baseline: Kind = kind == .smartTapAndPayment ? .paymentOnlyAndroid : .paymentOnlyIPhone
    return zip(taps[kind] ?? [], taps[baseline] ?? []).map { $0 - $1 }
}
/// Per round, what `kind` adds to the same phone's payment-only tap with both taps' phone time (timed inside the
/// taps) taken out: the reader's part.
@MainActor func readerPartInTap(_ kind: Kind) -> [Double] {
    let baseline: Kind = kind == .smartTapAndPayment ? .paymentOnlyAndroid : .paymentOnlyIPhone
    let phone = zip(cardTimes[kind] ?? [], cardTimes[baseline] ?? []).map { $0 - $1 }
    return zip(added(kind), phone).map { $0 - $1 }
}

let merchantKey = try P256.PrivateKey(
    pemRepresentation: String(contentsOfFile: configDirectory + "/keys/vas-test-private.pem", encoding: .utf8)
).publicKey
let pass = VASPhone.Pass(
    passTypeIdentifier: "pass.com.example.loyalty",
    merchantKey: merchantKey,
    message: Array("PROXIMA-LOYALTY-0001".utf8)
)
let hash = try SHA256.hash(Array("pass.com.example.loyalty".utf8))

// The reader's decryption alone (key id, point decompression, ECDH, X9.63, AES-GCM), on one cryptogram.
let merchant = LoyaltySettings.Merchant(
    passTypeIdentifier: "pass.com.example.loyalty",
    passTypeHash: hash,
    keys: [
        try LoyaltySettings.VASKey(
            privateKey: P256.PrivateKey(
                pemRepresentation: String(
                    contentsOfFile: configDirectory + "/keys/vas-test-private.pem",
                    encoding: .utf8
                )
            ),
            path: "bench"
        )
    ]
)
let cryptogram = try VASPhone.cryptogram(for: pass, passTypeHash: hash, at: Date())
let vasRecording = InProcessCardChannel(
    card: try CardProfiles.load(contentsOf: configDirectory + "/cards/vas-iphone-loyalty-visa.json"),
    reader: "bench"
)
_ = try await AppleVASCapability(
    settings: LoyaltySettings(merchants: [merchant], maxCryptogramAge: .seconds(300))
).run(
    VASReadRequest(
        merchants: [VASMerchantRequest(passTypeIdentifier: "pass.com.example.loyalty")],
        mode: .vasAndPayment
    ),
    on: vasRecording,
    context: TapContext(lane: "bench", reader: "bench", tapID: 1)
)
let vasCommandCount = vasRecording.commands.count
// The phone's side alone: its answers to the recorded VAS commands, replayed on a fresh copy per read (the SELECT
// answer with its nonce; one cryptogram: ephemeral key, ECDH, X9.63, AES-GCM), as in a tap.
let iPhoneProfile = try CardProfiles.load(contentsOf: configDirectory + "/cards/vas-iphone-loyalty-visa.json")
/// CPU per read of `phone` answering `commands`, on a fresh copy each read as in a tap; stops the benchmark unless
/// the last answer is 9000.
func replayCost(of phone: any VirtualCard, answering commands: [[UInt8]], _ what: String) -> Duration {
    let start = cpuNow()
    for _ in 0..<reads {
        var copy = phone
        var last: [UInt8] = []
        for command in commands { last = copy.respond(to: command) }
        guard last.suffix(2) == [0x90, 0x00] else { fatalError("the replayed \(what) did not answer 9000") }
    }
    return (cpuNow() - start) / reads
}
let phone = replayCost(of: iPhoneProfile, answering: vasRecording.commands, "VAS phone")
let decryptStart = cpuNow()
for _ in 0..<reads { _ = try VASCryptogram.decrypt(cryptogram, merchant: merchant) }
let decrypt = (cpuNow() - decryptStart) / reads

// Google Smart Tap: the phone's side alone (its answers to one recorded tap, replayed: ECDSA verify, ECDH, HKDF,
// AES-CTR, HMAC, zlib), and the reader's side alone (ephemeral key, ECDSA sign, ECDH, HKDF, HMAC check, AES-CTR,
// zlib, NDEF), so the end-to-end difference can be split.
let androidProfile = configDirectory + "/cards/smarttap-android-loyalty-visa.json"
guard var recordedPhone = try CardProfiles.load(contentsOf: androidProfile) as? SmartTapPhone else {
    fatalError("not a Smart Tap phone profile")
}
let fixedNonce = try SecureRandom.bytes(count: 32)
// Only the device nonce is the recorded one (the reader's recorded signature covers it), though drawn as a phone draws
// it; the phone's ephemeral key and IV are fresh each read as in a tap, so their cost counts as the phone's.
recordedPhone.randomness = SmartTapPhone.Randomness(
    deviceNonce: {
        _ = try? SecureRandom.bytes(count: 32)
        return fixedNonce
    },
    ephemeralKey: { try? P256.PrivateKey() },
    iv: { (try? SecureRandom.bytes(count: 12)) ?? [UInt8](repeating: 0, count: 12) }
)
let collectorKey = try P256.PrivateKey(
    pemRepresentation: String(contentsOfFile: configDirectory + "/keys/smarttap-test-private.pem", encoding: .utf8)
)
let collector = try LoyaltySettings.SmartTap(collectorID: 20_180_608, keyVersion: 1, privateKey: collectorKey)
let smartTapSettings = LoyaltySettings(merchants: [], maxCryptogramAge: .seconds(300), smartTap: collector)
let smartTapRequest = VASReadRequest(
    merchants: [VASMerchantRequest(passTypeIdentifier: "20180608")],
    mode: .vasAndPayment
)
let recording = InProcessCardChannel(card: recordedPhone, reader: "bench")
_ = try await AppleVASCapability(settings: smartTapSettings).run(
    smartTapRequest,
    on: recording,
    context: TapContext(lane: "bench", reader: "bench", tapID: 1)
)
let recordedCommands = recording.commands
let smartTapPhone = replayCost(of: recordedPhone, answering: recordedCommands, "Smart Tap phone")

// The reader's side of one read, on the recorded bundle's sizes: a fresh ephemeral key, the signature, ECDH, HKDF,
// then the bundle opened (HMAC, AES-CTR, zlib, NDEF).
let devicePublic = try P256.PrivateKey().publicKey.compressedRepresentation
let probeKeys = SmartTapCrypto.SessionKeys(
    encryption: [UInt8](repeating: 1, count: 16),
    authentication: [UInt8](repeating: 2, count: 32)
)
let passRecords = NDEF.encode([
    NDEFRecord(
        type: "asv",
        payload: NDEF.encode([
            NDEFRecord(
                type: "ly",
                payload: NDEF.encode([
                    NDEFRecord(tnf: 1, type: "n", id: [0x6E], payload: [0] + Array("PROXIMA-GOOGLE-0002".utf8))
                ])
            )
        ])
    )
])
let probeBundle = try SmartTapCrypto.sealBundle(
    try Zlib.deflate(passRecords),
    iv: [UInt8](repeating: 3, count: 12),
    keys: probeKeys,
    flags: 0x03
)
_ = try collector.signingKey.signature(for: [0])  // its first signature puts the key in the cache
let readerStart = cpuNow()
for _ in 0..<reads {
    let ephemeral = try P256.PrivateKey()
    let nonce = try SecureRandom.bytes(count: 32)
    let signed = SmartTapCrypto.signedData(
        readerNonce: nonce,
        deviceNonce: fixedNonce,
        collectorID: 20_180_608,
        readerEphemeral: ephemeral.publicKey
    )
    let signature = try collector.signingKey.signature(for: signed)
    _ = try SmartTapCrypto.sessionKeys(
        readerEphemeral: ephemeral,
        deviceEphemeral: devicePublic,
        readerNonce: nonce,
        deviceNonce: fixedNonce,
        collectorID: 20_180_608,
        signature: signature
    )
    _ = try SmartTapResponses.openPass(probeBundle, keys: probeKeys)
}
let smartTapReader = (cpuNow() - readerStart) / reads

// The floor: what the Smart Tap reader cannot avoid, one key generation, one ECDH and one ECDSA signature, each
// through ProximaCrypto's P-256 (the collector key already in the key cache, as after the first tap).
let signedProbe = [UInt8](repeating: 0x5A, count: 101)
_ = try collector.signingKey.signature(for: signedProbe)
let keygenStart = cpuNow()
for _ in 0..<reads { _ = try P256.PrivateKey() }
let keygen = microseconds((cpuNow() - keygenStart) / reads)
let probeEphemeral = try P256.PrivateKey()
let ecdhStart = cpuNow()
for _ in 0..<reads { _ = try probeEphemeral.sharedSecret(withPoint: devicePublic) }
let ecdh = microseconds((cpuNow() - ecdhStart) / reads)
// The same ECDH on the point given uncompressed: what decompressing the phone's 33-byte key (a square root mod p) costs.
let deviceUncompressed = try P256.PublicKey(compressedRepresentation: devicePublic).x963Representation
let ecdhUncompressedStart = cpuNow()
for _ in 0..<reads { _ = try probeEphemeral.sharedSecret(withPoint: deviceUncompressed) }
let ecdhUncompressed = microseconds((cpuNow() - ecdhUncompressedStart) / reads)
let signStart = cpuNow()
for _ in 0..<reads { _ = try collector.signingKey.signature(for: signedProbe) }
let sign = microseconds((cpuNow() - signStart) / reads)
let floor = keygen + ecdh + sign

/// A channel to an in-process phone that times each answer on the thread that makes it, so that a tap's CPU less its
/// phone's, both measured in the same tap, is the reader's capability alone (no kernel, transport or payment, and no
/// baseline replayed apart).
final class TimedPhoneChannel: CardChannel {
    let reader: ReaderID = "bench"
    let atr: [UInt8]
    let ats: [UInt8]
    let uid: [UInt8]
    let technology: CardTechnology
    let maximumCommandLength = 261
    let supportsExtendedLength = false
    private let state: Mutex<(card: any VirtualCard, phone: Duration)>

    init(card: any VirtualCard) {
        atr = card.atr
        ats = card.ats
        uid = card.uid
        technology = card.technology
        state = Mutex((card, .zero))
    }

    static func threadCPU() -> Duration {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return .seconds(ts.tv_sec) + .nanoseconds(ts.tv_nsec)
    }

    func transmit(_ command: CommandAPDU) async throws -> ResponseAPDU {
        let bytes = state.withLock { state in
            let start = Self.threadCPU()
            let answer = state.card.respond(to: command.bytes)
            state.phone += Self.threadCPU() - start
            return answer
        }
        return try ResponseAPDU(bytes: bytes)
    }

    func close() async {}

    /// The phone's CPU in this channel's answers so far.
    var phoneTime: Duration { state.withLock { $0.phone } }
}

/// The reader's capability alone per tap, on the phone of `profile` (see ``TimedPhoneChannel``): the median over
/// `rounds` rounds and its range, in µs.
func capabilityAlone(_ profile: String, settings: LoyaltySettings, merchant: String) async throws -> [Double] {
    let card = try CardProfiles.load(contentsOf: configDirectory + "/cards/\(profile).json")
    let capability = AppleVASCapability(settings: settings)
    let request = VASReadRequest(merchants: [VASMerchantRequest(passTypeIdentifier: merchant)], mode: .vasAndPayment)
    var perRound: [Double] = []
    for round in 0..<(rounds + 1) {
        var total = Duration.zero
        var phone = Duration.zero
        for index in 0..<readsPerRound {
            let channel = TimedPhoneChannel(card: card)
            let context = TapContext(lane: "bench", reader: "bench", tapID: UInt64(index))
            let start = cpuNow()
            let outcome = try await capability.run(request, on: channel, context: context)
            total += cpuNow() - start
            phone += channel.phoneTime
            guard outcome.hasSuccess else { fatalError("the capability alone did not read the pass: \(outcome)") }
        }
        if round > 0 { perRound.append(microseconds((total - phone) / readsPerRound)) }  // round 0 warms up
    }
    return perRound
}
let bothWallets = LoyaltySettings(merchants: [merchant], maxCryptogramAge: .seconds(300), smartTap: collector)
let vasAlone = try await capabilityAlone(
    "vas-iphone-loyalty-visa",
    settings: bothWallets,
    merchant: "pass.com.example.loyalty"
)
let smartTapAlone = try await capabilityAlone(
    "smarttap-android-loyalty-visa",
    settings: bothWallets,
    merchant: "20180608"
)

@MainActor func line(_ kind: Kind) -> String {
    String(
        format: "%@  %11.1f   %8.2f×",
        kind.rawValue.padding(toLength: 20, withPad: " ", startingAt: 0),
        tap(kind),
        tap(kind) / tap(.paymentOnly)
    )
}
@MainActor func addedLine(_ name: String, _ kind: Kind, phone: Double) -> String {
    let perRound = added(kind)
    let inTap = readerPartInTap(kind)
    let baseline: Kind = kind == .smartTapAndPayment ? .paymentOnlyAndroid : .paymentOnlyIPhone
    let phoneInTap = median(zip(cardTimes[kind] ?? [], cardTimes[baseline] ?? []).map { $0 - $1 })
    let reader = median(inTap)
    return String(
        format: "%@ +%.1f µs (rounds %.1f…%.1f); the virtual phone's work in the tap %.1f µs → reader's part "
            + "%.1f µs (rounds %.1f…%.1f)   goal ≤150 µs: %@\n"
            + "             the phone replayed alone instead: %.1f µs → %.1f µs (an upper bound)",
        name,
        median(perRound),
        perRound.min() ?? .nan,
        perRound.max() ?? .nan,
        phoneInTap,
        reader,
        inTap.min() ?? .nan,
        inTap.max() ?? .nan,
        reader <= 150 ? "met" : "NOT met",
        phone,
        median(perRound) - phone
    )
}

print(
    String(
        format: "reads per kind: %d in %d interleaved rounds; load average at start %.2f %.2f %.2f",
        readsPerRound * rounds,
        rounds,
        load[0],
        load[1],
        load[2]
    )
)
print("CPU per read is the whole process's, the virtual phone's and card's work included (median of the rounds)")
print("tap                   µs CPU/read   ratio to payment only")
for kind in Kind.allCases { print(line(kind)) }
print(
    "jobs enqueued on the global pool per tap (last round): "
        + Kind.allCases.map { String(format: "%@ %.1f", $0.rawValue, enqueuesPerTap[$0] ?? .nan) }.joined(
            separator: ", "
        )
)
print("loyalty added to a payment tap (loyalty+payment − payment only on the same phone, same round):")
print(addedLine("  VAS:      ", .vasAndPayment, phone: microseconds(phone)))
print(addedLine("  Smart Tap:", .smartTapAndPayment, phone: microseconds(smartTapPhone)))
print("reader's crypto alone:")
print(
    String(
        format: "  VAS 9F27 decryption (key id, ECDH, X9.63, AES-GCM): %.1f µs   goal ≤150 µs: %@",
        microseconds(decrypt),
        microseconds(decrypt) <= 150 ? "met" : "NOT met"
    )
)
print(
    String(
        format: "  Smart Tap (key, ECDSA sign, ECDH, HKDF, HMAC, AES-CTR, zlib, NDEF): %.1f µs   goal ≤150 µs: %@",
        microseconds(smartTapReader),
        microseconds(smartTapReader) <= 150 ? "met" : "NOT met"
    )
)
print(
    String(
        format: "  floor (one P-256 key generation %.1f + one ECDH %.1f + one ECDSA sign %.1f): %.1f µs; "
            + "Smart Tap crypto ÷ floor = %.2f",
        keygen,
        ecdh,
        sign,
        floor,
        microseconds(smartTapReader) / floor
    )
)
print(
    String(
        format: "  of the ECDH, decompressing the phone's key: %.1f µs (ECDH on the uncompressed point %.1f µs)",
        ecdh - ecdhUncompressed,
        ecdhUncompressed
    )
)
print("reader's capability alone (in-process phone, its answers' CPU subtracted within each tap; no kernel, payment):")
print(
    String(
        format:
            "  VAS %.1f µs (rounds %.1f…%.1f), of which 9F27 decryption above; Smart Tap %.1f µs (rounds %.1f…%.1f), "
            + "of which crypto above",
        median(vasAlone),
        vasAlone.min() ?? .nan,
        vasAlone.max() ?? .nan,
        median(smartTapAlone),
        smartTapAlone.min() ?? .nan,
        smartTapAlone.max() ?? .nan
    )
)
print("APDUs per tap: VAS \(vasCommandCount), Smart Tap \(recordedCommands.count) (the payment card's come after)")
