package import ExternalTransport
internal import Foundation
public import ProximaCore
internal import ProximaSystem
internal import Synchronization

/// Where an agent connects and how it proves who it is.
public struct RemoteAgentConfiguration: Hashable, Sendable {
    /// The store kernel's `listen` address as the lane PC reaches it.
    public var store: RemoteEndpoint
    /// The name the store's certificate must carry (subjectAltName DNS or IP), sent as SNI when it is a DNS name;
    /// default: the host of ``store``.
    public var serverName: String
    public var certificateFile: String
    public var privateKeyFile: String
    /// The store CA: the only anchor the store's certificate is checked against.
    public var certificateAuthorityFile: String
    /// Waits between reconnections, doubling from the first to the second.
    public var reconnectInitialDelay: Duration
    public var reconnectMaximumDelay: Duration
    /// How long the TLS handshake, and then the store's `hello`, may each take.
    public var handshakeTimeout: Duration
    /// How long the agent's transport may take to find a card for a `connect`, at most: past it (or 80 % of the
    /// store's `timeoutMs`, whichever is shorter) the agent answers `noCard` and reports the reader ready again.
    public var connectWait: Duration

    public init(
        store: RemoteEndpoint,
        serverName: String? = nil,
        certificateFile: String,
        privateKeyFile: String,
        certificateAuthorityFile: String,
        reconnectInitialDelay: Duration = .milliseconds(200),
        reconnectMaximumDelay: Duration = .seconds(10),
        handshakeTimeout: Duration = .seconds(5),
        connectWait: Duration = .seconds(2)
    ) {
        self.store = store
        self.serverName = serverName ?? store.host
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
        self.certificateAuthorityFile = certificateAuthorityFile
        self.reconnectInitialDelay = reconnectInitialDelay
        self.reconnectMaximumDelay = reconnectMaximumDelay
        self.handshakeTimeout = handshakeTimeout
        self.connectWait = connectWait
    }
}

/// A lane PC's agent (`proxima agent --connect HOST:PORT --config lane-pc.json`): runs the lane PC's own transports
/// and offers their readers to a store kernel's Remote transport over TLS 1.3 with mutual authentication, speaking
/// the driver protocol as a driver does (`Docs/remote-readers.md`).
///
/// **Link.** ``run()`` connects, handshakes (the store's certificate must be issued by the store CA for
/// `serverAuth` and match ``RemoteAgentConfiguration/serverName``; this agent's certificate goes to the store), sends
/// `hello` and its readers. A link that fails or drops is reconnected after a backoff that doubles from
/// ``RemoteAgentConfiguration/reconnectInitialDelay`` to ``RemoteAgentConfiguration/reconnectMaximumDelay`` (a
/// session that lasted that long starts the doubling over); the reason goes to `log` and ``diagnostics``.
///
/// **Readers.** Every reader of the transports, under its own id; a reader is reported ready for a card
/// (`cardPresent`) when it appears, after each `disconnect` and after a `connect` that found no card, as well as
/// whenever its transport reports a card: transports that find a card only when asked (the simulator) are then
/// served as well as those that watch their field (PC/SC). `connect` waits for a card up to
/// ``RemoteAgentConfiguration/connectWait``; `transmit` forwards the APDU; a transport error becomes the
/// protocol's error code (`cardRemoved`, `cardTimeout`, `readerVanished`, …). Blocking I/O happens on the session's
/// own thread (``AgentSession``) and in the transports, never here.
public final class RemoteAgent: Sendable {
    public let configuration: RemoteAgentConfiguration
    private let transports: [any Transport]
    private let log: @Sendable (String) -> Void
    private let state = Mutex(State())

    private struct Reader {
        var info: ReaderInfo
        var transport: Int
    }

