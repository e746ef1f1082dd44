import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import RemoteTransport

/// `proxima agent --connect HOST:PORT|[IPv6]:PORT --certificate FILE --key FILE --ca FILE [--server-name NAME]`.
enum AgentCommand {
    static let command = Command(
        name: "agent",
        summary: "Offer this lane PC's readers to a store kernel's pool over TLS 1.3 (a remote agent).",
        details: """
            Runs the manifest's transports (any type) and joins the store kernel at HOST:PORT, whose manifest has a
            "remote" plugin listing this agent. The link is TLS 1.3 with mutual authentication: --certificate and
            --key are this agent's (issued by the store CA for client authentication), --ca is the store CA. The
            store's certificate must name --server-name (default: HOST). A dropped link is reconnected with
            backoff; Ctrl-C or SIGTERM stops. See Docs/remote-readers.md.
            """,
        options: [
            .value(
                "connect",
                "HOST:PORT",
                help: "The store kernel's remote listener (an IPv6 address in brackets: [::1]:7443).",
                required: true
            ),
            .value("certificate", "FILE", help: "This agent's certificate (PEM).", required: true),
            .value("key", "FILE", help: "This agent's private key (PEM).", required: true),
            .value("ca", "FILE", help: "The store CA certificate (PEM).", required: true),
            .value(
                "server-name",
                "NAME",
                help: "The name the store's certificate must carry.",
                defaultDescription: "HOST"
            ),
        ],
        action: { try await run($0) }
    )

    static func run(_ args: Arguments) async throws -> ExitCode {
        let manifest = try CLI.loadManifest(args.configPath)
        let connect = args.value("connect") ?? ""
        guard let store = RemoteEndpoint(parsing: connect), store.port > 0 else {
            throw UsageError(
                "--connect needs HOST:PORT or [IPv6]:PORT with a port in 1…65535, got \"\(connect)\""
            )
        }
        var transports: [any Transport] = []
        for entry in manifest.enabledPlugins {
            guard let type = BuiltinPlugins.registry.transportTypes[entry.type] else { continue }
            transports.append(try type.make(manifest.pluginContext(for: entry, clock: .continuous)))
        }
        let configuration = RemoteAgentConfiguration(
            store: store,
            serverName: args.value("server-name"),
            certificateFile: args.value("certificate") ?? "",
            privateKeyFile: args.value("key") ?? "",
            certificateAuthorityFile: args.value("ca") ?? ""
        )
        let agent = RemoteAgent(configuration: configuration, transports: transports)
        do {
            try await agent.run()
        } catch is CancellationError {
            return .success
        } catch let error as ProximaError {
            if Task.isCancelled { return .success }
            printError("proxima agent: \(error.reason)")
            return .failure
        }
        return .success
    }
}
