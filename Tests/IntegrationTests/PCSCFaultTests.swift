import Foundation
import PaymentCapability
import ProximaCardEmulator
import ProximaCore
import ProximaKernel
import ProximaTestSupport
import Synchronization
import Testing

/// What a request sees when the card, pcscd or another PC/SC client misbehaves, through real pcscd.
@Suite(
    "Card and daemon faults through real pcscd with vpcd readers",
    .enabled(if: LivePCSCD.isAvailable),
    .serialized,
    .timeLimit(.minutes(1))
)
struct PCSCFaultTests {
    @Test(
        "a card pulled in the middle of a read ends the request with cardRemoved; the reader serves the next tap",
        .livePCSCD(.shared)
    )
    func cardPulledMidTransaction() async throws {
        let reader = LivePCSCD.b0
        let log = HostLog()
        // GET DATA (UID) and SELECT PPSE are answered; the card leaves the field when SELECT AID arrives.
        let host = VPCDCardHost(
            card: try loadCard("pay-visa-qvsdc.json"),
            endpoint: reader.endpoint,
            options: VPCDCardHost.Options(faults: VPCDCardHost.Faults(removeAfterCommands: 2)),
            onEvent: log.record
        )
        try host.insert()
        let manifest = try pcscManifest(lanes: [("lane-1", reader)])
        try await PresenceWatcher.watching([reader]) { watcher in
            try await withKernel(manifest, readers: 1) { kernel in
                let code = await errorCode { try await readPayment(kernel, lane: "lane-1", timeout: .seconds(5)) }
                #expect(log.lastRemoval == .pulledMidExchange(command: 3))
                #expect(host.commandsAnswered == 2)
                // The pull ends the request, not its 5 s deadline (that would be deadlineExceeded).
                #expect(code == .cardRemoved)

                // The reader stays in rotation: once pcscd has seen the card go, the next card is read.
                try await watcher.waitForRemovals(1, on: reader)
                host.faults = VPCDCardHost.Faults()
                try host.insert()
                let read = try await readPayment(kernel, lane: "lane-1")
                #expect(read.outcome.status == .onlineRequest)
                #expect(read.outcome.lastFourDigits == "0119")
                #expect(read.reader == reader.id)
            }
        }
        await removeAndSettle([host])
    }

    @Test("a card that stops answering ends the request with a timeout within its deadline", .livePCSCD(.shared))
    func muteCardTimesOut() async throws {
        let reader = LivePCSCD.b1
        let host = VPCDCardHost(
            card: try loadCard("pay-mastercard-mchip.json"),
            endpoint: reader.endpoint,
            options: VPCDCardHost.Options(faults: VPCDCardHost.Faults(muteAfterCommands: 2))
        )
        try host.insert()
        let manifest = try pcscManifest(lanes: [("lane-1", reader)])
        try await withKernel(manifest, readers: 1) { kernel in
            let deadline = Duration.milliseconds(1500)
            let tap = Task { await errorCode { try await readPayment(kernel, lane: "lane-1", timeout: deadline) } }
            let code: ProximaError.Code?
            do {
                code = try await outcome(of: tap, "the tap with a \(deadline) deadline behind a mute card ending").get()
            } catch {
                // A tap stuck behind the mute card is freed by taking the card away (vpcd's recv then ends), so the
                // test fails instead of hanging the whole run.
                await host.remove()
                _ = await tap.value
                throw error
            }
            #expect(code == .deadlineExceeded || code == .cardTimeout, "\(String(describing: code))")

            // Taking the mute card away frees the reader; the next card is read.
            await removeAndSettle([host])
            host.faults = VPCDCardHost.Faults()
            try host.insert()
            let read = try await readPayment(kernel, lane: "lane-1")
            #expect(read.outcome.lastFourDigits == "0012")
        }
        await removeAndSettle([host])
    }

