// Per-APDU overhead of the libnfc transport against libnfc alone, on the PN532 emulator, in one run:
//
//     swift build -c release --product LibNFCBenchmark
//     .build/release/LibNFCBenchmark [apdus] [rounds]
//
// Two emulated PN532 boards (ProximaCardEmulator's PN532CardHost on pseudo-terminals) hold the same card profile,
// Config/cards/pay-visa-qvsdc.json. One is driven by a minimal client written directly on libnfc (nfc_open,
// nfc_initiator_init, nfc_initiator_select_passive_target, then nfc_initiator_transceive_bytes of SELECT PPSE), the
// other by the libnfc transport (LibNFCTransport.openChannel, then LibNFCCardChannel.transmit of the same APDU).
// `rounds` times, `apdus` APDUs on each, alternating which goes first. Printed: mean microseconds per APDU of each,
// the ratio transport/raw, and the microseconds the transport adds per APDU (goal: ratio ≤ 1.10, ≤ 50 µs added).
//
// The transport is measured as the kernel drives it: the tap's body runs with the channel's preferred task executor
// (the device's queue), so each transmit calls libnfc on that thread. The same loop from the cooperative pool (a hop
// onto the queue and back per APDU) is printed too.
//
// Besides wall time, the process's CPU time per APDU (CLOCK_PROCESS_CPUTIME_ID: libnfc, the emulator's thread and the
// transport together; the other board's emulator sleeps in poll meanwhile) is printed for each: on a loaded machine
// wall time mostly measures the scheduler, CPU time what each path costs.

import CNFC
import Foundation
import LibNFCTransport
import ProximaCardEmulator
import ProximaCore

struct Failure: Error, CustomStringConvertible {
    var description: String
}

let arguments = CommandLine.arguments.dropFirst()
let apdus = arguments.first.flatMap { Int($0) } ?? 500
let rounds = arguments.dropFirst().first.flatMap { Int($0) } ?? 10

let card = try CardProfiles.load(contentsOf: "Config/cards/pay-visa-qvsdc.json")
let rawHost = PN532CardHost(card: card)
let transportHost = PN532CardHost(card: card)
try rawHost.start()
try transportHost.start()
defer {
    rawHost.stop()
    transportHost.stop()
}

let selectPPSE: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x0E] + Array("2PAY.SYS.DDF01".utf8) + [0x00]
let command = try CommandAPDU(bytes: selectPPSE)

// MARK: libnfc alone

var context: OpaquePointer? = nil
nfc_init(&context)
guard let context, let device = nfc_open(context, rawHost.connstring) else {
    throw Failure(description: "nfc_open \(rawHost.connstring) failed")
}
guard nfc_initiator_init(device) == 0 else { throw Failure(description: "nfc_initiator_init failed") }
_ = nfc_device_set_property_bool(device, NP_INFINITE_SELECT, false)
var target = nfc_target()
guard nfc_initiator_select_passive_target(device, nfc_modulation(nmt: NMT_ISO14443A, nbr: NBR_106), nil, 0, &target) > 0
else { throw Failure(description: "no card on the raw board") }

/// Wall and process CPU time of one batch.
struct Sample {
    var wall = Duration.zero
    var cpu = Duration.zero

    static func += (lhs: inout Sample, rhs: Sample) {
        lhs.wall += rhs.wall
        lhs.cpu += rhs.cpu
    }

    static func processCPUTime() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }

    static func measure(_ body: () throws -> Void) rethrows -> Sample {
        let clock = ContinuousClock()
        let start = clock.now
        let cpu = processCPUTime()
        try body()
        return Sample(wall: clock.now - start, cpu: processCPUTime() - cpu)
    }

    static func measureAsync(_ body: () async throws -> Void) async rethrows -> Sample {
        let clock = ContinuousClock()
        let start = clock.now
        let cpu = processCPUTime()
        try await body()
        return Sample(wall: clock.now - start, cpu: processCPUTime() - cpu)
    }
}

