import Foundation
import LibNFCTransport
import ProximaCore
import Testing

extension LibNFCLiveTests {
    // Nested in the serialized libnfc suite: a killed emulator leaves its link pointing at a pty number the kernel may
    // give the next emulator, so no other emulator may start while this one is down.
    /// `proxima cardsim --pn532` as a separate process, killed with SIGKILL as a crash would: libnfc's `pn532_uart`
    /// driver sees the terminal die, the reader is faulted, and it recovers once a new emulator serves the same link.
    @Suite(
        "libnfc transport against a proxima cardsim --pn532 process",
        .enabled(if: CardsimProcess.executable != nil),
        .timeLimit(.minutes(1))
    )
    struct CardsimProcessTests {
        @Test("the emulator process killed with SIGKILL: fault, then recovered when it is started again")
        func emulatorProcessKilled() async throws {
            let link = FileManager.default.temporaryDirectory.appendingPathComponent(
                "proxima-cardsim-\(UUID().uuidString)"
            )
            .path
            // SIGKILL leaves the link behind, as a crash would.
            defer { try? FileManager.default.removeItem(atPath: link) }
            var emulator = try CardsimProcess(link: link)
            #expect(emulator.connstring == "pn532_uart:" + link)
            let nfc = LibNFCTransport(
                id: "nfc",
                configuration: LibNFCConfiguration(devices: [emulator.connstring], pollPeriod: .milliseconds(20))
            )
            let reader = nfc.readerID(forConnstring: emulator.connstring)
            let log = EventLog()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await nfc.run() }
                group.addTask { for await event in nfc.events { log.record(event) } }
                try await log.wait(for: "card present") { $0 == .cardPresent(reader) }
                emulator.kill()
                try await log.wait(for: "fault") {
                    if case .fault(reader, _) = $0 { return true }
                    return false
                }
                let faulted = log.count
                emulator = try CardsimProcess(link: link)
                try await log.wait(from: faulted - 1, for: "recovered") { $0 == .recovered(reader) }
                let channel = try await nfc.openChannel(to: reader)
                #expect(try await channel.transmit(selectPPSE).status == .success)
                await channel.close()
                group.cancelAll()
            }
            emulator.kill()
        }
    }
}

/// A `proxima cardsim --pn532 --link PATH --card Config/cards/pay-visa-qvsdc.json` child process.
struct CardsimProcess {
    /// The `proxima` binary built beside the test bundle, if there is one.
    static let executable: URL? = {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("proxima")
        let debug = URL(fileURLWithPath: configDirectory).deletingLastPathComponent()
            .appendingPathComponent(".build/debug/proxima")
        return [beside, debug].first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    let process = Process()
    /// The first line the emulator printed.
    let connstring: String

    init(link: String) throws {
        guard let executable = Self.executable else { throw Timeout(description: "no proxima binary") }
        process.executableURL = executable
        process.arguments = [
            "cardsim", "--pn532", "--link", link, "--card", configDirectory + "/cards/pay-visa-qvsdc.json",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The connstring line comes first, once the terminal and the link exist.
        var line: [UInt8] = []
        let handle = output.fileHandleForReading
        while !line.contains(0x0A) {
            let chunk = handle.availableData
            guard !chunk.isEmpty else { break }
            line += chunk
        }
        connstring = String(decoding: line.prefix { $0 != 0x0A }, as: UTF8.self)
    }

    /// SIGKILL, and wait for the process to be gone.
    func kill() {
        guard process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
