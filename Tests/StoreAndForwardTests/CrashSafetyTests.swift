import Foundation
import ProximaTestSupport
import StoreAndForwardCapability
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A child process storing reads from 8 concurrent storers (`StoreCrashWriter`, through the store's group commit,
/// making and resetting batches as it goes) is killed with SIGKILL at random points, 200 times; after each kill the
/// store is opened afresh, every read the child acknowledged is there exactly once, the active batch (if any) is
/// whole and verifies, each session's read count equals its stored reads, and `PRAGMA integrity_check` says ok. `scripts/store-soak.sh` runs more kills
/// (`PROXIMA_STORE_KILLS`).
@Suite struct CrashSafetyTests {
    static let writer = PackageFiles.root + "/.build/debug/StoreCrashWriter"

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: writer), "needs .build/debug/StoreCrashWriter"))
    func everyAcknowledgedReadSurvivesSIGKILL() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let kills = Int(ProcessInfo.processInfo.environment["PROXIMA_STORE_KILLS"] ?? "") ?? 200
        var acknowledged: [String] = []
        var batchesChecked = 0
        for round in 0..<kills {
            // Blocking pipe reads and the wait run on a thread of their own, off the cooperative pool.
            let target = Int.random(in: 0...8)
            let delay = UInt32.random(in: 0...2000)
            let path = directory.path
            let acks = try await onThread {
                try KilledWriter.run(Self.writer, directory: path, acks: target, delay: delay)
            }
            acknowledged += acks

            // The store as the next process sees it.
            let store = try ReadStore.unshared(directory: path, readerIdentifier: "crash-writer", now: Date())
            #expect(try await store.integrityCheck() == ["ok"], "round \(round)")
            let rows = try await store.rows()
            var counts: [String: Int] = [:]
            for row in rows { counts[row.record.id, default: 0] += 1 }
            let missing = acknowledged.filter { counts[$0] != 1 }
            #expect(missing.isEmpty, "round \(round): \(missing.count) acknowledged reads missing or doubled")
            if let batch = try await store.activeBatch() {
                batchesChecked += 1
                let container = try BatchContainer.parse(batch.container)
                try container.verify()
                #expect(try BatchContainer.digest(batch.container) == batch.digest)
                #expect(
                    rows.filter { $0.batchID == batch.id }.map(\.record.id) == container.entries.map(\.record.id),
                    "round \(round): the batch's rows are not its container's reads (a torn batch)"
                )
                #expect(batch.count == container.entries.count)
            }
            // A session's read count moves in the transactions that store its reads: never torn from them.
            for session in Set(rows.map(\.session)) {
                let stored = rows.filter { $0.session == session }.count
                #expect(
                    try await store.session(session)?.readCount == stored,
                    "round \(round): session \(session) counts other than its \(stored) stored reads"
                )
            }
            await store.close()
            if !missing.isEmpty { break }
        }
        #expect(acknowledged.count > kills / 2, "the writer acknowledged \(acknowledged.count) reads in \(kills) runs")
        #expect(batchesChecked > 0, "no kill left an active batch to check")
    }
}

/// One run of the writer: start it, read `acks` acknowledgement lines, wait `delay` µs, SIGKILL it, collect the
/// acknowledgements already in the pipe (written after their commit returned), reap it.
enum KilledWriter {
    struct StartFailure: Error {}

    static func run(_ writer: String, directory: String, acks target: Int, delay: UInt32) throws -> [String] {
        let pipe = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: writer)
        process.arguments = [directory]
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try? pipe.fileHandleForWriting.close()
        let lines = LineReader(pipe.fileHandleForReading.fileDescriptor)
        var acknowledged: [String] = []
        var seen = 0
        while seen < target, let line = lines.next() {
            if line.hasPrefix("ack ") { acknowledged.append(String(line.dropFirst(4))) }
            seen += 1
        }
        usleep(delay)
        kill(process.processIdentifier, SIGKILL)
        // Reaped (without Foundation's polling wait), the child has written all it ever will: what is left is in
        // the pipe. Drain it without blocking rather than wait for end of file, which never comes while another
        // process (one spawned by a test running beside this one) has inherited the pipe's write end.
        var status: Int32 = 0
        while waitpid(process.processIdentifier, &status, 0) < 0 && errno == EINTR {}
        let descriptor = pipe.fileHandleForReading.fileDescriptor
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        while let line = lines.next() {
            if line.hasPrefix("ack ") { acknowledged.append(String(line.dropFirst(4))) }
        }
        return acknowledged
    }
}

/// Lines from a file descriptor, read(2) until end of file (or, on a non-blocking descriptor, until it is empty).
final class LineReader {
    private let descriptor: Int32
    private var buffer: [UInt8] = []

    init(_ descriptor: Int32) { self.descriptor = descriptor }

    func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            buffer += chunk[..<count]
        }
    }
}

/// Runs `work` on a new thread and returns (or throws) its result.
func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.start()
    }
}
