// Per-APDU overhead of the External transport (a driver in a child process, length-prefixed JSON on its stdio).
//
// Baseline (same process, same run): the same scripted card in-process behind `InProcessCardChannel`, answering
// GET CHALLENGE (00 84 00 00 08) with 01..08 9000. Measured: the same N exchanges over an `ExternalCardChannel` to
// the C sample driver (Examples/Drivers/c, compiled here with cc), whose card answers the same way, and to the Python
// test driver (Tests/ExternalTransportTests/Drivers/test_driver.py), to show what an interpreted driver adds. Each is
// timed as the kernel runs a tap (the body prefers the channel's executor: the driver connection's thread, which is
// then resumed inline by each answer) and, for the C driver, from a task on the cooperative pool (one more wake-up
// per APDU). The difference per APDU is what the External path costs: the frame written, two pipe writes, the driver's
// and the connection thread's wake-ups, parsing. Goal: at most 60 µs per APDU over the in-process card.
//
// Floor (same run): a frame-sized message (80 bytes) to `cat` and back over two pipes, blocking reads on this thread:
// what two process switches cost on this machine now; as a tap runs, the External path makes the same two (the
// driver, the connection's thread). A second floor: a task that writes a byte to a pipe and suspends, resumed by a
// thread blocked reading that pipe — the extra switch an APDU driven from the pool makes.
//
// Run from the package root: swift build -c release --product ExternalBenchmark && .build/release/ExternalBenchmark [N]

import ExternalTransport
import Foundation
import ProximaCardEmulator
import ProximaCore
import Synchronization

let exchanges = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 20_000
let challenge = try CommandAPDU(cla: 0, ins: 0x84, p1: 0, p2: 0, expectedLength: 8)
let expected: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8, 0x90, 0x00]

/// The card the C sample driver hosts, in Swift.
struct ChallengeCard: VirtualCard {
    var name: String { "challenge card" }
    var atr: [UInt8] { [0x3B, 0x80, 0x80, 0x01, 0x01, 0x01] }
    var ats: [UInt8] { [] }
    var uid: [UInt8] { [0x04, 0xC0, 0xFF, 0xEE] }
    var technology: CardTechnology { .iso14443A }
    mutating func respond(to command: [UInt8]) -> [UInt8] {
        if command.starts(with: [0x00, 0xA4]) { return [0x90, 0x00] }
        if command == [0x00, 0x84, 0x00, 0x00, 0x08] { return [1, 2, 3, 4, 5, 6, 7, 8, 0x90, 0x00] }
        return Array(command.prefix(4)) + [0x90, 0x00]
    }
}

func microseconds(_ duration: Duration, per count: Int) -> Double {
    let (seconds, attoseconds) = duration.components
    return (Double(seconds) * 1e6 + Double(attoseconds) / 1e12) / Double(count)
}

func run(_ channel: any CardChannel, count: Int) async throws -> Duration {
    for _ in 0..<min(count, 200) { _ = try await channel.transmit(challenge) }  // warm up
    let start = ContinuousClock.now
    for _ in 0..<count {
        let response = try await channel.transmit(challenge)
        guard response.bytes == expected else { throw ProximaError(.malformedData, "unexpected answer") }
    }
    return ContinuousClock.now - start
}

/// This process's CPU time so far (user + system, every thread; the driver's is its own process's).
func cpuTime() -> Duration {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    let user = Duration.seconds(usage.ru_utime.tv_sec) + .microseconds(usage.ru_utime.tv_usec)
    return user + .seconds(usage.ru_stime.tv_sec) + .microseconds(usage.ru_stime.tv_usec)
}

struct ExternalFigures {
    /// As the kernel runs a tap: the body prefers the channel's executor (the driver connection's thread).
    var tap: Duration
    var tapCPU: Duration
    /// From a task on the cooperative pool.
    var pool: Duration
    /// Jobs enqueued onto the connection's thread per APDU from elsewhere, and by itself, as a tap runs.
    var hops: Double
    var local: Double
}

/// N exchanges with the card on reader `reader` of the driver started by `command`, as a tap and from the pool.
func external(_ command: String, arguments: [String] = [], reader: String, count: Int) async throws -> ExternalFigures {
    let transport = ExternalTransport(
        id: "bench",
        configuration: ExternalConfiguration(command: command, arguments: arguments, workingDirectory: "."),
        log: { _ in }
    )
    return try await withThrowingTaskGroup(of: ExternalFigures?.self) { group in
        group.addTask {
            try await transport.run()
            return nil
        }
        for await event in transport.events {
            if case .cardPresent = event { break }
        }
        let channel = try await transport.openChannel(
            to: transport.readerID(forDriverReader: reader),
            options: ConnectOptions()
        )
        let before = channel.linkStatistics
        let cpu = cpuTime()
        let tap = try await withTaskExecutorPreference(channel.preferredTaskExecutor) {
            try await run(channel, count: count)
        }
        let tapCPU = cpuTime() - cpu
        let after = channel.linkStatistics
        let pool = try await run(channel, count: count)
        await channel.close()
        group.cancelAll()
        let transmits = Double(count + min(count, 200))
        return ExternalFigures(
            tap: tap,
            tapCPU: tapCPU,
            pool: pool,
            hops: Double(after.jobsFromElsewhere - before.jobsFromElsewhere) / transmits,
            local: Double(after.jobsFromThread - before.jobsFromThread) / transmits
        )
    }
}