func rawBatch(_ device: OpaquePointer) throws -> Sample {
    var receive = [UInt8](repeating: 0, count: 4096)
    return try Sample.measure { try rawLoop(device, &receive) }
}

func rawLoop(_ device: OpaquePointer, _ receive: inout [UInt8]) throws {
    for _ in 0..<apdus {
        let count = selectPPSE.withUnsafeBufferPointer { send in
            receive.withUnsafeMutableBufferPointer { buffer in
                nfc_initiator_transceive_bytes(
                    device,
                    send.baseAddress,
                    send.count,
                    buffer.baseAddress,
                    buffer.count,
                    2000
                )
            }
        }
        guard count >= 2, receive[Int(count) - 2] == 0x90 else { throw Failure(description: "raw APDU: \(count)") }
    }
}

// MARK: The transport

let transport = LibNFCTransport(
    id: "nfc",
    configuration: LibNFCConfiguration(devices: [transportHost.connstring], modulations: [.iso14443A])
)
let reader = transport.readerID(forConnstring: transportHost.connstring)

func transportBatch(_ channel: LibNFCCardChannel) async throws -> Sample {
    try await Sample.measureAsync {
        for _ in 0..<apdus {
            let response = try await channel.transmit(command)
            guard response.status == .success else { throw Failure(description: "transport APDU: \(response)") }
        }
    }
}

try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { try await transport.run() }
    let channel = try await transport.openChannel(to: reader)
    func onDeviceThread() async throws -> Sample {
        try await withTaskExecutorPreference(channel.preferredTaskExecutor) { try await transportBatch(channel) }
    }
    // Warm-up, then interleaved rounds.
    _ = try rawBatch(device)
    _ = try await onDeviceThread()
    _ = try await transportBatch(channel)
    var raw = Sample()
    var ours = Sample()
    var hopping = Sample()
    for round in 0..<rounds {
        if round.isMultiple(of: 2) {
            raw += try rawBatch(device)
            ours += try await onDeviceThread()
            hopping += try await transportBatch(channel)
        } else {
            hopping += try await transportBatch(channel)
            ours += try await onDeviceThread()
            raw += try rawBatch(device)
        }
    }
    let paths = channel.transmitPaths
    await channel.close()
    group.cancelAll()
    print("  transport APDUs called on the device's thread: \(paths.direct), hopped onto it: \(paths.hopped)")

    func microseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return (Double(seconds) * 1e6 + Double(attoseconds) / 1e12) / Double(apdus * rounds)
    }
    let rawPer = microseconds(raw.wall)
    let oursPer = microseconds(ours.wall)
    let hoppingPer = microseconds(hopping.wall)
    let (rawCPU, oursCPU, hoppingCPU) = (microseconds(raw.cpu), microseconds(ours.cpu), microseconds(hopping.cpu))
    print(
        "libnfc transport vs nfc_initiator_transceive_bytes alone, PN532 emulator, \(rounds) × \(apdus) SELECT PPSE each"
    )
    print("                      wall µs/APDU   CPU µs/APDU")
    print(String(format: "  raw libnfc          %9.1f     %9.1f", rawPer, rawCPU))
    print(
        String(
            format:
                "  libnfc transport    %9.1f     %9.1f   (tap body on the device's executor, as the kernel runs it)",
            oursPer,
            oursCPU
        )
    )
    print(
        String(
            format: "  from the pool       %9.1f     %9.1f   (a hop onto the device's queue and back per APDU)",
            hoppingPer,
            hoppingCPU
        )
    )
    print(
        String(
            format: "  ratio %.3f wall, %.3f CPU (goal ≤ 1.10), %+.1f µs wall added per APDU (goal ≤ 50)",
            oursPer / rawPer,
            oursCPU / rawCPU,
            oursPer - rawPer
        )
    )
    print(
        String(
            format: "  from the pool: ratio %.3f wall, %.3f CPU, %+.1f µs wall added",
            hoppingPer / rawPer,
            hoppingCPU / rawCPU,
            hoppingPer - rawPer
        )
    )
}
nfc_close(device)
nfc_exit(context)
