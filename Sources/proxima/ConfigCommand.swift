import Foundation
import ProximaCore
import ProximaKernel

/// `proxima config check [FILE]`.
enum ConfigCommand {
    static let help = """
        USAGE: proxima config check [FILE] [--config FILE]

        Validates a manifest with the built-in plugin types. On success prints the plugins, the readers each
        lane would use (by id, or by name pattern for readers found at run time) and the shared pool, then any
        warnings. On failure prints every error with its JSON path on stderr and exits with 3.
        """

    static func run(_ words: [String]) async throws -> ExitCode {
        let args = try Arguments(words, valued: ["config"], flags: ["help"])
        if args.flag("help") || words.isEmpty {
            print(help)
            return words.isEmpty ? .usage : .success
        }
        guard args.positionals.first == "check" else {
            throw UsageError("unknown subcommand \"config \(args.positionals.first ?? "")\" (expected: check)")
        }
        guard args.positionals.count <= 2 else { throw UsageError("config check takes one FILE") }
        let path = args.positionals.count == 2 ? args.positionals[1] : args.configPath
        let manifest = try CLI.loadManifest(path)
        print(describe(manifest, path: path))
        return .success
    }

    static func describe(_ manifest: Manifest, path: String) -> String {
        var out = [
            "\(path): valid (schemaVersion \(manifest.schemaVersion))", "data directory: \(manifest.dataDirectory)", "",
        ]
        out.append(
            table(
                ["PLUGIN", "TYPE", "STATE"],
                manifest.plugins.map { [$0.id, $0.type, $0.enabled ? "enabled" : "disabled"] }
            )
        )
        out.append("")
        let readers = manifest.declaredReaders
        var claimed = Set<ReaderID>()
        var rows: [[String]] = []
        for lane in manifest.lanes {
            let mine = readers.filter { lane.claims($0) }
            claimed.formUnion(mine.map(\.id))
            var served = mine.map(\.id.rawValue)
            served += lane.readerNamePatterns.map { "name ~ \($0)" }
            if lane.overflowToShared { served.append("+ shared pool") }
            let policy: String
            switch lane.queuePolicy {
            case .failFast: policy = "fail fast"
            case .wait(let maxWait): policy = "wait ≤ \(Int(maxWait.milliseconds)) ms"
            }
            rows.append([lane.id.rawValue, policy, served.isEmpty ? "(none)" : served.joined(separator: ", ")])
        }
        out.append(table(["LANE", "QUEUE", "READERS"], rows))
        let shared = readers.filter { !claimed.contains($0.id) }
        out.append("")
        out.append("shared pool: " + (shared.isEmpty ? "(empty)" : shared.map(\.id.rawValue).joined(separator: ", ")))
        for warning in manifest.warnings {
            out.append("warning: \(warning.path): \(warning.message)")
        }
        return out.joined(separator: "\n")
    }
}
