// CPU time of one complete payment read on the simulator, air time off, per card profile, HPKE included; and
// the kernel's and capability's CPU time as a share of the air time the same APDUs take at 106 kbit/s.
//
// A read here is what an app's `session.readPaymentCard(_:)` does: token and link checks, amount validation,
// a lease, the EMV transaction over the simulator's channel, and the card data sealed with HPKE to the
// processor. CPU time is the whole process's (CLOCK_PROCESS_CPUTIME_ID), so the virtual card's own work is
// included; it is measured alone as a baseline in the same process and shown beside.
//
// Run: swift run -c release PaymentBenchmark [reads-per-profile]

import Foundation
import PaymentCapability
import Proxima
import ProximaCardEmulator
import ProximaCore
import ProximaCrypto
import ProximaKernel
import ProximaProcessorSandbox
import SimulatorTransport
import Synchronization

let reads = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 2_000
let profiles = [
    "pay-visa-qvsdc", "pay-mastercard-mchip", "pay-multi-aid", "pay-online-pin", "pay-declined",
    "pay-malformed-record",
]
let configDirectory = FileManager.default.currentDirectoryPath + "/Config"

/// Jobs enqueued on Swift's global (cooperative) executor, counted by the runtime's `swift_task_enqueueGlobal_hook`:
/// every task start and every resumption on the pool (each may wake a thread).
let poolEnqueues = Atomic<Int>(0)

typealias EnqueueGlobal = @convention(c) (UnsafeMutableRawPointer?) -> Void
typealias EnqueueGlobalHook = @convention(c) (UnsafeMutableRawPointer?, EnqueueGlobal?) -> Void

/// Installs the counting hook; `false` when the runtime has no such hook.
func countPoolEnqueues() -> Bool {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "swift_task_enqueueGlobal_hook") else {
        return false
    }
    let hook: EnqueueGlobalHook = { job, original in
        poolEnqueues.add(1, ordering: .relaxed)
        original?(job)
    }
    symbol.assumingMemoryBound(to: EnqueueGlobalHook?.self).pointee = hook
    return true
}
let countingPoolEnqueues = countPoolEnqueues()

func cpuNow() -> Duration {
    var ts = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return .seconds(ts.tv_sec) + .nanoseconds(ts.tv_nsec)
}

func microseconds(_ d: Duration) -> Double {
    let (s, atto) = d.components
    return Double(s) * 1e6 + Double(atto) / 1e12
}

/// Forwards to a channel and records the size of every APDU pair, for the air-time model.
final class RecordingChannel: CardChannel {
    let inner: any CardChannel
    let sizes = Mutex<[(command: Int, response: Int)]>([])
    init(_ inner: any CardChannel) { self.inner = inner }
    var reader: ReaderID { inner.reader }
    var atr: [UInt8] { inner.atr }
    var ats: [UInt8] { inner.ats }
    var uid: [UInt8] { inner.uid }
    var technology: CardTechnology { inner.technology }
    var maximumCommandLength: Int { inner.maximumCommandLength }
    var supportsExtendedLength: Bool { inner.supportsExtendedLength }
    func transmit(_ command: CommandAPDU) async throws -> ResponseAPDU {
        let response = try await inner.transmit(command)
        sizes.withLock { $0.append((command.bytes.count, response.bytes.count)) }
        return response
    }
    func close() async { await inner.close() }
}

func manifest(for profile: String, dataDirectory: String) throws -> Manifest {
    let text = """
        {
          "schemaVersion": 1,
          "dataDirectory": "\(dataDirectory)",
          "plugins": [ { "id": "sim", "type": "simulator", "config": { "airTime": false, "readers": [
            { "id": "bench", "cards": ["cards/\(profile).json"], "arrival": { "pattern": "immediate" } } ] } } ],
          "lanes": [ { "id": "lane", "readers": ["bench"] } ],
          "capabilities": { "payment": {
            "processorPublicKey": "keys/psp-test-public.pem",
            "tokenIssuer": "https://psp.example.test",
            "readerIdentifier": "proxima-bench-001" } }
        }
        """
    return try Manifest.parse(Array(text.utf8), baseDirectory: configDirectory, registry: BuiltinPlugins.registry)
}