    @Test(
        "a reader held by another client's transaction: a tap waits for it, or ends at its deadline",
        .livePCSCD(.shared)
    )
    func sharedReaderWaitsForTheOtherClient() async throws {
        let reader = LivePCSCD.c0
        let host = VPCDCardHost(card: try loadCard("pay-visa-qvsdc.json"), endpoint: reader.endpoint)
        try host.insert()
        let manifest = try pcscManifest(lanes: [("lane-1", reader)])
        let holding = Gate()
        let release = Gate()
        try await withKernel(manifest, readers: 1) { holder in
            try await withKernel(manifest, readers: 1) { other in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    defer { release.open() }  // also when a wait below fails, so the holder's task ends
                    // The first kernel keeps its PC/SC transaction open until released.
                    group.addTask {
                        _ = try await readPayment(holder, lane: "lane-1") { _, _ in
                            holding.open()
                            await release.wait()
                        }
                    }
                    await holding.wait()

                    // A tap with a short deadline ends at it instead of hanging behind the transaction.
                    let short = Task {
                        await errorCode { try await readPayment(other, lane: "lane-1", timeout: .milliseconds(700)) }
                    }
                    let code = try await outcome(of: short, "a tap with a 700 ms deadline behind a transaction ending")
                        .get()
                    #expect(code == .deadlineExceeded)

                    // A patient tap is served as soon as the first kernel lets go: release once it holds the reader.
                    let events = other.events.subscribe()
                    let waiting = Task { try await readPayment(other, lane: "lane-1", timeout: .seconds(10)) }
                    _ = try await firstElement("the patient tap holding the reader", of: events) {
                        $0.kind == .readyForTap && $0.lane == "lane-1"
                    }
                    release.open()
                    let read = try await waiting.value
                    #expect(read.outcome.status == .onlineRequest)
                    try await group.waitForAll()
                }
                // Both kernels can read again: nothing was left locked.
                #expect(try await readPayment(holder, lane: "lane-1").outcome.status == .onlineRequest)
                #expect(try await readPayment(other, lane: "lane-1").outcome.status == .onlineRequest)
            }
        }
        await removeAndSettle([host])
    }

    @Test("an exclusive client makes another kernel's tap fail with readerBusy until it lets go", .livePCSCD(.shared))
    func exclusiveClientMakesTheReaderBusy() async throws {
        let reader = LivePCSCD.c0
        let host = VPCDCardHost(card: try loadCard("pay-visa-qvsdc.json"), endpoint: reader.endpoint)
        try host.insert()
        let exclusive = try pcscManifest(lanes: [("lane-1", reader)], exclusive: true)
        let shared = try pcscManifest(lanes: [("lane-1", reader)])
        let holding = Gate()
        let release = Gate()
        try await withKernel(exclusive, readers: 1) { holder in
            try await withKernel(shared, readers: 1) { other in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    defer { release.open() }
                    group.addTask {
                        _ = try await readPayment(holder, lane: "lane-1") { _, _ in
                            holding.open()
                            await release.wait()
                        }
                    }
                    await holding.wait()
                    let code = await errorCode { try await readPayment(other, lane: "lane-1", timeout: .seconds(5)) }
                    // At once, not at the 5 s deadline (that would be deadlineExceeded).
                    #expect(code == .readerBusy)
                    release.open()
                    try await group.waitForAll()
                }
                #expect(try await readPayment(other, lane: "lane-1").outcome.status == .onlineRequest)
            }
        }
        await removeAndSettle([host])
    }

    @Test(
        "pcscd killed and started again: requests during the outage fail fast, then the transport recovers by itself",
        .enabled(if: LivePCSCD.canRestart),
        .livePCSCD(.exclusive)
    )
    func daemonKilledAndRestarted() async throws {
        let reader = LivePCSCD.b0
        let idle = LivePCSCD.b1
        let host = VPCDCardHost(card: try loadCard("pay-visa-qvsdc.json"), endpoint: reader.endpoint)
        let manifest = try pcscManifest(lanes: [("lane-1", reader), ("lane-2", idle)], maxWaitMs: 60_000)
        try await withThrowingTaskGroup(of: Void.self) { hosting in
            // The card stays in the field, and comes back by itself once vpcd listens again.
            hosting.addTask { try await host.run(VPCDCardHost.Schedule(retryDelay: .milliseconds(50))) }
            try await withKernel(manifest, readers: 2) { kernel in
                #expect(try await readPayment(kernel, lane: "lane-1").outcome.status == .onlineRequest)

                // A tap waiting for a card on the other reader when pcscd dies.
                let events = kernel.events.subscribe()
                let waiting = Task {
                    await errorCode { try await readPayment(kernel, lane: "lane-2", timeout: .seconds(20)) }
                }
                _ = try await firstElement("the lane-2 tap waiting for a card", of: events) {
                    $0.kind == .readyForTap && $0.lane == "lane-2"
                }
                try await LivePCSCD.stop(signal: SIGKILL)
                // Ended by the vanished reader, not by its 20 s deadline (that would be deadlineExceeded).
                let waitingCode = try await outcome(of: waiting, "the waiting tap ending after pcscd was killed").get()
                #expect(waitingCode == .readerVanished, "\(String(describing: waitingCode))")

                // Requests while pcscd is down end, at the latest at their deadline.
                let during = Task {
                    await errorCode { try await readPayment(kernel, lane: "lane-1", timeout: .seconds(1)) }
                }
                let code = try await outcome(of: during, "a tap with a 1 s deadline while pcscd is down ending").get()
                #expect(
                    [.readerUnavailable, .readerVanished, .deadlineExceeded].contains(code),
                    "\(String(describing: code))"
                )

                try await LivePCSCD.start()
                try await waitUntil("the reader back in the pool", within: .seconds(15)) {
                    await kernel.snapshot().readers.contains { $0.info.id == reader.id && $0.state == .idle }
                }
                let read = try await readPayment(kernel, lane: "lane-1", timeout: .seconds(10))
                #expect(read.outcome.status == .onlineRequest)
                #expect(read.outcome.lastFourDigits == "0119")
            }
            hosting.cancelAll()
        }
        await removeAndSettle([host])
        #expect(host.presenceCount >= 2, "the card was inserted again after pcscd came back")
        #expect(!host.isInserted)
    }
}

/// A one-shot signal between tasks.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }
}
