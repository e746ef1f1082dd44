public import ExternalTransport
internal import Foundation
public import ProximaCore
internal import ProximaSystem
internal import Synchronization

/// The Remote transport: readers of lane PCs, each running `proxima agent`, joined to this kernel's pool over TCP with
/// TLS 1.3 and mutual authentication (`Docs/remote-readers.md`).
///
/// **Link.** ``run()`` listens on ``RemoteConfiguration/listenHost``:``RemoteConfiguration/listenPort``. Each
/// connection gets a TLS 1.3 handshake (on a thread of its own, bounded by the handshake timeout) in which the agent
/// must present a certificate issued by the store CA for client authentication; then the certificate must match one
/// of ``RemoteConfiguration/agents`` (subject, DNS name or public-key pin), whose name the agent's readers carry:
/// `<plugin id>/<agent name>/<agent's reader id>`. A refused agent is told why (a `bye` frame when the handshake
/// succeeded but the certificate matches no entry, a TLS alert otherwise) and logged; see ``diagnostics``.
///
/// **Session.** The frames are the driver protocol's (`Docs/driver-protocol.md`) served by the same session code as
/// the External transport (``DriverConnection`` over a TLS link, ``DriverReaderTable`` for the readers): hello, then
/// the agent's readers and card events, and the kernel's `connect`/`transmit`/`disconnect` calls with their
/// timeouts. A link that drops (agent killed, network gone, a call past its timeout, a malformed frame) ends the
/// session: the agent's readers are reported `.vanished` at once and calls in flight fail with `readerVanished`, so
/// taps on them end within their deadline. The agent reconnects with backoff and its readers reappear. A second
/// connection of an agent replaces its first.
public final class RemoteTransport: Transport {
    public let id: String
    public let configuration: RemoteConfiguration
    /// `nil`: agents report their readers when they join.
    public var declaredReaders: [ReaderInfo]? { nil }
    public let events: AsyncStream<ReaderEvent>

    /// The most TLS handshakes in progress at once; connections beyond it are closed at once.
    public static let maximumHandshakes = 32

    private let eventContinuation: AsyncStream<ReaderEvent>.Continuation
    private let log: @Sendable (String) -> Void
    private let tables: [String: DriverReaderTable]
    private let state = Mutex(State())
    private let started = Atomic<Bool>(false)
    private let listening = RemoteSignal()

    private struct State {
        var diagnostics = RemoteTransportDiagnostics()
        var connections: [String: DriverConnection] = [:]
    }

    /// - Parameters:
    ///   - id: the plugin id from the manifest.
    ///   - log: where refusals and session notes go; default: the kernel's standard error.
    public init(id: String, configuration: RemoteConfiguration, log: (@Sendable (String) -> Void)? = nil) {
        self.id = id
        self.configuration = configuration
        self.log = log ?? { line in FileHandle.standardError.write(Data("proxima: remote \"\(id)\": \(line)\n".utf8)) }
        (events, eventContinuation) = AsyncStream.makeStream(
            of: ReaderEvent.self,
            bufferingPolicy: .bufferingNewest(ExternalTransport.eventBufferSize)
        )
        var tables: [String: DriverReaderTable] = [:]
        for agent in configuration.agents {
            tables[agent.name] = DriverReaderTable(
                transportID: id,
                readerIDPrefix: "\(id)/\(agent.name)/",
                events: eventContinuation
            )
        }
        self.tables = tables
    }

    /// Sessions, refusals and the bound port so far.
    public var diagnostics: RemoteTransportDiagnostics { state.withLock { $0.diagnostics } }

    /// Waits until ``run()`` listens and returns the port (useful with `listen` port 0); `nil` if it could not.
    public func waitUntilListening() async -> Int? {
        await listening.wait()
        return state.withLock { $0.diagnostics.port }
    }

    /// The kernel id of reader `agentReader` of agent `agent`.
    public func readerID(agent: String, agentReader: String) -> ReaderID { ReaderID("\(id)/\(agent)/\(agentReader)") }

    // MARK: Running

