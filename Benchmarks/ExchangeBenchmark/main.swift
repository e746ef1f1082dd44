// Kernel overhead per APDU exchange on the simulator, air time off.
//
// Baseline (same process): the virtual card answering the same command N times when called directly — the
// work any host of the card must do. Measured: the same N exchanges sent from inside a kernel tap over the
// simulator's `CardChannel`, once with raw `transmit` and once through Core's `transceive` (61xx/6Cxx
// handling). The difference per APDU is what the kernel, the transport actor hop and the APDU types cost.
// Also: a whole identity tap (lease, card, SELECT PPSE, release) per second.
//
// Run: swift run -c release ExchangeBenchmark [exchanges]

import IdentityCapability
import ProximaCardEmulator
import ProximaCore
import ProximaKernel
import SimulatorTransport

let exchanges = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 200_000
let selectPPSE: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x0E] + Array("2PAY.SYS.DDF01".utf8) + [0x00]
let card = try CardProfiles.load(contentsOf: "Config/cards/identity-visa-like.json")

func elapsed(
    isolation: isolated (any Actor)? = #isolation,
    _ body: () async throws -> Void
) async rethrows -> Duration {
    let start = ContinuousClock.now
    try await body()
    return ContinuousClock.now - start
}

func perOperation(_ d: Duration, _ n: Int) -> Double {
    let (s, atto) = d.components
    return (Double(s) * 1e9 + Double(atto) / 1e9) / Double(n)
}

// Baseline: the card alone.
var direct = card
var sink = 0
let baselineStart = ContinuousClock.now
do {
    for _ in 0..<exchanges { sink &+= direct.respond(to: selectPPSE).count }
}
let baseline = ContinuousClock.now - baselineStart

// The kernel over the simulator.
let configuration = SimulatorConfiguration(
    airTime: false,
    readers: [.init(id: "bench", cards: [card], arrival: .immediate)]
)
var registry = PluginRegistry()
registry.register(
    TransportType(name: "bench-simulator", summary: "benchmark") { context in
        SimulatorTransport(id: context.id, configuration: configuration)
    }
)
let manifest = Manifest(
    schemaVersion: 1,
    sourcePath: nil,
    baseDirectory: ".",
    dataDirectory: "/tmp",
    plugins: [
        PluginEntry(
            id: "sim",
            type: "bench-simulator",
            enabled: true,
            load: .builtin,
            configuration: .object([]),
            path: "plugins[0]"
        )
    ],
    lanes: [LaneConfiguration(id: "lane", readerIDs: ["bench"])],
    capabilities: [:],
    warnings: [],
    declaredReaders: []
)
let kernel = Kernel(manifest: manifest, registry: registry)
let command = try CommandAPDU(bytes: selectPPSE)

let (raw, wrapped, taps) = try await kernel.withRunning { kernel in
    await kernel.waitForReaders(count: 1)
    let n = exchanges
    let raw = try await kernel.tap(lane: "lane") { channel, _ in
        try await elapsed { for _ in 0..<n { _ = try await channel.transmit(command) } }
    }
    let wrapped = try await kernel.tap(lane: "lane") { channel, _ in
        try await elapsed { for _ in 0..<n { _ = try await channel.transceive(command) } }
    }
    let tapCount = max(1, n / 20)
    let tapTime = try await elapsed {
        for _ in 0..<tapCount {
            _ = try await kernel.tap(lane: "lane") { channel, context in
                try await CardIdentityCapability().run(.init(), on: channel, context: context)
            }
        }
    }
    return (raw, wrapped, Double(tapCount) / (perOperation(tapTime, 1) / 1e9))
}

let base = perOperation(baseline, exchanges)
let viaTransmit = perOperation(raw, exchanges)
let viaTransceive = perOperation(wrapped, exchanges)
print("exchanges: \(exchanges) (checksum \(sink % 7))")
print(String(format: "baseline  card.respond directly      %8.0f ns/APDU", base))
print(
    String(
        format: "kernel    channel.transmit           %8.0f ns/APDU  ratio %5.2f  overhead %6.2f µs/APDU (goal ≤ 5)",
        viaTransmit,
        viaTransmit / base,
        (viaTransmit - base) / 1000
    )
)
print(
    String(
        format: "kernel    channel.transceive (61xx)  %8.0f ns/APDU  ratio %5.2f  overhead %6.2f µs/APDU",
        viaTransceive,
        viaTransceive / base,
        (viaTransceive - base) / 1000
    )
)
print(String(format: "whole identity taps (lease, card, SELECT PPSE, release): %.0f taps/s", taps))