let directory = NSTemporaryDirectory() + "proxima-external-benchmark-\(getpid())"
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }
let driver = directory + "/sample_card_driver"
let compiler = Process()
compiler.executableURL = URL(fileURLWithPath: "/usr/bin/env")
compiler.arguments = ["cc", "-O2", "-o", driver, "Examples/Drivers/c/sample_card_driver.c"]
try compiler.run()
compiler.waitUntilExit()
guard compiler.terminationStatus == 0 else { fatalError("cc failed on Examples/Drivers/c/sample_card_driver.c") }

/// Round trips of an 80-byte message through `cat` over pipes.
func pipeFloor(count: Int) throws -> Duration {
    let cat = Process()
    cat.executableURL = URL(fileURLWithPath: "/bin/cat")
    let input = Pipe()
    let output = Pipe()
    cat.standardInput = input
    cat.standardOutput = output
    try cat.run()
    let writeFD = input.fileHandleForWriting.fileDescriptor
    let readFD = output.fileHandleForReading.fileDescriptor
    var message = [UInt8](repeating: 0x41, count: 80)
    let start = ContinuousClock.now
    for _ in 0..<count {
        _ = message.withUnsafeBytes { write(writeFD, $0.baseAddress, $0.count) }
        var received = 0
        while received < message.count {
            let n = message.withUnsafeMutableBytes { read(readFD, $0.baseAddress! + received, $0.count - received) }
            guard n > 0 else { fatalError("cat ended") }
            received += n
        }
    }
    let elapsed = ContinuousClock.now - start
    try input.fileHandleForWriting.close()
    cat.waitUntilExit()
    return elapsed
}

/// A task resumed by a thread woken through a pipe, `count` times.
final class ResumeBox: @unchecked Sendable {
    /// Written by the task before it writes to the pipe, read by the thread after its read: ordered by the pipe.
    let continuation = Mutex<CheckedContinuation<Void, Never>?>(nil)
    var fds: [Int32] = [-1, -1]
}

func resumeFloor(count: Int) async -> Duration {
    let box = ResumeBox()
    _ = pipe(&box.fds)
    let thread = Thread {
        var byte: UInt8 = 0
        while read(box.fds[0], &byte, 1) == 1 {
            box.continuation.withLock { $0.take() }?.resume()
        }
    }
    thread.start()
    let start = ContinuousClock.now
    for _ in 0..<count {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            box.continuation.withLock { $0 = continuation }
            var byte: UInt8 = 1
            _ = write(box.fds[1], &byte, 1)
        }
    }
    let elapsed = ContinuousClock.now - start
    close(box.fds[1])
    return elapsed
}

let floor = try pipeFloor(count: exchanges)
let resume = await resumeFloor(count: exchanges)
let inProcess = try await run(InProcessCardChannel(card: ChallengeCard(), recordsExchanges: false), count: exchanges)
let viaC = try await external(driver, reader: "0", count: exchanges)
let pythonCount = max(exchanges / 4, 1)
let viaPython = try await external(
    "python3",
    arguments: ["Tests/ExternalTransportTests/Drivers/test_driver.py"],
    reader: "r0",
    count: pythonCount
)

let load =
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3)
    .joined(separator: " ") ?? "?"
let base = microseconds(inProcess, per: exchanges)
let pipes = microseconds(floor, per: exchanges)
let resumed = microseconds(resume, per: exchanges)
let c = microseconds(viaC.tap, per: exchanges)
let cPool = microseconds(viaC.pool, per: exchanges)
let python = microseconds(viaPython.tap, per: pythonCount)
print("exchanges: \(exchanges) (Python driver: \(pythonCount)), GET CHALLENGE, one card; load average \(load)")
print(String(format: "in-process card (baseline):    %8.2f µs/APDU", base))
print(String(format: "pipe round trip to cat (floor):%8.2f µs", pipes))
print(String(format: "thread wake + resume (floor):  %8.2f µs", resumed))
print(String(format: "External, C driver, as a tap:  %8.2f µs/APDU  (%.0f× baseline)", c, c / base))
print(String(format: "External, C driver, from pool: %8.2f µs/APDU", cPool))
print(String(format: "External, Python driver (tap): %8.2f µs/APDU  (%.0f× baseline)", python, python / base))
print(String(format: "External overhead per APDU:    %8.2f µs (C driver, as a tap; goal ≤ 60 µs)", c - base))
print(String(format: "  over the pipe floor:         %8.2f µs (%.2f× the floor)", c - pipes, c / pipes))
print(String(format: "  from the pool:               %8.2f µs", cPool - base))
print(String(format: "  with a Python driver:        %8.2f µs", python - base))
print(String(format: "kernel-side CPU per APDU (tap):%8.2f µs", microseconds(viaC.tapCPU, per: exchanges)))
print(String(format: "hops onto the connection thread per APDU (tap): %.2f (%.2f stayed on it)", viaC.hops, viaC.local))