    private struct State {
        var readers: [ReaderID: Reader] = [:]
        /// Readers whose transport reported a fault: reported gone to the store until they recover.
        var faulted: Set<ReaderID> = []
        var session: AgentSession?
        var channels: [ReaderID: any CardChannel] = [:]
        var diagnostics = RemoteAgentDiagnostics()
    }

    /// - Parameters:
    ///   - transports: the lane PC's transports, built from its manifest (not yet running: ``run()`` runs them).
    ///   - log: one line per event of the link; default: standard error.
    public init(
        configuration: RemoteAgentConfiguration,
        transports: [any Transport],
        log: (@Sendable (String) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.transports = transports
        self.log = log ?? { line in FileHandle.standardError.write(Data("proxima agent: \(line)\n".utf8)) }
    }

    /// Sessions and failures so far.
    public var diagnostics: RemoteAgentDiagnostics { state.withLock { $0.diagnostics } }

    /// What the current session's thread ran so far (`nil` between sessions), for the benchmark's hop counts.
    package var linkStatistics: LinkExecutor.Statistics? { state.withLock { $0.session?.executor.statistics } }

    /// Runs the transports and keeps the link to the store up until cancelled.
    /// - Throws: `ProximaError.pluginFailed` when this agent's certificate, key or CA file cannot be loaded, or a
    ///   transport's own error.
    public func run() async throws {
        let context: TLSContext
        do {
            context = try TLSContext(
                role: .client,
                certificate: configuration.certificateFile,
                privateKey: configuration.privateKeyFile,
                certificateAuthority: configuration.certificateAuthorityFile
            )
        } catch {
            throw ProximaError(.pluginFailed, "agent: \(error)", underlying: error)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, transport) in transports.enumerated() {
                group.addTask { try await transport.run() }
                group.addTask {
                    for await event in transport.events { self.apply(event, transport: index) }
                }
            }
            group.addTask { await self.keepLinked(context) }
            try await group.waitForAll()
        }
    }

    // MARK: The link

    private func keepLinked(_ context: TLSContext) async {
        var backoff = RestartBackoff(
            initial: configuration.reconnectInitialDelay,
            maximum: configuration.reconnectMaximumDelay
        )
        while !Task.isCancelled {
            let startedAt = ContinuousClock.now
            let reason: String
            do {
                let link = try await connect(context)
                reason = await serve(link)
            } catch {
                reason = "\(error)"
            }
            if Task.isCancelled { return }
            state.withLock { $0.diagnostics.failures.append(reason) }
            if ContinuousClock.now - startedAt >= configuration.reconnectMaximumDelay { backoff.reset() }
            let wait = backoff.next()
            log("link to \(configuration.store) ended (\(reason)); reconnecting in \(wait)")
            do {
                try await Task.sleep(for: wait)
            } catch {
                return
            }
        }
    }

    /// TCP connect and TLS handshake, on a thread of their own (both block).
    private func connect(_ context: TLSContext) async throws -> TLSLink {
        let configuration = configuration
        return try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                do {
                    let descriptor = try FileDescriptor.connectTCP(
                        host: configuration.store.host,
                        port: configuration.store.port
                    )
                    let link = try TLSLink.handshake(
                        descriptor: descriptor,
                        context: context,
                        serverName: configuration.serverName,
                        deadline: .now + configuration.handshakeTimeout,
                        peerName: "the store at \(configuration.store)"
                    )
                    continuation.resume(returning: link)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.name = "agent-connect"
            thread.start()
        }
    }

