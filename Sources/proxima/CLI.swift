import Foundation
import Proxima
import ProximaCore
import ProximaKernel

/// Exit codes, documented in README.md and `proxima --help`.
enum ExitCode: Int32 {
    case success = 0
    /// The job failed at run time: reads failed, a plugin failed.
    case failure = 1
    /// Unknown command or option, or a missing value.
    case usage = 2
    /// The manifest is invalid.
    case invalidConfig = 3
}

/// A usage error: printed with the command's help hint, exit code 2.
struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Parsed command-line words: options (`--name value`, `--name=value`, flags) and positionals.
struct Arguments {
    private(set) var positionals: [String] = []
    private var options: [String: String] = [:]
    private var repeated: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// - Parameters:
    ///   - valued: options that take a value.
    ///   - flags: options that take none.
    init(_ words: [String], valued: Set<String>, flags allowedFlags: Set<String>) throws {
        var i = 0
        while i < words.count {
            let word = words[i]
            i += 1
            guard word.hasPrefix("--"), word.count > 2 else {
                positionals.append(word)
                continue
            }
            var name = String(word.dropFirst(2))
            var value: String? = nil
            if let eq = name.firstIndex(of: "=") {
                value = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if valued.contains(name) {
                if value == nil {
                    guard i < words.count else { throw UsageError("option --\(name) needs a value") }
                    value = words[i]
                    i += 1
                }
                options[name] = value
                repeated[name, default: []].append(value ?? "")
            } else if allowedFlags.contains(name) {
                guard value == nil else { throw UsageError("option --\(name) takes no value") }
                flags.insert(name)
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
    }

    func value(_ name: String) -> String? { options[name] }
    /// Every value of an option that may be given more than once.
    func values(_ name: String) -> [String] { repeated[name] ?? [] }
    func flag(_ name: String) -> Bool { flags.contains(name) }

    func integer(_ name: String, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = options[name] else { return defaultValue }
        guard let n = Int(text), range.contains(n) else {
            throw UsageError("--\(name) must be an integer in \(range.lowerBound)…\(range.upperBound), got \"\(text)\"")
        }
        return n
    }

    /// `--config FILE`, else `$PROXIMA_CONFIG`, else `Config/proxima.json`.
    var configPath: String {
        options["config"] ?? ProcessInfo.processInfo.environment["PROXIMA_CONFIG"] ?? "Config/proxima.json"
    }
}

enum CLI {
    static let usage = """
        proxima — a contactless-reader kernel for hosts that drive many readers at once.

        USAGE: proxima <command> [options]

        COMMANDS:
          config check [FILE]   Validate a manifest; print the readers and lanes it would use, or every error.
          readers [--watch]     List readers with transport, lanes and state; --watch streams events.
          demo                  Run a simulated multi-lane store on the embedded default manifest.
          pay                   Read one card for a payment on the configured readers.
          psp                   The processor's side, as a sandbox: keygen, token, decrypt.
          cardsim               Host a virtual card on a vpcd reader slot in pcscd (--vpcd HOST:PORT --card FILE).

        Every command takes --config FILE (default: $PROXIMA_CONFIG, then Config/proxima.json) and --help.

        EXIT CODES:
          0  success
          1  the job failed at run time (reads failed, a plugin failed)
          2  usage error (unknown command or option)
          3  the manifest is invalid (every error is printed on stderr)
        """

    static func run(_ words: [String]) async -> ExitCode {
        guard let command = words.first else {
            printError(usage)
            return .usage
        }
        let rest = Array(words.dropFirst())
        do {
            switch command {
            case "--help", "-h", "help":
                print(usage)
                return .success
            case "config":
                return try await ConfigCommand.run(rest)
            case "readers":
                return try await ReadersCommand.run(rest)
            case "demo":
                return try await DemoCommand.run(rest)
            case "pay":
                return try await PayCommand.run(rest)
            case "psp":
                return try await PSPCommand.run(rest)
            case "cardsim":
                return try await CardsimCommand.run(rest)
            default:
                printError("proxima: unknown command \"\(command)\"\nRun 'proxima --help' for the list of commands.")
                return .usage
            }
        } catch let error as UsageError {
            printError("proxima: \(error.description)\nRun 'proxima \(command) --help' or 'proxima --help'.")
            return .usage
        } catch let error as ManifestError {
            printError("proxima: invalid manifest\n\(error.description)")
            return .invalidConfig
        } catch {
            printError("proxima: \(error)")
            return .failure
        }
    }

    /// Loads the manifest named by the arguments with the built-in plugins.
    static func loadManifest(_ path: String) throws -> Manifest {
        try Manifest.load(contentsOf: path, registry: BuiltinPlugins.registry)
    }
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Whether standard output is a terminal (live views) or a pipe or file (plain lines).
var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

/// Left-aligned text columns.
func table(_ header: [String], _ rows: [[String]]) -> String {
    let all = [header] + rows
    let widths = header.indices.map { c in all.map { $0.indices.contains(c) ? $0[c].count : 0 }.max() ?? 0 }
    return all.map { row in
        row.enumerated().map { c, cell in
            c == row.count - 1 ? cell : cell.padding(toLength: widths[c], withPad: " ", startingAt: 0)
        }.joined(separator: "  ")
    }.joined(separator: "\n")
}

extension Duration {
    /// Milliseconds with one decimal, for tables.
    var milliseconds: Double {
        let (s, atto) = components
        return Double(s) * 1000 + Double(atto) / 1e15
    }
}

/// Flushes C stdio's standard output (what `print` writes to), so progress lines reach a pipe promptly.
func flushStandardOutput() {
    fflush(nil)  // nil flushes every output stream; naming `stdout` is not concurrency-safe in Swift 6
}
