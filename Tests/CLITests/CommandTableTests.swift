import Foundation
import Testing

/// The command-line contract the command table gives every command: `-h`/`--help` at every level, `--config`
/// everywhere, usage errors that name the bad word and show the usage line, and one-line file errors.
@Suite struct CommandTableTests {
    /// Every command and subcommand of the tool (`[]` is the tool itself). `tableListsExactlyTheseCommands` fails
    /// when the table gains a command this list does not name, so each new command gets these tests too.
    static let commands: [[String]] = [
        [], ["config"], ["config", "check"], ["readers"], ["demo"], ["pay"], ["psp"], ["psp", "keygen"],
        ["psp", "token"], ["psp", "decrypt"], ["psp", "reader-key"], ["cardsim"], ["vas"], ["agent"], ["howto"],
        ["id"], ["help"],
        ["psp", "batch-open"], ["psp", "deletion-token"], ["store"], ["store", "status"], ["store", "batch"],
        ["store", "resolve"], ["store", "reset"], ["store", "decline"],
    ]
    static let groups: Set<[String]> = [[], ["config"], ["psp"], ["store"]]
    static var leaves: [[String]] { commands.filter { !groups.contains($0) } }

    static func invocation(_ path: [String]) -> String { (["proxima"] + path).joined(separator: " ") }

    static func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("proxima-cli-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        return folder
    }

    static func lines(_ text: String) -> [Substring] { text.split(separator: "\n") }

    // MARK: Help