    /// One session; returns why it ended.
    private func serve(_ link: TLSLink) async -> String {
        let session: AgentSession
        do {
            session = try AgentSession(
                link: link,
                maximumFrameBytes: DriverFrame.defaultMaximumPayload,
                helloTimeout: configuration.handshakeTimeout
            )
        } catch {
            return "\(error)"
        }
        // Queued under the lock that ``apply(_:transport:)`` holds too, so no reader event can go out before them.
        let readers = state.withLock { state -> [ReaderInfo] in
            state.session = session
            state.diagnostics.sessions += 1
            state.diagnostics.inodes += link.inodes
            let readers = state.readers.values.filter { !state.faulted.contains($0.info.id) }.map(\.info).sorted {
                $0.id.rawValue < $1.id.rawValue
            }
            session.send(AgentMessage.hello(name: "proxima-agent"))
            session.send(AgentMessage.readers(readers))
            for reader in readers { session.send(AgentMessage.event("cardPresent", reader: reader.id)) }
            return readers
        }
        log("joined the store at \(configuration.store) with \(readers.count) readers")
        // On the session's thread: a request read there resumes this loop, and its answer (a child task, which keeps
        // the preference) runs and writes its frame there too, without a hop through the cooperative pool.
        let reason = await withTaskExecutorPreference(session.executor) {
            var reason = "stopped"
            await withTaskGroup(of: Void.self) { group in
                await withTaskCancellationHandler {
                    for await item in session.incoming {
                        switch item {
                        case .ended(let why):
                            reason = why
                        case .request(.hello(let version)):
                            if version.major != DriverProtocolVersion.current.major {
                                session.stop("the store speaks protocol \(version), this agent 1.x")
                            }
                        case .request(let request):
                            group.addTask { await self.answer(request, on: session) }
                        }
                    }
                } onCancel: {
                    session.stop("the agent is stopping")
                }
                group.cancelAll()
            }
            return reason
        }
        await session.waitUntilEnded()
        let channels = state.withLock { state -> [any CardChannel] in
            if state.session === session { state.session = nil }
            defer { state.channels = [:] }
            return Array(state.channels.values)
        }
        for channel in channels { await channel.close() }
        return reason
    }

    // MARK: Readers

    /// Passes a transport's event on to the store, under the lock ``serve(_:)`` queues its first frames under, so
    /// the order of frames is the order of the changes.
    private func apply(_ event: ReaderEvent, transport: Int) {
        state.withLock { state in
            let (session, frames) = Self.frames(for: event, transport: transport, state: &state)
            for frame in frames { session?.send(frame) }
        }
    }

    private static func frames(
        for event: ReaderEvent,
        transport: Int,
        state: inout State
    ) -> (AgentSession?, [JSONValue]) {
        switch event {
        case .appeared(let info):
            state.readers[info.id] = Reader(info: info, transport: transport)
            state.faulted.remove(info.id)
            return (
                state.session,
                [AgentMessage.readerAppeared(info), AgentMessage.event("cardPresent", reader: info.id)]
            )
        case .vanished(let reader):
            state.faulted.remove(reader)
            guard state.readers.removeValue(forKey: reader) != nil else { return (nil, []) }
            return (state.session, [AgentMessage.event("readerVanished", reader: reader)])
        case .fault(let reader, _):
            guard state.readers[reader] != nil, state.faulted.insert(reader).inserted else { return (nil, []) }
            return (state.session, [AgentMessage.event("readerVanished", reader: reader)])
        case .recovered(let reader):
            guard let entry = state.readers[reader], state.faulted.remove(reader) != nil else { return (nil, []) }
            return (
                state.session,
                [AgentMessage.readerAppeared(entry.info), AgentMessage.event("cardPresent", reader: reader)]
            )
        case .cardPresent(let reader):
            guard state.readers[reader] != nil, !state.faulted.contains(reader) else { return (nil, []) }
            return (state.session, [AgentMessage.event("cardPresent", reader: reader)])
        case .cardRemoved:
            // Not forwarded: `cardPresent` here means "ready for a connect", and the agent re-arms a reader
            // itself after each disconnect; a transport's late `cardRemoved` overtaking that re-arm would leave
            // the store waiting for a card event that never comes. A connect with no card answers `noCard`.
            return (nil, [])
        }
    }

