import ExternalTransport
import Foundation
import ProximaCore
import ProximaCrypto
import ProximaKernel
import Testing

/// The External transport against a real child process (the Python test driver) that misbehaves in every way the
/// supervisor must survive.
@Suite("External transport: supervision of a misbehaving driver", .serialized, .timeLimit(.minutes(3)))
struct DriverSupervisionTests {
    struct Misbehaviour: Sendable, CustomTestStringConvertible {
        var name: String
        var arguments: [String]
        var kind: DriverFault.Kind
        /// Whether a tap sets it off (else it happens at start, before the reader is usable).
        var triggeredByTap: Bool
        var testDescription: String { name }
    }

    static let misbehaviours: [Misbehaviour] = [
        // Request 1 is the tap's connect, request 2 its transmit.
        Misbehaviour(name: "crash at a call", arguments: ["--crash-at", "2"], kind: .exited, triggeredByTap: true),
        Misbehaviour(name: "hang", arguments: ["--hang-at", "2"], kind: .hung, triggeredByTap: true),
        Misbehaviour(name: "garbage", arguments: ["--garbage-at", "2"], kind: .malformed, triggeredByTap: true),
        Misbehaviour(
            name: "oversized frame",
            arguments: ["--oversized-at", "2"],
            kind: .oversized,
            triggeredByTap: true
        ),
        Misbehaviour(
            name: "answer to an unknown id",
            arguments: ["--unknown-id-at", "2"],
            kind: .lied,
            triggeredByTap: true
        ),
        Misbehaviour(name: "flood", arguments: ["--flood"], kind: .flooded, triggeredByTap: false),
        Misbehaviour(name: "exit at start", arguments: ["--exit-at-start"], kind: .exited, triggeredByTap: false),
        Misbehaviour(
            name: "wrong protocol version",
            arguments: ["--protocol", "2.0"],
            kind: .refused,
            triggeredByTap: false
        ),
    ]

    static func marker() -> String {
        NSTemporaryDirectory() + "proxima-driver-once-\(UUID().uuidString)"
    }

    @Test(
        "the kernel keeps serving the simulator, and the driver's reader comes back after a restart",
        arguments: misbehaviours
    )
    func misbehaviourIsSurvived(_ misbehaviour: Misbehaviour) async throws {
        let once = Self.marker()
        defer { try? FileManager.default.removeItem(atPath: once) }
        let captured = Captured()
        let registry = try registry(capturing: captured)
        let manifest = try harnessManifest(
            arguments: [testDriver] + misbehaviour.arguments + ["--once", once, "--grandchild"],
            registry: registry
        )
        let reader: ReaderID = "ext/r0"
        try await withKernel(manifest, registry: registry) { kernel in
            if misbehaviour.triggeredByTap {
                try await waitUntil("the driver's reader is idle", on: kernel) {
                    await state(of: reader, in: kernel) == .idle
                }
                #expect(await errorCode { try await challenge(kernel) } == .readerVanished)
            }
            // The simulator serves throughout.
            #expect(try await selectOnSimulator(kernel) == .success)
            try await waitUntil("the restarted driver's reader is idle", on: kernel) {
                let sessions = captured.transport?.diagnostics.sessions ?? 0
                let readerState = await state(of: reader, in: kernel)
                return sessions >= 2 && readerState == .idle
            }
            #expect(try await challenge(kernel) == [1, 2, 3, 4, 5, 6, 7, 8, 0x90, 0x00])
            #expect(try await selectOnSimulator(kernel) == .success)
        }
        let diagnostics = try #require(captured.transport?.diagnostics)
        #expect(diagnostics.faults.map(\.kind) == [misbehaviour.kind], "\(diagnostics.faults)")
        #expect(diagnostics.sessions == 2)
        #expect(diagnostics.breakerOpen == false)
        Leaks.expectNone(from: captured.transport)
        #expect(Leaks.processes(matching: "sleep 1000") == [], "a driver's child outlived it")
        #expect(Leaks.processes(matching: once) == [], "a driver outlived the kernel")
    }

    @Test("a driver that keeps failing opens the breaker: its reader stays out, faulted, the simulator serves")
    func breakerOpens() async throws {
        let captured = Captured()
        let registry = try registry(capturing: captured)
        let manifest = try harnessManifest(arguments: [testDriver, "--flood"], registry: registry)
        let reader: ReaderID = "ext/r0"
        let events = try await withKernel(manifest, registry: registry) { kernel in
            let events = kernel.events.subscribe(bufferSize: 4096)
            try await waitUntil("the breaker is open", on: kernel) {
                captured.transport?.diagnostics.breakerOpen == true
            }
            #expect(try await selectOnSimulator(kernel) == .success)
            #expect(await state(of: reader, in: kernel) == .vanished)
            kernel.events.finish()
            var faults: [String] = []
            for await event in events {
                if case .readerFaulted(let reason) = event.kind, event.reader == reader { faults.append(reason) }
            }
            return faults
        }
        let diagnostics = try #require(captured.transport?.diagnostics)
        // Three failures in the window (the manifest's breaker.failures), then no fourth start while open.
        #expect(diagnostics.sessions == 3)
        #expect(diagnostics.faults.map(\.kind) == [.flooded, .flooded, .flooded])
        #expect(diagnostics.breakerOpenings == 1)
        #expect(events.count == 1)
        #expect(events.first?.contains("circuit breaker open") == true, "\(events)")
        Leaks.expectNone(from: captured.transport)
    }