    /// Listens for agents and serves their sessions until cancelled; finishes ``events`` when it returns.
    /// - Throws: `ProximaError.pluginFailed` when the TLS files cannot be loaded or the address cannot be bound.
    public func run() async throws {
        guard started.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
            throw ProximaError(.pluginFailed, "remote transport \"\(id)\": run() was called twice")
        }
        defer {
            eventContinuation.finish()
            listening.set()
        }
        let context: TLSContext
        do {
            context = try TLSContext(
                role: .server,
                certificate: configuration.certificateFile,
                privateKey: configuration.privateKeyFile,
                certificateAuthority: configuration.certificateAuthorityFile,
                revocationList: configuration.revocationListFile
            )
        } catch {
            throw ProximaError(.pluginFailed, "remote transport \"\(id)\": \(error)", underlying: error)
        }
        let listener: RemoteListener
        do {
            listener = try RemoteListener(
                transportID: id,
                configuration: configuration,
                context: context,
                log: log
            )
        } catch {
            throw ProximaError(.pluginFailed, "remote transport \"\(id)\": \(error)", underlying: error)
        }
        state.withLock { state in
            state.diagnostics.port = listener.port
            state.diagnostics.inodes += listener.inodes
        }
        listening.set()
        log("listening on \(RemoteEndpoint(host: configuration.listenHost, port: listener.port))")
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [log] in
                for await refusal in listener.refusals {
                    log(refusal)
                    self.state.withLock { $0.diagnostics.refusals.append(refusal) }
                }
            }
            await withTaskCancellationHandler {
                for await agent in listener.agents {
                    group.addTask { await self.serve(agent) }
                }
            } onCancel: {
                listener.stop()
            }
            await listener.waitUntilEnded()
            group.cancelAll()
        }
    }

    /// One agent's session from its hello to the end of its link.
    private func serve(_ agent: RemoteListener.Agent) async {
        guard let table = tables[agent.name] else { return }
        let connection: DriverConnection
        do {
            connection = try DriverConnection(
                pluginID: "\(id)/\(agent.name)",
                link: agent.link,
                configuration: configuration.session,
                log: { [log] line in log("agent \(agent.name): \(line)") }
            )
        } catch {
            agent.link.terminate()
            agent.link.closeOutput()
            log("agent \(agent.name) not served: \(error)")
            return
        }
        let replaced = state.withLock { state -> DriverConnection? in
            state.diagnostics.sessions += 1
            state.diagnostics.inodes += agent.link.inodes
            state.diagnostics.connectedAgents.insert(agent.name)
            defer { state.connections[agent.name] = connection }
            return state.connections[agent.name]
        }
        if let replaced {
            replaced.fail(DriverFault(.stopped, "agent \(agent.name) connected again from \(agent.address)"))
            _ = await replaced.waitUntilEnded()
        }
        table.attach(connection)
        var fault: DriverFault?
        await withTaskCancellationHandler {
            for await item in connection.incoming {
                switch item {
                case .failed(let failure):
                    if fault == nil { fault = failure }
                    table.endSession(connection, reason: "\(failure)")
                case .message(.hello(let version, let name, let agentVersion)):
                    guard DriverReaderTable.accept(hello: version, on: connection) else { continue }
                    log("agent \(agent.name) (\(name) \(agentVersion)) joined from \(agent.address)")
                case .message(let message):
                    table.handle(message, from: connection)
                }
            }
        } onCancel: {
            connection.stop()
        }
        connection.stop()
        _ = await connection.waitUntilEnded()
        table.endSession(connection, reason: "the link to agent \(agent.name) ended")
        state.withLock { state in
            if state.connections[agent.name] === connection {
                state.connections[agent.name] = nil
                state.diagnostics.connectedAgents.remove(agent.name)
            }
            if let fault, fault.kind != .stopped { state.diagnostics.faults.append(fault) }
        }
        if let fault, fault.kind != .stopped { log("agent \(agent.name) left: \(fault)") }
    }

    // MARK: Connecting

    public func connect(to reader: ReaderID, options: ConnectOptions) async throws -> any CardChannel {
        guard let table = tables.values.first(where: { $0.owns(reader) }) else {
            throw ProximaError(
                .readerVanished,
                "remote transport \"\(id)\" has no reader \"\(reader)\"",
                reader: reader
            )
        }
        return try await table.openChannel(to: reader, options: options)
    }
}

/// What a ``RemoteTransport`` has done so far.
public struct RemoteTransportDiagnostics: Hashable, Sendable {
    /// The port it listens on, once it does.
    public var port: Int?
    /// Agent sessions started.
    public var sessions = 0
    /// Agents connected now.
    public var connectedAgents: Set<String> = []
    /// Why each refused connection was refused, in order.
    public var refusals: [String] = []
    /// Why each agent session ended badly (replacements and shutdown not included).
    public var faults: [DriverFault] = []
    /// Inode numbers of every socket and pipe it opened (the listener's, each agent's link), so a test can check
    /// that none is still open.
    public var inodes: [UInt64] = []

    public init() {}
}