print("reads per profile: \(reads); CPU per read is the whole process's, the virtual card's work included")
nonisolated(unsafe) var breakdown: [String: [Double]] = [:]
nonisolated(unsafe) var airTimes: [String: Double] = [:]
nonisolated(unsafe) var enqueuesPerRead: [String: Double] = [:]
print(
    "profile                 outcome         µs CPU/read  card alone  air time @106k  CPU share of air   goal"
)
for profile in profiles {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("proxima-bench-\(UUID())").path
    defer { try? FileManager.default.removeItem(atPath: data) }
    let manifest = try manifest(for: profile, dataDirectory: data)
    let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
    let sandbox = try PaymentProcessorSandbox(manifest: manifest)
    let token = try sandbox.issueToken(merchantID: "merchant-bench")
    let request = PaymentCardTransactionRequest(amount: Decimal(string: "29.99")!, currencyCode: "USD", type: .purchase)

    let (cpu, outcome, sizes) = try await withThrowingTaskGroup(of: Void.self) {
        group in
        group.addTask { await kernel.run() }
        await kernel.waitForReaders(count: 1)
        let reader = PaymentCardReader(kernel: kernel, lane: "lane", options: .init(includeErrorInReadResult: true))
        try await reader.linkAccount(using: token)
        let session = try await reader.prepare(using: token)
        var outcome = ""
        let warmUp = max(10, reads / 20)
        var start = cpuNow()
        var enqueuesAtStart = 0
        for index in 0..<(warmUp + reads) {
            if index == warmUp {
                start = cpuNow()
                enqueuesAtStart = poolEnqueues.load(ordering: .relaxed)
            }
            do {
                outcome = try await session.readPaymentCard(request).outcome.rawValue
            } catch {
                outcome = "\(error)".components(separatedBy: ":").first ?? "error"
            }
        }
        let cpu = (cpuNow() - start) / reads
        enqueuesPerRead[profile] = Double(poolEnqueues.load(ordering: .relaxed) - enqueuesAtStart) / Double(reads)
        // The APDUs of one read, for the air-time model.
        let transaction = EMVTransaction(
            amountAuthorised: 2999,
            currencyCode: 840,
            date: TransactionDate(year: 2026, month: 11, day: 30)
        )
        let sizes = try await kernel.tap(lane: "lane") { channel, context in
            let recorder = RecordingChannel(channel)
            _ = try? await EMVPaymentCapability().run(transaction, on: recorder, context: context)
            return recorder.sizes.withLock { $0 }
        }
        // Breakdown: the kernel and the EMV capability alone (no API layer, no HPKE), with and without a deadline.
        for timeout in [nil, Duration.seconds(60)] as [Duration?] {
            let start = cpuNow()
            for _ in 0..<reads {
                _ = try? await kernel.tap(lane: "lane", options: TapOptions(timeout: timeout)) { channel, context in
                    try await EMVPaymentCapability().run(transaction, on: channel, context: context)
                }
            }
            breakdown[profile, default: []].append(microseconds((cpuNow() - start) / reads))
        }
        group.cancelAll()
        return (cpu, outcome, sizes)
    }

    // Baseline: the same card answering the same commands, alone.
    var card = try CardProfiles.load(contentsOf: "\(configDirectory)/cards/\(profile).json")
    let ppse: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x0E] + Array("2PAY.SYS.DDF01".utf8) + [0x00]
    let cardStart = cpuNow()
    for _ in 0..<reads * sizes.count { _ = card.respond(to: ppse) }
    let cardAlone = (cpuNow() - cardStart) / reads

    let model = AirTimeModel(bitRateKbps: 106, cardProcessing: .zero)
    let air = sizes.reduce(Duration.zero) { $0 + model.exchangeTime(commandBytes: $1.0, responseBytes: $1.1) }
    let share = microseconds(cpu) / microseconds(air) * 100
    airTimes[profile] = microseconds(air)
    let line = String(
        format: "%@  %@  %11.1f  %10.1f  %11.2f ms  %14.2f %%   ≤300 µs, ≤1 %%",
        profile.padding(toLength: 22, withPad: " ", startingAt: 0),
        outcome.padding(toLength: 14, withPad: " ", startingAt: 0),
        microseconds(cpu),
        microseconds(cardAlone),
        microseconds(air) / 1000,
        share
    )
    print(line)
}
print()
if countingPoolEnqueues {
    print(
        "jobs enqueued on Swift's global pool per full read: "
            + profiles.map { "\($0) \(String(format: "%.1f", enqueuesPerRead[$0] ?? 0))" }.joined(separator: ", ")
    )
}
print("breakdown, µs CPU per read: kernel.tap + EMV capability only (no API layer, no HPKE)")
for profile in profiles {
    let values = breakdown[profile] ?? []
    guard values.count == 2 else { continue }
    print(
        String(
            format: "%@  no deadline %7.1f   60 s deadline %7.1f   = %.2f %% of the air time",
            profile.padding(toLength: 22, withPad: " ", startingAt: 0),
            values[0],
            values[1],
            values[1] / (airTimes[profile] ?? .infinity) * 100
        )
    )
}

