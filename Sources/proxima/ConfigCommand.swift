import Foundation
import ProximaCore
import ProximaKernel

/// `proxima config check [FILE]`.
enum ConfigCommand {
    static let command = Command(
        name: "config",
        summary: "Validate a manifest; print the readers and lanes it would use, or every error.",
        subcommands: [
            Command(
                name: "check",
                summary: "Validate a manifest; print the readers and lanes it would use, or every error.",
                details: """
                    Validates a manifest with the built-in plugin types. On success prints the plugins, the readers each
                    lane would use (by id, or by name pattern for readers found at run time) and the shared pool, then any
                    warnings. On failure prints every error with its JSON path on stderr and exits with 3.
                    """,
                positionals: [Positional(placeholder: "FILE", help: "The manifest to check (default: --config).")],
                action: { try await check($0) }
            )
        ]
    )

    static func check(_ args: Arguments) async throws -> ExitCode {
        let path = args.positionals.first ?? args.configPath
        try FileChecks.manifest(path, remedy: "give the manifest to check as FILE or with --config FILE")
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