    @Test(arguments: commands, ["-h", "--help"])
    func helpAtEveryLevel(path: [String], flag: String) throws {
        let run = try CLITests.run(path + [flag])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.isEmpty)
        if path.isEmpty {
            #expect(run.stdout.hasPrefix("proxima — "))
            #expect(run.stdout.contains("USAGE: proxima <command> [options]"))
            #expect(run.stdout.contains("EXIT CODES:"))
        } else {
            #expect(run.stdout.hasPrefix("USAGE: \(Self.invocation(path)) "))
        }
        if !Self.groups.contains(path) {
            // The options every command takes come from one declaration and appear in each command's help.
            #expect(run.stdout.contains("  --config FILE "))
            #expect(run.stdout.contains("  -h, --help "))
        }
    }

    @Test func tableListsExactlyTheseCommands() throws {
        var listed: Set<[String]> = []
        for group in Self.groups {
            let help = try CLITests.run(group + ["--help"]).stdout
            let section = help.components(separatedBy: "\n\n").first {
                $0.hasPrefix("COMMANDS:") || $0.hasPrefix("SUBCOMMANDS:")
            }
            // A label too long for its column puts the summary on the next line, indented further: skip that one.
            for line in Self.lines(try #require(section)).dropFirst() where !line.hasPrefix("   ") {
                // "  psp keygen|token|decrypt  The processor's side…": the label ends at two spaces.
                let label = try #require(line.dropFirst(2).components(separatedBy: "  ").first)
                let words = label.split(separator: " ").map(String.init)
                let name = try #require(words.first)
                listed.insert(group + [name])
                for sub in words.dropFirst().flatMap({ $0.split(separator: "|") }) {
                    listed.insert(group + [name, String(sub)])
                }
            }
        }
        #expect(listed == Set(Self.commands.filter { !$0.isEmpty }))
    }

    @Test func helpCommandPrintsTheCommandsHelp() throws {
        let viaHelp = try CLITests.run(["help", "psp", "token"])
        let viaFlag = try CLITests.run(["psp", "token", "-h"])
        #expect(viaHelp.status == 0)
        #expect(viaHelp.stdout == viaFlag.stdout)
        #expect(viaHelp.stdout.contains("--audience A..."))
        let unknown = try CLITests.run(["help", "psp", "nope"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("unknown subcommand \"nope\" for 'proxima psp'"))
    }

    @Test(arguments: [[String](), ["psp"], ["config"]])
    func groupWithoutSubcommandPrintsItsHelpAsAUsageError(path: [String]) throws {
        let run = try CLITests.run(path)
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains("USAGE: \(Self.invocation(path)) "))
    }

    // MARK: Usage errors

    @Test(arguments: commands)
    func unknownOptionNamesItAndShowsTheUsageLine(path: [String]) throws {
        let run = try CLITests.run(path + ["--bogus-option"])
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains("unknown option --bogus-option for '\(Self.invocation(path))'"))
        #expect(run.stderr.contains("\nUSAGE: \(Self.invocation(path)) "))
        #expect(run.stderr.contains("proxima --help"))
    }

    @Test(arguments: [
        (["readers", "-x"], "unknown option -x"),
        (["demo", "--taps"], "option --taps K needs a value"),
        (["readers", "--watch=yes"], "option --watch takes no value"),
        (["demo", "--taps", "1", "--taps", "2"], "option --taps is given more than once"),
        (["pay", "--amount", "1"], "'proxima pay' needs --currency C"),
        (["cardsim", "--card", "Config/cards/pay-visa-qvsdc.json"], "'proxima cardsim' needs --vpcd HOST:PORT"),
        (["psp", "decrypt", "a", "b"], "takes one argument (ENVELOPE | -), found \"b\""),
        (["readers", "extra"], "'proxima readers' takes no arguments, found \"extra\""),
        (
            ["psp", "frob"],
            "unknown subcommand \"frob\" for 'proxima psp' (expected: keygen, token, decrypt, reader-key, batch-open or "
                + "deletion-token)"
        ),
        (
            ["psp", "--out", "x", "keygen"],
            "unknown option --out for 'proxima psp'; it is an option of 'proxima psp keygen': give it after the subcommand"
        ),
        (["pay", "--ammount", "1"], "unknown option --ammount for 'proxima pay'; did you mean --amount?"),
    ])
    func usageErrorNamesTheProblem(arguments: [String], message: String) throws {
        let run = try CLITests.run(arguments)
        #expect(run.status == 2)
        #expect(run.stderr.hasPrefix("proxima: "))
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }

    @Test func doubleDashEndsTheOptions() throws {
        let run = try CLITests.run(["config", "check", "--", "--help"])
        #expect(run.status == 3)  // "--help" is the FILE to check here, and there is no such file
        #expect(run.stderr.hasPrefix("proxima config check: --help: no such file or folder;"))
    }

    @Test func repeatableOptionKeepsEveryValue() throws {
        let run = try CLITests.run(["psp", "token", "--audience", "lane-a", "--audience=lane-b"])
        #expect(run.status == 0, "\(run.stderr)")
        let parts = run.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".")
        #expect(parts.count == 3)
        var payload = String(try #require(parts.dropFirst().first))
            .replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        payload += String(repeating: "=", count: (4 - payload.count % 4) % 4)
        let payloadData = try #require(Data(base64Encoded: payload))
        let claims = try #require(try JSONSerialization.jsonObject(with: payloadData) as? [String: Any])
        #expect(claims["aud"] as? [String] == ["lane-a", "lane-b"])
    }

    // MARK: --config on every command

    /// Each leaf with the smallest arguments it runs with, and what `--config` missing-file gives: 3 for the
    /// commands that read the manifest (the path is named), their usual result for those that read none.
    static let configRuns: [([String], Int32)] = [
        (["config", "check"], 3),
        (["readers"], 3),
        (["demo", "--taps", "1"], 3),
        (["pay", "--amount", "1.00", "--currency", "USD"], 3),
        (["vas"], 3),
        (["id"], 3),
        (["psp", "token"], 3),
        (["psp", "decrypt", "AAAA"], 3),
        (["psp", "reader-key"], 3),
        (["howto"], 3),
        (["psp", "batch-open", "batch.pxb"], 3),
        (["psp", "deletion-token", "batch.pxb"], 3),
        (["store", "status"], 3),
        (["store", "batch"], 3),
        (["store", "resolve", "--token", "x.y.z"], 3),
        (["store", "reset"], 3),
        (["store", "decline"], 3),
        (["cardsim", "--vpcd", "127.0.0.1:1", "--card", "/nonexistent/card.json"], 1),
        (["agent", "--connect", "127.0.0.1:1", "--certificate", "c.pem", "--key", "k.pem", "--ca", "ca.pem"], 3),
        (["help"], 0),
    ]

    @Test func configRunsCoverEveryLeaf() {
        let covered = Set(Self.configRuns.map { run in Self.leaves.first { run.0.starts(with: $0) } ?? [] })
        #expect(covered == Set(Self.leaves.filter { $0 != ["psp", "keygen"] }))  // keygen: its own test below
    }

    @Test(arguments: configRuns)
    func everyCommandTakesConfig(arguments: [String], status: Int32) throws {
        let missing = "/nonexistent/proxima-\(UUID()).json"
        for form in [["--config", missing], ["--config=\(missing)"]] {
            let run = try CLITests.run(arguments + form)
            #expect(run.status == status, "\(run.stderr)")
            if status == 3 {
                #expect(Self.lines(run.stderr).count == 1)
                #expect(run.stderr.contains("\(missing): no such file or folder"))
            }
        }
    }

    @Test func configBeforeTheCommandAppliesToIt() throws {
        let run = try CLITests.run(["--config", "/nonexistent/x.json", "readers"])
        #expect(run.status == 3)
        #expect(run.stderr.hasPrefix("proxima readers: /nonexistent/x.json: no such file or folder;"))
    }

    @Test func keygenTakesConfigAndReadsNoManifest() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let run = try CLITests.run(["psp", "keygen", "--config", "/nonexistent/x.json", "--out", folder.path])
        #expect(run.status == 0, "\(run.stderr)")
    }

    // MARK: Friendly file errors

    @Test func configThatIsAFolderIsOneLineExit3() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let run = try CLITests.run(["readers", "--config", folder.path])
        #expect(run.status == 3)
        #expect(
            Self.lines(run.stderr) == [
                "proxima readers: \(folder.path): it is a folder, not a file; name a readable manifest with --config FILE or $PROXIMA_CONFIG"
            ]
        )
    }

    @Test func missingOrNonPEMKeyIsOneLineExit1() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("absent.pem").path
        let notPEM = folder.appendingPathComponent("junk.pem")
        try Data("not a key\n".utf8).write(to: notPEM)
        for (key, problem) in [
            (missing, "no such file or folder"),
            (notPEM.path, "not a PEM private key (no -----BEGIN … PRIVATE KEY-----)"),
        ] {
            for command in [["psp", "token"], ["psp", "decrypt", "AAAA"]] {
                let run = try CLITests.run(command + ["--key", key])
                #expect(run.status == 1)
                #expect(Self.lines(run.stderr).count == 1, "\(run.stderr)")
                #expect(run.stderr.hasPrefix("\(Self.invocation(Array(command.prefix(2)))): \(key): \(problem);"))
                #expect(run.stderr.contains("--key FILE"))
            }
        }
    }

    @Test func missingCardProfileIsOneLineExit1() throws {
        let run = try CLITests.run(["cardsim", "--vpcd", "127.0.0.1:1", "--card", "/nonexistent/card.json"])
        #expect(run.status == 1)
        #expect(
            Self.lines(run.stderr) == [
                "proxima cardsim: /nonexistent/card.json: no such file or folder; give a card profile with --card "
                    + "FILE, e.g. Config/cards/pay-visa-qvsdc.json"
            ]
        )
    }

    // MARK: psp keygen

    /// Runs `proxima psp keygen` under umask 000, where a file created with default permissions would be
    /// world-readable.
    static func keygenUnderOpenUmask(_ arguments: [String]) throws -> CLITests.Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "umask 000 && exec \"$0\" psp keygen \"$@\"", CLITests.executable.path] + arguments
        process.currentDirectoryURL = CLITests.packageRoot
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdoutData = out.fileHandleForReading.readDataToEndOfFile()
        let stderrData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CLITests.Run(
            status: process.terminationStatus,
            stdout: String(decoding: stdoutData, as: UTF8.self),
            stderr: String(decoding: stderrData, as: UTF8.self)
        )
    }

    static func mode(_ url: URL) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int)
    }

    @Test func keygenCreatesThePrivateKey0600WhateverTheUmask() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let run = try Self.keygenUnderOpenUmask(["--out", folder.path])
        #expect(run.status == 0, "\(run.stderr)")
        let privateKey = folder.appendingPathComponent("psp-private.pem")
        let publicKey = folder.appendingPathComponent("psp-public.pem")
        #expect(try Self.mode(privateKey) == 0o600)
        #expect(try Self.mode(publicKey) == 0o644)
        // Nothing else is left in the folder: the temporary file the key was written to is gone.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == [
                "psp-private.pem", "psp-public.pem",
            ]
        )
        #expect(try String(contentsOf: privateKey, encoding: .utf8).hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(try String(contentsOf: publicKey, encoding: .utf8).hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
    }

    @Test func keygenNeverOverwritesAKeyUnlessForced() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let privateKey = folder.appendingPathComponent("psp-private.pem")
        #expect(try Self.keygenUnderOpenUmask(["--out", folder.path]).status == 0)
        let first = try Data(contentsOf: privateKey)

        let again = try Self.keygenUnderOpenUmask(["--out", folder.path])
        #expect(again.status == 2)
        #expect(again.stderr.contains("\(privateKey.path) exists; keygen never overwrites a key unless --force"))
        #expect(try Data(contentsOf: privateKey) == first)

        let forced = try Self.keygenUnderOpenUmask(["--out", folder.path, "--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(try Data(contentsOf: privateKey) != first)
        #expect(try Self.mode(privateKey) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).count == 2)
    }

    @Test func keygenRefusesWhenOnlyThePublicKeyExists() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("old\n".utf8).write(to: folder.appendingPathComponent("psp-public.pem"))
        let run = try CLITests.run(["psp", "keygen", "--out", folder.path])
        #expect(run.status == 2)
        #expect(run.stderr.contains("psp-public.pem exists"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["psp-public.pem"])
    }

    @Test func keygenIntoAMissingFolderIsOneLineExit1() throws {
        let missing = "/nonexistent/keys-\(UUID())"
        let run = try CLITests.run(["psp", "keygen", "--out", missing])
        #expect(run.status == 1)
        #expect(
            Self.lines(run.stderr) == [
                "proxima psp keygen: \(missing): no such folder; create it (mkdir -p \(missing)) or give an "
                    + "existing folder with --out DIR"
            ]
        )
        #expect(run.stdout.isEmpty)
    }

    @Test func keygenIntoAFileIsOneLineExit1() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("plain")
        try Data().write(to: file)
        let run = try CLITests.run(["psp", "keygen", "--out", file.path])
        #expect(run.status == 1)
        #expect(
            Self.lines(run.stderr) == ["proxima psp keygen: \(file.path): not a folder; give a folder with --out DIR"]
        )
    }
}
