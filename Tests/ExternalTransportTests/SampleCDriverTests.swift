import ExternalTransport
import Foundation
import ProximaCore
import ProximaKernel
import Testing

/// The C sample driver `Examples/Drivers/c/sample_card_driver.c`, compiled with `cc` by the test.
@Suite("External transport: the C sample driver", .serialized, .timeLimit(.minutes(3)))
struct SampleCDriverTests {
    static let source = packageRoot + "/Examples/Drivers/c/sample_card_driver.c"

    /// Compiles the sample into a fresh folder; returns the executable's path.
    static func compile() throws -> String {
        let directory = NSTemporaryDirectory() + "proxima-c-driver-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let output = directory + "/sample_card_driver"
        let compiler = Process()
        compiler.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        compiler.arguments = ["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", output, source]
        try compiler.run()
        compiler.waitUntilExit()
        try #require(compiler.terminationStatus == 0, "cc failed on \(source)")
        return output
    }

    @Test("its reader joins the pool; APDUs reach its card; an unsupported control request is answered as such")
    func servesReader() async throws {
        let executable = try Self.compile()
        defer { try? FileManager.default.removeItem(atPath: (executable as NSString).deletingLastPathComponent) }
        let captured = Captured()
        let registry = try registry(capturing: captured)
        let text = """
            { "schemaVersion": 1,
              "plugins": [ { "id": "c", "type": "external", "config": { "command": \(quoted(executable)) } } ],
              "lanes": [ { "id": "ext", "readerNames": ["Proxima C sample reader"] } ] }
            """
        let manifest = try Manifest.parse(Array(text.utf8), baseDirectory: configDirectory, registry: registry)
        try await withKernel(manifest, registry: registry) { kernel in
            try await waitUntil("the C driver's reader is idle", on: kernel) {
                await state(of: "c/0", in: kernel) == .idle
            }
            let (challenge, select, uid, controlCode, hops) = try await kernel.tap(
                lane: "ext",
                options: TapOptions(timeout: .seconds(20))
            ) { channel, _ in
                let challenge = try await channel.transmit(
                    try CommandAPDU(cla: 0, ins: 0x84, p1: 0, p2: 0, expectedLength: 8)
                )
                let select = try await channel.transmit(
                    try CommandAPDU(cla: 0, ins: 0xA4, p1: 4, p2: 0, data: [0xA0, 0, 0, 0, 3, 0x10, 0x10])
                )
                let external = try #require(channel as? ExternalCardChannel)
                let code = await errorCode { try await external.control(code: 0x31_36_B0, data: [1]) }
                // The kernel runs the tap on the connection's thread: each answer resumes it there, no hop.
                let before = external.linkStatistics
                for _ in 0..<20 { _ = try await channel.transmit(try CommandAPDU(cla: 0, ins: 0x84, p1: 0, p2: 0)) }
                let after = external.linkStatistics
                let hops = (
                    elsewhere: after.jobsFromElsewhere - before.jobsFromElsewhere,
                    thread: after.jobsFromThread - before.jobsFromThread
                )
                return (challenge.bytes, select.status, channel.uid, code, hops)
            }
            #expect(hops.elsewhere == 0, "a transmit resumed the tap from another thread")
            #expect(hops.thread >= 20, "the answers resumed the tap on the connection's thread")
            #expect(challenge == [1, 2, 3, 4, 5, 6, 7, 8, 0x90, 0x00])
            #expect(select == .success)
            #expect(uid == [0x04, 0xC0, 0xFF, 0xEE])
            #expect(controlCode == .unsupported)
        }
        #expect(captured.log.contains("driver: c-sample: ready"), "\(captured.log)")
        #expect(captured.transport?.diagnostics.faults == [])
        Leaks.expectNone(from: captured.transport)
    }
}