    private func answer(_ request: AgentRequest, on session: AgentSession) async {
        guard let id = request.id else { return }
        switch request {
        case .connect(_, let reader, let exclusive, let timeout):
            let readerID = ReaderID(reader)
            let transport = state.withLock { state -> (any Transport)? in
                state.readers[readerID].map { transports[$0.transport] }
            }
            guard let transport else {
                session.send(AgentMessage.error(id, .readerVanished, "no reader \"\(reader)\" on this agent"))
                return
            }
            if let previous = state.withLock({ $0.channels.removeValue(forKey: readerID) }) { await previous.close() }
            let wait = min(configuration.connectWait, .milliseconds(timeout * 8 / 10))
            do {
                let channel = try await withThrowingTaskGroup(of: (any CardChannel)?.self) { group in
                    group.addTask {
                        try await transport.connect(to: readerID, options: ConnectOptions(exclusive: exclusive))
                    }
                    group.addTask {
                        try await Task.sleep(for: wait)
                        return nil
                    }
                    defer { group.cancelAll() }
                    return try await group.next() ?? nil
                }
                guard let channel else {
                    session.send(AgentMessage.error(id, .noCard, "no card within \(wait)"))
                    session.send(AgentMessage.event("cardPresent", reader: readerID))
                    return
                }
                state.withLock { $0.channels[readerID] = channel }
                session.send(
                    AgentMessage.result(
                        id,
                        [
                            ("atr", .string(channel.atr.hexString)), ("ats", .string(channel.ats.hexString)),
                            ("uid", .string(channel.uid.hexString)),
                            ("technology", .string(channel.technology.rawValue)),
                            ("extendedLength", .bool(channel.supportsExtendedLength)),
                            ("maxCommandLength", .integer(Int64(channel.maximumCommandLength))),
                        ]
                    )
                )
            } catch {
                session.send(AgentMessage.error(id, AgentMessage.code(for: error), Self.reason(error)))
            }
        case .transmit(_, let reader, let apdu, _):
            guard let channel = state.withLock({ $0.channels[ReaderID(reader)] }) else {
                session.send(AgentMessage.error(id, .invalidRequest, "no connection to a card on \"\(reader)\""))
                return
            }
            @Sendable func forward() async {
                do {
                    let response = try await channel.transmit(try CommandAPDU(bytes: apdu))
                    session.send(frame: AgentMessage.transmitResult(id, response.bytes))
                } catch {
                    session.send(AgentMessage.error(id, AgentMessage.code(for: error), Self.reason(error)))
                }
            }
            // On the channel's own thread when its transport has one (PC/SC): the answer goes out from there, and
            // only the return to this session's thread, off the APDU's path, is a hop.
            if let executor = channel.preferredTaskExecutor {
                await withTaskExecutorPreference(executor) { await forward() }
            } else {
                await forward()
            }
        case .disconnect(_, let reader):
            let readerID = ReaderID(reader)
            if let channel = state.withLock({ $0.channels.removeValue(forKey: readerID) }) { await channel.close() }
            session.send(AgentMessage.result(id))
            if state.withLock({ $0.readers[readerID] != nil }) {
                session.send(AgentMessage.event("cardPresent", reader: readerID))
            }
        case .control:
            session.send(AgentMessage.error(id, .unsupported, "an agent forwards no control commands"))
        case .hello, .bye:
            break
        }
    }

    /// An error's reason without its cause chain (no card data is in a transport's reasons).
    private static func reason(_ error: any Error) -> String {
        (error as? ProximaError)?.reason ?? "\(error)"
    }
}

/// What a ``RemoteAgent`` has done so far.
public struct RemoteAgentDiagnostics: Hashable, Sendable {
    /// Sessions with the store begun (TLS handshakes that succeeded).
    public var sessions = 0
    /// Why each connection attempt or session ended, in order.
    public var failures: [String] = []
    /// Inode numbers of the sockets of its sessions, so a test can check none is still open.
    public var inodes: [UInt64] = []

    public init() {}
}
