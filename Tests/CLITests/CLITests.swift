import Foundation
import ProximaTestSupport
import Testing

/// The `proxima` executable as a user runs it: exit codes, stdout and stderr.
@Suite struct CLITests {
    static let packageRoot = URL(fileURLWithPath: PackageFiles.root)

    /// The `proxima` binary built next to the test bundle.
    static var executable: URL {
        let buildDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let beside = buildDirectory.appendingPathComponent("proxima")
        if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        return packageRoot.appendingPathComponent(".build/debug/proxima")
    }

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Run {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = packageRoot
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes to the end before waiting, so a full pipe cannot block the child.
        let stdoutData = out.fileHandleForReading.readDataToEndOfFile()
        let stderrData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus,
            stdout: String(decoding: stdoutData, as: UTF8.self),
            stderr: String(decoding: stderrData, as: UTF8.self)
        )
    }

    @Test func configCheckPrintsLanesAndReaders() throws {
        let run = try Self.run(["config", "check", "Config/proxima.json"])
        #expect(run.status == 0)
        #expect(run.stdout.contains("Config/proxima.json: valid"))
        #expect(run.stdout.contains("lane-1"))
        #expect(run.stdout.contains("shared pool: spare-1"))
        #expect(run.stderr.isEmpty)
    }

    @Test func readersListsTheReaderOfAnExternalDriver() throws {
        let run = try Self.run(["readers", "--config", "Config/external-lanes.json"])
        #expect(run.status == 0, "\(run.stderr)")
        let line = run.stdout.split(separator: "\n").first { $0.hasPrefix("external/0 ") }
        #expect(line?.contains("Proxima vpcd reader 127.0.0.1:35990") == true, "\(run.stdout)")
        #expect(line?.split(separator: " ", omittingEmptySubsequences: true).contains("external") == true)
        #expect(line?.hasSuffix("idle") == true)
        #expect(run.stderr.contains("driver vpcd-reader 1.0 started"))
    }

    @Test func configCheckDefaultsToTheEnvironmentThenConfig() throws {
        let run = try Self.run(["config", "check"], environment: ["PROXIMA_CONFIG": "/nonexistent/proxima.json"])
        #expect(run.status == 3)
        #expect(run.stderr.contains("/nonexistent/proxima.json"))
    }

    @Test func brokenManifestListsEveryErrorOnStderrAndExits3() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("broken-\(UUID()).json")
        try Data(
            #"{"schemaVersion":1,"plugins":[{"id":"sim","type":"simulatr"}],"lanes":[{"id":"a","readers":[3]}],"x":1}"#
                .utf8
        ).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try Self.run(["config", "check", file.path])
        #expect(run.status == 3)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains("plugins[0].type: unknown transport type \"simulatr\""))
        #expect(run.stderr.contains("lanes[0].readers[0]:"))
        #expect(run.stderr.contains("x: unknown member"))
    }

    @Test(arguments: [["bogus"], ["demo", "--lanes", "x"], ["readers", "--nope"], ["config", "frobnicate"]])
    func usageErrorsExit2(arguments: [String]) throws {
        let run = try Self.run(arguments)
        #expect(run.status == 2)
        #expect(run.stderr.contains("proxima --help"))
    }

    @Test(arguments: ["config", "readers", "demo", "pay", "psp"])
    func everyCommandHasHelp(command: String) throws {
        let run = try Self.run([command, "--help"])
        #expect(run.status == 0)
        #expect(run.stdout.hasPrefix("USAGE: proxima \(command)"))
    }

    @Test func readersListsTheSimulatedReaders() throws {
        let run = try Self.run(["readers"])
        #expect(run.status == 0)
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("READER") == true)
        #expect(lines.count == 10)  // header + 8 payment readers + the ID desk's
        #expect(run.stdout.contains("spare-1"))
        #expect(run.stdout.contains("shared pool"))
    }

    @Test func demoServesEveryTapAndEndsWithASummary() throws {
        let run = try Self.run([
            "demo", "--lanes", "3", "--readers", "2", "--taps", "12", "--arrival-ms", "1", "--no-air-time",
        ])
        #expect(run.status == 0)
        #expect(run.stdout.hasPrefix("demo: payments on every lane"))
        let summary = try #require(run.stdout.components(separatedBy: "\n").first { $0.hasPrefix("all ") })
        let columns = summary.split(separator: " ", omittingEmptySubsequences: true)
        let served = try #require(Int(columns[1]))
        let failed = try #require(Int(columns[2]))
        #expect(served + failed == 12)  // every tap ended
        #expect(served > 0)
        // The virtual cards include a declining card and a malformed one: those are the only failures allowed.
        let reasons = columns.filter { $0.contains("×") }.map { $0.split(separator: "×").first.map(String.init) ?? "" }
        #expect(Set(reasons).isSubset(of: ["paymentCardDeclined", "cardReadFailed", "cardNotSupported"]))
        #expect(run.stdout.contains("lane-03"))
    }

    @Test func pspSandboxRoundTripsAPayment() throws {
        let token = try Self.run(["psp", "token"])
        #expect(token.status == 0)
        #expect(token.stdout.split(separator: ".").count == 3)  // a compact JWS
        let pay = try Self.run([
            "pay", "--lane", "lane-1", "--amount", "12.34", "--currency", "EUR",
            "--token", token.stdout.trimmingCharacters(in: .whitespacesAndNewlines),
        ])
        #expect(pay.status == 0, "\(pay.stderr)")
        #expect(pay.stdout.contains("outcome: success"))
        let envelope = try #require(pay.stdout.split(separator: "\n").last.map(String.init))
        let opened = try Self.run(["psp", "decrypt", envelope])
        #expect(opened.status == 0, "\(opened.stderr)")
        #expect(opened.stdout.contains("12.34 EUR"))
        #expect(opened.stdout.contains("9F02  000000001234"))
        #expect(opened.stdout.contains("(PAN masked)"))
    }

    /// `--amount` goes through the one amount parser before anything runs: a usage error naming the fix.
    @Test(arguments: [
        ("1.234", "USD", "has 3 decimals; USD has 2 minor-unit digits"),
        ("1,50", "EUR", "use a dot as the decimal separator"),
        ("12abc", "USD", "character 3 ('a') is not a digit"),
        ("1.5.0", "USD", "more than one dot"),
        ("1.0", "JPY", "JPY has no minor unit"),
    ])
    func payRefusesABadAmount(_ amount: String, _ currency: String, _ message: String) throws {
        let run = try Self.run(["pay", "--lane", "lane-1", "--amount", amount, "--currency", currency])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--amount: amount \"\(amount)\" \(currency): "), "\(run.stderr)")
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }

    @Test func pspReaderKeyPrintsThePublicKeyAndItsID() throws {
        let run = try Self.run(["psp", "reader-key"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
        let idLine = try #require(run.stdout.split(separator: "\n").last)
        #expect(idLine.hasPrefix("key id: ") && idLine.count == 8 + 64)
    }

    @Test func howtoPrintsWhatTheLaneDisplayGot() throws {
        let run = try Self.run(["howto", "--lane", "lane-1", "--language", "fr"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix("[lane-1] Payer sans contact\n"), "\(run.stdout)")
        #expect(run.stdout.contains("[lane-1] 1. Attendez que le lecteur"))
    }
}
