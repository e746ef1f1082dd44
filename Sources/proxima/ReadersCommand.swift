import Foundation
import Proxima
import ProximaCore
import ProximaKernel

/// `proxima readers [--watch]`.
enum ReadersCommand {
    static let command = Command(
        name: "readers",
        summary: "List readers with transport, lanes and state; --watch streams events.",
        details: """
            Starts the manifest's transports, lists every reader with its transport, the lanes it serves and its
            state. With --watch, keeps running and prints reader and session events as they happen (Ctrl-C stops).
            """,
        options: [.flag("watch", help: "Keep running and print reader and session events as they happen.")],
        action: { try await run($0) }
    )

    static func run(_ args: Arguments) async throws -> ExitCode {
        let manifest = try CLI.loadManifest(args.configPath)
        let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
        let watch = args.flag("watch")
        let events = kernel.events.subscribe(bufferSize: 4096)
        return await withTaskGroup(of: Void.self) { group in
            group.addTask { await kernel.run() }
            await waitForReaders(kernel)
            let snapshot = await kernel.snapshot()
            print(render(snapshot))
            for failure in kernel.pluginFailures { printError("proxima: \(failure)") }
            if watch {
                print("watching events (Ctrl-C stops)…")
                for await event in events {
                    print("\(format(event.time))  \(event)")
                    flushStandardOutput()
                }
            }
            group.cancelAll()
            return kernel.pluginFailures.isEmpty ? .success : .failure
        }
    }

    /// Waits until every reader the manifest declares has appeared; discovering transports (PC/SC) get half a
    /// second to report what they find.
    static func waitForReaders(_ kernel: Kernel) async {
        let declared = kernel.manifest.declaredReaders.count
        let discovering =
            kernel.manifest.enabledPlugins.count > Set(kernel.manifest.declaredReaders.map(\.transport)).count
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await kernel.waitForReaders(count: discovering ? Int.max : declared) }
            group.addTask { try? await Task.sleep(for: discovering ? .milliseconds(500) : .seconds(5)) }
            await group.next()
            group.cancelAll()
        }
        // Out-of-process drivers (the External transport) take a moment to start: give each up to 5 s to report.
        let drivers = Set(kernel.manifest.enabledPlugins.filter { $0.load == .process }.map(\.id))
        let clock = ContinuousClock()
        let end = clock.now + .seconds(5)
        while clock.now < end {
            let reported = Set(await kernel.snapshot().readers.map(\.info.transport))
            if drivers.isSubset(of: reported) { return }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    static func render(_ snapshot: PoolSnapshot) -> String {
        guard !snapshot.readers.isEmpty else { return "no readers" }
        return table(
            ["READER", "NAME", "TRANSPORT", "LANES", "STATE"],
            snapshot.readers.map { r in
                [
                    r.info.id.rawValue, r.info.name, r.info.transport,
                    r.lanes.isEmpty ? "shared pool" : r.lanes.map(\.rawValue).joined(separator: ","),
                    describe(r.state) + (r.holderLane.map { " by \($0)" } ?? ""),
                ]
            }
        )
    }

    static func describe(_ state: PoolSnapshot.ReaderState) -> String {
        switch state {
        case .idle: "idle"
        case .leased: "leased"
        case .faulted(let reason): "faulted: \(reason)"
        case .vanished: "vanished"
        }
    }

    static func format(_ time: Duration) -> String {
        String(format: "%9.3fs", time.milliseconds / 1000)
    }
}