// The processor envelope alone: HPKE setup (ephemeral P-256 key, ECDH, key schedule) and AES-GCM of a typical
// plaintext, for the same number of reads.
let processorKey = try P256.PublicKey(
    pemRepresentation: String(contentsOfFile: configDirectory + "/keys/psp-test-public.pem", encoding: .utf8)
)
let plaintext = [UInt8](repeating: 0x41, count: 900)
let sealStart = cpuNow()
for _ in 0..<reads {
    var sender = try HPKE.Sender(recipientKey: processorKey, info: CardDataEnvelope.info)
    _ = try sender.seal(plaintext, aad: CardDataEnvelope.header(enc: sender.encapsulatedKey, ciphertextCount: 916))
}
let seal = microseconds((cpuNow() - sealStart) / reads)
// The floor of any P-256 HPKE seal: one key generation and one ECDH, through the same public API, same run.
let floorStart = cpuNow()
for _ in 0..<reads { _ = try P256.PrivateKey().sharedSecret(with: processorKey) }
let floor = microseconds((cpuNow() - floorStart) / reads)
print(
    String(
        format: "\nHPKE envelope seal alone (900-byte plaintext): %.1f µs CPU; P-256 key generation + ECDH: %.1f µs;"
            + " seal / that floor = %.2f",
        seal,
        floor,
        seal / floor
    )
)
// What a read seals: envelope v2, HPKE auth mode with the reader key (RFC 9180 §5.1.3), whose KEM adds a second
// ECDH, DH(skS, pkR), between the reader key and the processor key; its floor is one key generation and two ECDH.
// A read prepares the two keys once per service (HPKE.AuthenticatedSenderKeys keeps DH(skS, pkR)), so what it pays
// per envelope is one key generation and one ECDH: the floor of the plain seal above.
let readerKey = try P256.PrivateKey()
let envelopeKeys = try HPKE.AuthenticatedSenderKeys(recipientKey: processorKey, senderKey: readerKey)
let authStart = cpuNow()
for _ in 0..<reads {
    var sender = try HPKE.Sender(keys: envelopeKeys, info: CardDataEnvelope.authenticatedInfo)
    _ = try sender.seal(
        plaintext,
        aad: CardDataEnvelope.authenticatedHeader(
            enc: sender.encapsulatedKey,
            senderKeyID: ReaderKeyStore.keyID(of: readerKey.publicKey),
            ciphertextCount: 916
        )
    )
}
let authSeal = microseconds((cpuNow() - authStart) / reads)
let staticStart = cpuNow()
for _ in 0..<reads { _ = try readerKey.sharedSecret(with: processorKey) }
let staticDH = microseconds((cpuNow() - staticStart) / reads)
print(
    String(
        format: "HPKE auth-mode seal (envelope v2, what a read does, keys prepared once): %.1f µs CPU; its floor,"
            + " key generation + ECDH: %.1f µs; seal / floor = %.2f; DH(reader key, processor key), computed once"
            + " per service instead of per envelope: %.1f µs",
        authSeal,
        floor,
        authSeal / floor,
        staticDH
    )
)
