import Foundation
import PaymentCapability
import Proxima
import ProximaCore
import ProximaKernel
import ProximaSystem
import RemoteTransport
import Synchronization
import Testing

/// The store kernel's Remote transport and lane-PC agents over TLS 1.3 on 127.0.0.1, with the TEST PKI of
/// `Config/keys/remote-*` (`scripts/make-remote-test-certs.sh`). Serialized: the descriptor counts are per process.
@Suite("Remote readers: agents joining a store's pool over mutual TLS", .serialized, .timeLimit(.minutes(3)))
struct RemoteLinkTests {
    static let reader = ReaderID("lanes/lane-pc-1/lane-1")

    static func purchase() -> EMVTransaction {
        EMVTransaction(
            amountAuthorised: 2999,
            currencyCode: 840,
            date: TransactionDate(year: 2026, month: 3, day: 14, hour: 9, minute: 26, second: 53)
        )
    }

    static func pay(_ kernel: Kernel) async throws -> EMVOutcome {
        try await kernel.tap(lane: "remote", options: TapOptions(timeout: .seconds(30))) { channel, context in
            try await EMVPaymentCapability().run(Self.purchase(), on: channel, context: context)
        }
    }

    @Test("a Visa card on a lane PC's simulated reader is read through the agent; nothing is left open")
    func paymentThroughAgent() async throws {
        let captured = Captured()
        let registry = try storeRegistry(capturing: captured)
        let manifest = try storeManifest(registry: registry)
        let (outcomes, agentDiagnostics) = try await withKernel(manifest, registry: registry) { kernel in
            let port = try #require(await captured.transport?.waitUntilListening())
            let agent = RemoteAgent(configuration: agentConfiguration(port: port), transports: try lanePCTransports())
            let outcomes = try await withAgent(agent) {
                try await waitUntil("the agent's reader is idle", on: kernel) {
                    await state(of: Self.reader, in: kernel) == .idle
                }
                let info = await kernel.snapshot().readers.first { $0.info.id == Self.reader }?.info
                #expect(info?.transport == "lanes")
                #expect(info?.name == "Lane reader 1")
                return [try await Self.pay(kernel), try await Self.pay(kernel)]
            }
            return (outcomes, agent.diagnostics)
        }
        #expect(outcomes.map(\.status) == [.onlineRequest, .onlineRequest])
        #expect(outcomes.map(\.lastFourDigits) == ["0119", "0119"])
        #expect(outcomes.map { $0.selectedApplicationIdentifier?.hexString } == ["A0000000031010", "A0000000031010"])
        #expect(outcomes.map { $0.cardData[0x9F26]?.count } == [8, 8])
        #expect(agentDiagnostics.sessions == 1, "\(agentDiagnostics.failures)")
        #expect(
            captured.transport?.diagnostics.sessions == 1,
            "\(captured.transport?.diagnostics.faults ?? []) \(captured.log)"
        )
        #expect(captured.transport?.diagnostics.refusals == [])
        #expect(captured.log.contains { $0.contains("agent lane-pc-1 (proxima-agent 0.1) joined from 127.0.0.1:") })
        let inodes = (captured.transport?.diagnostics.inodes ?? []) + agentDiagnostics.inodes
        #expect(inodes.count == 5, "listener, its wake pipe's two ends, the store's and the agent's link")
        #expect(openDescriptors(on: inodes) == [])
    }

    /// The agent's certificate, what the store says when it refuses it, and what the agent hears.
    static let refusedAgents: [(certificate: String, store: String, agent: String)] = [
        ("rogue-agent", "certificate refused: unable to get local issuer certificate", "unknown ca"),
        ("expired-agent", "certificate refused: certificate has expired", "certificate expired"),
        ("agent-2", "matches no entry of plugins \"lanes\" agents", "this store does not allow this agent"),
    ]

    @Test(
        "an agent certificate from another CA, an expired one and an unlisted agent are refused",
        arguments: refusedAgents
    )
    func refusedAgent(certificate: String, store storeReason: String, agent agentReason: String) async throws {
        let captured = Captured()
        let registry = try storeRegistry(capturing: captured)
        let manifest = try storeManifest(registry: registry)
        let failures = try await withKernel(manifest, registry: registry) { kernel in
            let port = try #require(await captured.transport?.waitUntilListening())
            let agent = RemoteAgent(
                configuration: agentConfiguration(port: port, certificate: certificate),
                transports: try lanePCTransports()
            )
            return try await withAgent(agent) {
                try await waitUntil("two refusals") { (captured.transport?.diagnostics.refusals.count ?? 0) >= 2 }
                try await waitUntil("the agent heard of one") { !agent.diagnostics.failures.isEmpty }
                #expect(await kernel.snapshot().readers.isEmpty)
                return agent.diagnostics.failures
            }
        }
        let refusals = captured.transport?.diagnostics.refusals ?? []
        #expect(refusals.allSatisfy { $0.contains(storeReason) }, "\(refusals)")
        #expect(refusals.allSatisfy { $0.contains("the agent at 127.0.0.1:") }, "\(refusals)")
        #expect(failures.allSatisfy { $0.contains(agentReason) }, "\(failures)")
        #expect(captured.transport?.diagnostics.sessions == 0)
        let inodes = captured.transport?.diagnostics.inodes ?? []
        #expect(inodes.count == 3)
        #expect(openDescriptors(on: inodes) == [])
    }

    @Test("an agent that trusts another CA refuses the store's certificate")
    func agentRefusesStore() async throws {
        let captured = Captured()
        let registry = try storeRegistry(capturing: captured)
        let manifest = try storeManifest(registry: registry)
        let failures = try await withKernel(manifest, registry: registry) { kernel in
            let port = try #require(await captured.transport?.waitUntilListening())
            var configuration = agentConfiguration(port: port)
            configuration.certificateAuthorityFile = "\(keys)/remote-rogue-ca-test.pem"
            let agent = RemoteAgent(configuration: configuration, transports: try lanePCTransports())
            return try await withAgent(agent) {
                try await waitUntil("two failures") { agent.diagnostics.failures.count >= 2 }
                return agent.diagnostics.failures
            }
        }
        #expect(
            failures.allSatisfy {
                $0.contains("the store at 127.0.0.1:")
                    && $0.contains("certificate refused: self-signed certificate in certificate chain")
            },
            "\(failures)"
        )
        #expect(captured.transport?.diagnostics.sessions == 0)
    }

    @Test("the store's certificate must name the server name: localhost joins (sent as SNI), another name is refused")
    func serverNameIsChecked() async throws {
        let captured = Captured()
        let registry = try storeRegistry(capturing: captured)
        let manifest = try storeManifest(registry: registry)
        let failures = try await withKernel(manifest, registry: registry) { kernel in
            let port = try #require(await captured.transport?.waitUntilListening())
            var named = agentConfiguration(port: port)
            named.serverName = "localhost"
            let joined = RemoteAgent(configuration: named, transports: try lanePCTransports())
            try await withAgent(joined) {
                try await waitUntil("the agent's reader is idle", on: kernel) {
                    await state(of: Self.reader, in: kernel) == .idle
                }
            }
            var wrong = agentConfiguration(port: port)
            wrong.serverName = "intruder.example"
            let refused = RemoteAgent(configuration: wrong, transports: try lanePCTransports())
            return try await withAgent(refused) {
                try await waitUntil("a failure") { !refused.diagnostics.failures.isEmpty }
                return refused.diagnostics.failures
            }
        }
        #expect(failures.allSatisfy { $0.contains("certificate refused: hostname mismatch") }, "\(failures)")
        #expect(
            captured.transport?.diagnostics.sessions == 1,
            "\(captured.transport?.diagnostics.faults ?? []) \(captured.log)"
        )
    }

    @Test("an agent started before the store joins once it listens, and again after the store restarts")
    func agentReconnects() async throws {
        let port = try freePort()
        let agent = RemoteAgent(configuration: agentConfiguration(port: port), transports: try lanePCTransports())
        try await withAgent(agent) {
            try await waitUntil("a refused connection") { !agent.diagnostics.failures.isEmpty }
            #expect(agent.diagnostics.sessions == 0)
            for round in 1...2 {
                let captured = Captured()
                let registry = try storeRegistry(capturing: captured)
                let manifest = try storeManifest(port: port, registry: registry)
                let outcome = try await withKernel(manifest, registry: registry) { kernel in
                    try await waitUntil("the agent's reader is idle", on: kernel) {
                        await state(of: Self.reader, in: kernel) == .idle
                    }
                    return try await Self.pay(kernel)
                }
                #expect(outcome.lastFourDigits == "0119")
                #expect(agent.diagnostics.sessions == round, "\(agent.diagnostics.failures) \(captured.log)")
            }
        }
    }

    @Test("an agent removed from the store's manifest is refused when it reconnects after the store restarts")
    func removedAgentIsRefusedOnReconnect() async throws {
        let port = try freePort()
        let agent = RemoteAgent(configuration: agentConfiguration(port: port), transports: try lanePCTransports())
        try await withAgent(agent) {
            let allowed = Captured()
            let registry = try storeRegistry(capturing: allowed)
            let outcome = try await withKernel(try storeManifest(port: port, registry: registry), registry: registry) {
                kernel in
                try await waitUntil("the agent's reader is idle", on: kernel) {
                    await state(of: Self.reader, in: kernel) == .idle
                }
                return try await Self.pay(kernel)
            }
            #expect(outcome.lastFourDigits == "0119")
            #expect(agent.diagnostics.sessions == 1)

            // The store's manifest now allows lane-pc-2 only: lane-pc-1's certificate is still valid (no CRL is
            // checked) but matches no entry, so the reconnecting agent is told so and joins nothing.
            let removed = Captured()
            let without = try storeRegistry(capturing: removed)
            let manifest = try storeManifest(port: port, allowed: "lane-pc-2", registry: without)
            let readers = try await withKernel(manifest, registry: without) { kernel in
                try await waitUntil("a refusal") { !(removed.transport?.diagnostics.refusals.isEmpty ?? true) }
                try await waitUntil("the agent heard why") {
                    agent.diagnostics.failures.contains { $0.contains("this store does not allow this agent") }
                }
                return await kernel.snapshot().readers.map(\.info.id)
            }
            #expect(readers == [])
            #expect(removed.transport?.diagnostics.sessions == 0)
            let refusals = removed.transport?.diagnostics.refusals ?? []
            #expect(
                refusals.first?.contains("subject \"O=Proxima TEST,CN=lane-pc-1\") matches no entry") == true,
                "\(refusals)"
            )
            #expect(agent.diagnostics.sessions == 2, "the TLS handshake succeeds; the identity check refuses")
        }
    }

    @Test("with the CA's revocation list, a revoked agent certificate is refused and a valid one still joins")
    func revokedAgentIsRefused() async throws {
        let crl = "keys/remote-store-ca-test-crl.pem"  // revokes lane-pc-2's certificate (remote-agent-2-test.pem)
        let revoked = Captured()
        let registry = try storeRegistry(capturing: revoked)
        let manifest = try storeManifest(allowed: "lane-pc-2", revocationList: crl, registry: registry)
        let failures = try await withKernel(manifest, registry: registry) { kernel in
            let port = try #require(await revoked.transport?.waitUntilListening())
            let agent = RemoteAgent(
                configuration: agentConfiguration(port: port, certificate: "agent-2"),
                transports: try lanePCTransports()
            )
            return try await withAgent(agent) {
                try await waitUntil("a refusal") { !(revoked.transport?.diagnostics.refusals.isEmpty ?? true) }
                try await waitUntil("the agent heard of it") { !agent.diagnostics.failures.isEmpty }
                #expect(await kernel.snapshot().readers.isEmpty)
                return agent.diagnostics.failures
            }
        }
        let refusals = revoked.transport?.diagnostics.refusals ?? []
        #expect(refusals.first?.contains("certificate refused: certificate revoked") == true, "\(refusals)")
        #expect(failures.first?.contains("certificate revoked") == true, "\(failures)")
        #expect(revoked.transport?.diagnostics.sessions == 0)

        let valid = Captured()
        let validRegistry = try storeRegistry(capturing: valid)
        let checked = try storeManifest(revocationList: crl, registry: validRegistry)
        let outcome = try await withKernel(checked, registry: validRegistry) { kernel in
            let port = try #require(await valid.transport?.waitUntilListening())
            let agent = RemoteAgent(configuration: agentConfiguration(port: port), transports: try lanePCTransports())
            return try await withAgent(agent) {
                try await waitUntil("the agent's reader is idle", on: kernel) {
                    await state(of: Self.reader, in: kernel) == .idle
                }
                return try await Self.pay(kernel)
            }
        }
        #expect(outcome.lastFourDigits == "0119")
        #expect(valid.transport?.diagnostics.refusals == [])
    }

    @Test("a store listening on [::1] serves an agent connecting over IPv6")
    func ipv6Loopback() async throws {
        let captured = Captured()
        let registry = try storeRegistry(capturing: captured)
        let manifest = try storeManifest(host: "::1", registry: registry)
        let outcome = try await withKernel(manifest, registry: registry) { kernel in
            let port = try #require(await captured.transport?.waitUntilListening())
            var configuration = agentConfiguration(port: port)
            configuration.store = try #require(RemoteEndpoint(parsing: "[::1]:\(port)"))
            // The TEST store certificate names localhost and 127.0.0.1, not ::1.
            configuration.serverName = "localhost"
            let agent = RemoteAgent(configuration: configuration, transports: try lanePCTransports())
            return try await withAgent(agent) {
                try await waitUntil("the agent's reader is idle", on: kernel) {
                    await state(of: Self.reader, in: kernel) == .idle
                }
                return try await Self.pay(kernel)
            }
        }
        #expect(outcome.lastFourDigits == "0119")
        #expect(captured.log.contains { $0.contains("listening on [::1]:") })
        #expect(captured.log.contains { $0.contains("agent lane-pc-1 (proxima-agent 0.1) joined from [::1]:") })
    }

    @Test("a killed agent process: the tap in flight ends with readerVanished, its reader leaves and comes back")
    func killedAgentProcess() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("proxima-agent-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: folder) }
        let lanePC = folder.appendingPathComponent("lane-pc.json")
        // The card profile path must resolve from the temporary folder: absolute.
        try lanePCManifestText(card: configDirectory + "/cards/pay-visa-qvsdc.json").write(
            to: lanePC,
            atomically: true,
            encoding: .utf8
        )
        let captured = Captured()
        let registry = try storeRegistry(capturing: captured)
        let manifest = try storeManifest(registry: registry)
        try await withKernel(manifest, registry: registry) { kernel in
            let port = try #require(await captured.transport?.waitUntilListening())
            let first = try AgentProcess(port: port, manifest: lanePC.path)
            defer { first.kill() }
            try await waitUntil("the agent's reader is idle", on: kernel) {
                await state(of: Self.reader, in: kernel) == .idle
            }
            #expect(try await Self.pay(kernel).lastFourDigits == "0119")

            let started = Mutex(false)
            let tap = Task {
                await errorCode {
                    try await kernel.tap(lane: "remote", options: TapOptions(timeout: .seconds(30))) { channel, _ in
                        let ppse = Array("2PAY.SYS.DDF01".utf8)
                        let select = try CommandAPDU(cla: 0, ins: 0xA4, p1: 4, p2: 0, data: ppse, expectedLength: 256)
                        while true {
                            _ = try await channel.transmit(select)
                            started.withLock { $0 = true }
                        }
                    }
                }
            }
            try await waitUntil("the tap is exchanging APDUs") { started.withLock { $0 } }
            first.kill()
            #expect(await tap.value == .readerVanished)
            try await waitUntil("the reader left the pool", on: kernel) {
                let state = await state(of: Self.reader, in: kernel)
                return state == nil || state == .vanished
            }

            let second = try AgentProcess(port: port, manifest: lanePC.path)
            defer { second.kill() }
            try await waitUntil("the reader is back", on: kernel) { await state(of: Self.reader, in: kernel) == .idle }
            #expect(try await Self.pay(kernel).lastFourDigits == "0119")
            #expect(captured.transport?.diagnostics.sessions == 2)
            second.kill()
        }
        #expect(captured.transport?.diagnostics.faults.map(\.kind).contains(.exited) == true)
        let inodes = captured.transport?.diagnostics.inodes ?? []
        #expect(inodes.count == 5)
        #expect(openDescriptors(on: inodes) == [], "a socket of the store or of a link is still open")
    }
}

/// A port nothing listens on now (bound once, then released).
func freePort() throws -> Int {
    let probe = try FileDescriptor.listenTCP(host: "127.0.0.1", port: 0)
    defer { try? probe.close() }
    return probe.localPort
}

/// `proxima agent` as a child process with the TEST agent certificate.
final class AgentProcess {
    private let process: Process

    init(port: Int, manifest: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: proximaBinary)
        process.arguments = [
            "agent", "--connect", "127.0.0.1:\(port)", "--config", manifest,
            "--certificate", "\(keys)/remote-agent-test.pem", "--key", "\(keys)/remote-agent-test-private.pem",
            "--ca", "\(keys)/remote-store-ca-test.pem",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
    }

    /// SIGKILL, and wait until it is reaped.
    func kill() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