    @Test("the driver's standard error reaches the log with long hex runs masked")
    func standardErrorIsLoggedMasked() async throws {
        let captured = Captured()
        let registry = try registry(capturing: captured)
        // A TEST card number (Mastercard test range); it must not reach the log.
        let manifest = try harnessManifest(
            arguments: [testDriver, "--stderr", "saw card 5413330089600010 with SW 9000"],
            registry: registry
        )
        try await withKernel(manifest, registry: registry) { kernel in
            try await waitUntil("the driver's reader is idle", on: kernel) {
                await state(of: "ext/r0", in: kernel) == .idle
            }
            #expect(try await challenge(kernel) == [1, 2, 3, 4, 5, 6, 7, 8, 0x90, 0x00])
        }
        let log = captured.log
        #expect(log.contains("driver: saw card [16 hex digits masked] with SW 9000"), "\(log)")
        #expect(!log.joined().contains("5413330089600010"))
        #expect(log.contains { $0.contains("driver test-driver 0.1 started") })
    }

    @Test("a group-writable executable is not started; a wrong sha256 pin is refused, the right one accepted")
    func executableChecks() async throws {
        let directory = NSTemporaryDirectory() + "proxima-driver-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let copy = directory + "/test_driver.py"
        try FileManager.default.copyItem(atPath: testDriver, toPath: copy)
        let digest = try SHA256.hash(Array(try Data(contentsOf: URL(fileURLWithPath: copy)))).hexString

        func firstFault(mode: Int, pin: String) async throws -> (DriverFault?, Int) {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: copy)
            let captured = Captured()
            let registry = try registry(capturing: captured)
            let manifest = try harnessManifest(
                command: copy,
                arguments: [],
                extraConfig: #", "sha256": "\#(pin)""#,
                registry: registry
            )
            try await withKernel(manifest, registry: registry) { kernel in
                try await waitUntil("the driver started or was refused", on: kernel, within: .seconds(10)) {
                    let refused = !(captured.transport?.diagnostics.faults.isEmpty ?? true)
                    let readerState = await state(of: "ext/r0", in: kernel)
                    return refused || readerState == .idle
                }
            }
            let diagnostics = try #require(captured.transport?.diagnostics)
            return (diagnostics.faults.first, diagnostics.sessions)
        }

        let wrongPin = String(repeating: "0", count: 64)
        let (writable, writableSessions) = try await firstFault(mode: 0o775, pin: digest)
        #expect(writable?.kind == .notStarted)
        #expect(
            writable?.detail.contains("writable by group or others (mode 775)") == true,
            "\(String(describing: writable))"
        )
        #expect(writableSessions == 0)

        let (pinned, pinnedSessions) = try await firstFault(mode: 0o755, pin: wrongPin)
        #expect(pinned?.kind == .notStarted)
        #expect(pinned?.detail.contains("not the pinned") == true, "\(String(describing: pinned))")
        #expect(pinnedSessions == 0)

        let (none, sessions) = try await firstFault(mode: 0o755, pin: digest)
        #expect(none == nil)
        #expect(sessions == 1)
    }
}

@Suite("External transport: readers a driver plugs in and out", .serialized, .timeLimit(.minutes(3)))
struct DriverHotPlugTests {
    /// Sends control `code` on the driver's first reader (the test driver turns codes into reader events).
    static func control(_ kernel: Kernel, code: Int64) async throws -> [UInt8] {
        try await kernel.tap(lane: "ext", options: TapOptions(reader: "ext/r0", timeout: .seconds(20))) { channel, _ in
            let external = try #require(channel as? ExternalCardChannel)
            return try await external.control(code: code, data: [0xC0, 0xDE])
        }
    }

    @Test("a reader that appears joins the lane and serves taps; one that vanishes leaves; a lie restarts the driver")
    func hotPlug() async throws {
        let captured = Captured()
        let registry = try registry(capturing: captured)
        let manifest = try harnessManifest(arguments: [testDriver], registry: registry)
        try await withKernel(manifest, registry: registry) { kernel in
            try await waitUntil("the driver's reader is idle", on: kernel) {
                await state(of: "ext/r0", in: kernel) == .idle
            }
            #expect(try await Self.control(kernel, code: 1) == [0xC0, 0xDE])
            try await waitUntil("the plugged reader is idle", on: kernel) {
                await state(of: "ext/r9", in: kernel) == .idle
            }
            let lanes = await kernel.snapshot().readers.first { $0.info.id == "ext/r9" }?.lanes
            #expect(lanes == ["ext"])
            let served = try await kernel.tap(
                lane: "ext",
                options: TapOptions(reader: "ext/r9", timeout: .seconds(20))
            ) { channel, context in
                let response = try await channel.transmit(
                    try CommandAPDU(cla: 0, ins: 0x84, p1: 0, p2: 0, expectedLength: 8)
                )
                return (response.bytes, context.reader)
            }
            #expect(served.0 == [1, 2, 3, 4, 5, 6, 7, 8, 0x90, 0x00])
            #expect(served.1 == "ext/r9")

            _ = try await Self.control(kernel, code: 2)
            try await waitUntil("the pulled reader is gone", on: kernel) {
                await state(of: "ext/r9", in: kernel) == .vanished
            }
            #expect(captured.transport?.diagnostics.faults == [])

            // The driver answers the call right after the lie; whether the answer or the restart comes first is a race,
            // so only the restart is checked.
            _ = try? await Self.control(kernel, code: 3)
            try await waitUntil("the lying driver was restarted", on: kernel) {
                let restarted = (captured.transport?.diagnostics.sessions ?? 0) >= 2
                let readerState = await state(of: "ext/r0", in: kernel)
                return restarted && readerState == .idle
            }
        }
        let faults = try #require(captured.transport?.diagnostics.faults)
        #expect(faults.map(\.kind) == [.lied])
        #expect(faults.first?.detail.contains(#"cardPresent for reader "ext/nope""#) == true, "\(faults)")
        Leaks.expectNone(from: captured.transport)
    }
}
