import Foundation
import Proxima
import ProximaCore
import ProximaKernel

/// Exit codes, documented in README.md and `proxima --help`.
enum ExitCode: Int32, CaseIterable {
    case success = 0
    /// The job failed at run time: reads failed, a plugin failed, a file could not be used.
    case failure = 1
    /// Unknown command or option, or a missing value.
    case usage = 2
    /// The manifest is invalid or cannot be read.
    case invalidConfig = 3

    /// One line for `proxima --help`.
    var meaning: String {
        switch self {
        case .success: "success"
        case .failure: "the job failed at run time (reads failed, a plugin failed, a file could not be used)"
        case .usage: "usage error (unknown command or option, a missing or bad value)"
        case .invalidConfig: "the manifest is invalid or cannot be read (every error is printed on stderr)"
        }
    }
}

enum CLI {
    /// Every command of the tool, declared once: dispatch, `--help` and usage errors come from this table.
    static let table: CommandTable = CommandTable(
        root: Command(
            name: "proxima",
            summary: "a contactless-reader kernel for hosts that drive many readers at once.",
            subcommands: [
                ConfigCommand.command, ReadersCommand.command, DemoCommand.command, PayCommand.command,
                VASCommand.command, AgentCommand.command, HowToCommand.command, IDCommand.command,
                StoreCommand.command,
                PSPCommand.command, CardsimCommand.command, helpCommand,
            ]
        )
    )

    /// `proxima help [COMMAND...]`: the help of the tool or of a command.
    static let helpCommand: Command = Command(
        name: "help",
        summary: "Print the help of the tool, or of a command (proxima help psp token).",
        positionals: [
            Positional(placeholder: "COMMAND", help: "A command."),
            Positional(placeholder: "SUBCOMMAND", help: "One of its subcommands."),
        ],
        readsManifest: false,
        action: { args in
            print(table.help(try table.path(to: args.positionals)))
            return .success
        }
    )

    static func run(_ words: [String]) async -> ExitCode {
        let invocation: Invocation
        do {
            invocation = try table.parse(words)
        } catch {
            reportUsage(error.message, at: error.at)
            return .usage
        }
        switch invocation {
        case .help(let path):
            print(table.help(path))
            return .success
        case .incomplete(let path):
            printError(table.help(path))
            return .usage
        case .run(let action, let args):
            do {
                return try await action(args)
            } catch let error as UsageError {
                reportUsage(error.description, at: args.path)
                return .usage
            } catch let error as ParseFailure {
                reportUsage(error.message, at: error.at)
                return .usage
            } catch let error as FileProblem {
                printError("\(args.path.invocation): \(error.description)")
                return error.exitCode
            } catch let error as ManifestError {
                printError("proxima: invalid manifest\n\(error.description)")
                return .invalidConfig
            } catch let error as CocoaError {
                // Foundation's own description is a dump of its user-info dictionary; its sentence is enough.
                printError("\(args.path.invocation): \(error.localizedDescription)")
                return .failure
            } catch {
                printError("proxima: \(error)")
                return .failure
            }
        }
    }

    /// A usage error: the message, the command's usage line and where to read more.
    static func reportUsage(_ message: String, at path: CommandPath) {
        let hint =
            path.names.count == 1
            ? "Run 'proxima --help' for the list of commands."
            : "Run '\(path.invocation) --help' or 'proxima --help'."
        printError("proxima: \(message)\n\(table.usageBlock(path))\n\(hint)")
    }

    /// Loads the manifest at `path` with the built-in plugins.
    /// - Throws: ``FileProblem`` (exit 3) when the file cannot be read; `ManifestError` when it is invalid.
    static func loadManifest(_ path: String) throws -> Manifest {
        try FileChecks.manifest(path)
        return try Manifest.load(contentsOf: path, registry: BuiltinPlugins.registry)
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
