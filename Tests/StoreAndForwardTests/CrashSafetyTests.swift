import Foundation
import ProximaTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A child process storing reads in a loop (`StoreCrashWriter`, through the store's own commit path) is killed
/// with SIGKILL at random points, 200 times; after each kill the store is opened by a fresh process and every read
/// the child acknowledged is there exactly once, the active batch (if any) is whole and verifies, and
/// `PRAGMA integrity_check` says ok. `scripts/store-soak.sh` runs more kills.
@Suite struct CrashSafetyTests {
    static let writer = PackageFiles.root + "/.build/debug/StoreCrashWriter"

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: writer), "needs .build/debug/StoreCrashWriter"))
    func everyAcknowledgedReadSurvivesSIGKILL() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let kills = Int(ProcessInfo.processInfo.environment["PROXIMA_STORE_KILLS"] ?? "") ?? 200
        // Blocking pipe reads and waits run on a thread of their own, off the cooperative pool.
        let report = await onThread { CrashLoop(writer: Self.writer, directory: directory.path).run(kills: kills) }
        #expect(report.failures.isEmpty, "\(report.failures.prefix(5))")
        #expect(report.kills == kills)
        #expect(report.acknowledged > kills / 2, "the writer acknowledged \(report.acknowledged) reads in \(kills) runs")
        #expect(report.batchesSeen > 0, "no kill left an active batch to check")
    }
}

struct CrashReport: Sendable {
    var kills = 0
    var acknowledged = 0
    var batchesSeen = 0
    var failures: [String] = []
}

/// The kill loop: spawn, read acknowledgements, SIGKILL at a random point, check with a fresh process.
struct CrashLoop {
    let writer: String
    let directory: String

    func run(kills: Int) -> CrashReport {
        var report = CrashReport()
        var acknowledged: [String] = []
        for round in 0..<kills {
            let target = Int.random(in: 0...6)
            guard let child = Child(writer, [directory]) else {
                report.failures.append("round \(round): cannot start the writer")
                return report
            }
            var lines = 0
            while lines < target, let line = child.readLine() {
                if line.hasPrefix("ack ") { acknowledged.append(String(line.dropFirst(4))) }
                lines += 1
            }
            usleep(UInt32.random(in: 0...3000))
            kill(child.pid, SIGKILL)
            // Acknowledgements already in the pipe count: the child wrote them after its commit returned.
            while let line = child.readLine() {
                if line.hasPrefix("ack ") { acknowledged.append(String(line.dropFirst(4))) }
            }
            child.wait()
            report.kills += 1

            guard let checker = Child(writer, ["--check", directory]) else {
                report.failures.append("round \(round): cannot start the checker")
                return report
            }
            var stored: [String: Int] = [:]
            var integrity = ""
            while let line = checker.readLine() {
                let fields = line.split(separator: " ").map(String.init)
                switch fields.first {
                case "integrity": integrity = fields.dropFirst().joined(separator: " ")
                case "read" where fields.count >= 2: stored[fields[1], default: 0] += 1
                case "batch" where fields.count == 5:
                    report.batchesSeen += 1
                    if fields[2] != fields[3] || fields[4] != "true" {
                        report.failures.append("round \(round): torn batch \(line)")
                    }
                default: report.failures.append("round \(round): unexpected line \(line)")
                }
            }
            let status = checker.wait()
            if status != 0 { report.failures.append("round \(round): checker exited \(status)") }
            if integrity != "ok" { report.failures.append("round \(round): integrity_check says \(integrity)") }
            let missing = acknowledged.filter { stored[$0] != 1 }
            if !missing.isEmpty { report.failures.append("round \(round): \(missing.count) acknowledged reads missing") }
            if !report.failures.isEmpty { break }
        }
        report.acknowledged = acknowledged.count
        return report
    }
}

/// A child process with its stdout on a pipe (posix_spawn through Foundation's `Process`).
final class Child {
    let process = Process()
    let output: FileHandle
    private var buffer: [UInt8] = []

    var pid: pid_t { process.processIdentifier }

    init?(_ executable: String, _ arguments: [String]) {
        let pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = pipe
        process.standardError = FileHandle.standardError
        process.standardInput = FileHandle.nullDevice
        output = pipe.fileHandleForReading
        do { try process.run() } catch { return nil }
        try? pipe.fileHandleForWriting.close()
    }

    /// The next line, or `nil` at end of file.
    func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(output.fileDescriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            buffer += chunk[..<count]
        }
    }

    @discardableResult
    func wait() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Runs `work` on a new thread and returns its value.
func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: work()) }
        thread.stackSize = 1 << 20
        thread.start()
    }
}
