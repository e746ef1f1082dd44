internal import ExternalTransport
internal import Foundation
internal import Glibc
internal import ProximaCore
internal import ProximaSystem
internal import Synchronization

/// The store's listening socket and the TLS handshakes of the agents that connect to it.
///
/// **Threads.** One thread (`remote:<plugin id>`) polls the listening socket and a wake pipe and accepts. Each
/// accepted connection gets a thread of its own for its TLS handshake and the check of its certificate against the
/// allowed agents (at most ``RemoteTransport/maximumHandshakes`` at once, each bounded by the handshake timeout), so a
/// slow or hostile client holds up no one else. An accepted agent goes out through ``agents`` with its link; a refusal
/// through ``refusals``. ``stop()`` ends the accepting thread; ``waitUntilEnded()`` returns once it and every
/// handshake thread are done and the listening socket is closed.
///
/// `@unchecked Sendable`: the mutable members are behind `state`'s lock; the descriptors are closed by the accepting
/// thread only, the wake pipe's write end under the lock.
final class RemoteListener: @unchecked Sendable {
    struct Agent: Sendable {
        var name: String
        var address: String
        var link: TLSLink
    }

    let port: Int
    /// Inodes of the listening socket and the wake pipe.
    let inodes: [UInt64]
    let agents: AsyncStream<Agent>
    let refusals: AsyncStream<String>

    private let agentContinuation: AsyncStream<Agent>.Continuation
    private let refusalContinuation: AsyncStream<String>.Continuation
    private let socket: FileDescriptor
    private let wakeRead: FileDescriptor
    private let wakeWrite: FileDescriptor
    private let configuration: RemoteConfiguration
    private let context: TLSContext
    private let transportID: String
    private let state = Mutex(State())

    private struct State {
        var stopping = false
        var handshakes = 0
        var acceptorEnded = false
        var wakeOpen = true
        var endWaiters: [CheckedContinuation<Void, Never>] = []
        var ended: Bool { acceptorEnded && handshakes == 0 }
    }

    init(
        transportID: String,
        configuration: RemoteConfiguration,
        context: TLSContext,
        log: @escaping @Sendable (String) -> Void
    ) throws {
        self.transportID = transportID
        self.configuration = configuration
        self.context = context
        socket = try FileDescriptor.listenTCP(host: configuration.listenHost, port: configuration.listenPort)
        do {
            (wakeRead, wakeWrite) = try FileDescriptor.wakePipe()
        } catch {
            try? socket.close()
            throw error
        }
        port = socket.localPort
        inodes = [socket, wakeRead, wakeWrite].compactMap { try? $0.status().inode }
        (agents, agentContinuation) = AsyncStream.makeStream(of: Agent.self, bufferingPolicy: .unbounded)
        (refusals, refusalContinuation) = AsyncStream.makeStream(
            of: String.self,
            bufferingPolicy: .bufferingNewest(256)
        )
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "remote:\(transportID)"
        thread.start()
    }

    /// Stops accepting; handshakes in progress finish (within their timeout) and their agents are closed.
    func stop() {
        state.withLock { state in
            state.stopping = true
            if state.wakeOpen {
                var byte: UInt8 = 1
                _ = write(wakeWrite.rawValue, &byte, 1)
            }
        }
    }

    func waitUntilEnded() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.ended { return true }
                state.endWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func acceptLoop() {
        while !state.withLock({ $0.stopping }) {
            var entries = [
                pollfd(fd: socket.rawValue, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeRead.rawValue, events: Int16(POLLIN), revents: 0),
            ]
            _ = poll(&entries, 2, -1)
            if entries[1].revents != 0 { continue }
            while let (descriptor, address) = (try? socket.acceptConnection()) ?? nil {
                let admitted = state.withLock { state -> Bool in
                    guard !state.stopping, state.handshakes < RemoteTransport.maximumHandshakes else { return false }
                    state.handshakes += 1
                    return true
                }
                guard admitted else {
                    try? descriptor.close()
                    refusalContinuation.yield("\(address): refused, too many TLS handshakes in progress")
                    continue
                }
                let thread = Thread { [self] in handshake(descriptor, address: address) }
                thread.name = "remote-handshake:\(transportID)"
                thread.start()
            }
        }
        try? socket.close()
        state.withLock { state in
            state.acceptorEnded = true
            state.wakeOpen = false
        }
        try? wakeRead.close()
        try? wakeWrite.close()
        agentContinuation.finish()
        finishIfEnded()
    }

    private func handshake(_ descriptor: FileDescriptor, address: String) {
        defer {
            state.withLock { $0.handshakes -= 1 }
            finishIfEnded()
        }
        let names = configuration.agents.compactMap { agent -> String? in
            if case .dnsName(let name) = agent.identity { return name }
            return nil
        }
        let link: TLSLink
        do {
            link = try TLSLink.handshake(
                descriptor: descriptor,
                context: context,
                peerNames: names,
                deadline: .now + configuration.session.handshakeTimeout,
                peerName: "the agent at \(address)"
            )
        } catch {
            refusalContinuation.yield("\(error)")
            return
        }
        guard let agent = configuration.agents.first(where: { matches($0.identity, link.peer) }) else {
            let reason =
                "the agent at \(address) is not allowed: its certificate (subject \"\(link.peer.subject)\") matches "
                + "no entry of plugins \"\(transportID)\" agents"
            refusalContinuation.yield(reason)
            let bye = DriverFrame.encode(
                .object([("type", .string("bye")), ("reason", .string("this store does not allow this agent"))])
            )
            _ = link.write(bye[...])
            link.closeGracefully(within: .seconds(1))
            return
        }
        let stopping = state.withLock { $0.stopping }
        if stopping {
            link.terminate()
            link.closeOutput()
            return
        }
        if case .terminated = agentContinuation.yield(Agent(name: agent.name, address: address, link: link)) {
            link.terminate()
            link.closeOutput()
        }
    }

    private func matches(_ identity: RemoteConfiguration.Agent.Identity, _ peer: TLSPeerCertificate) -> Bool {
        switch identity {
        case .subject(let subject): peer.subject == subject
        case .dnsName(let name): peer.matchedNames.contains(name)
        case .publicKeySHA256(let digest): peer.publicKeySHA256 == digest
        }
    }

    private func finishIfEnded() {
        let (ended, waiters) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
            guard state.ended else { return (false, []) }
            defer { state.endWaiters = [] }
            return (true, state.endWaiters)
        }
        if ended { refusalContinuation.finish() }
        for waiter in waiters { waiter.resume() }
    }
}

/// A one-shot signal: ``wait()`` returns once ``set()`` was called.
final class RemoteSignal: Sendable {
    private let state = Mutex<(set: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func set() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.set else { return [] }
            state.set = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.set { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
