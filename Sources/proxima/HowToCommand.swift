import Foundation
import Proxima
import ProximaCore
import ProximaKernel

/// `proxima howto`: merchant education (Apple's `ProximityReaderDiscovery`), shown on a lane's display and
/// printed from it.
enum HowToCommand {
    static let command = Command(
        name: "howto",
        summary: "Show how to tap (merchant education) on a lane's display and print it.",
        details: """
            Shows the how-to content of ProximityReaderDiscovery on the lane's attendant display (the lane output of
            the kernel) and prints what the display received. With --all, every topic (how to tap, how to present a
            loyalty pass, how to present a mobile ID).
            """,
        options: [
            .value("lane", "L", help: "The lane whose display shows it.", defaultDescription: "the first lane"),
            .value("language", "CODE", help: "ISO 639-1 language (en, fr, de).", defaultDescription: "the locale's"),
            .flag("all", help: "Every topic, not only how to tap."),
        ],
        action: { try await run($0) }
    )

    static func run(_ args: Arguments) async throws -> ExitCode {
        let manifest = try CLI.loadManifest(args.configPath)
        let lane = try args.value("lane").map { name in
            guard manifest.lanes.contains(where: { $0.id.rawValue == name }) else {
                throw UsageError("lane \"\(name)\" is not in the manifest")
            }
            return LaneID(name)
        }
        let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
        let reader = PaymentCardReader(kernel: kernel, lane: lane)
        let discovery = ProximityReaderDiscovery(reader: reader, languageCode: args.value("language"))
        let contents =
            args.flag("all")
            ? try await discovery.contentList : [try await discovery.content(for: .payment(.howToTap))]
        let display = kernel.events.subscribe()
        for content in contents { try await discovery.presentContent(content, from: reader) }
        for line in await laneOutputs(display, count: contents.count) { print(line) }
        return .success
    }

    /// The first `count` lane outputs of `events`, as "[lane] line" lines.
    static func laneOutputs(_ events: AsyncStream<KernelEvent>, count: Int) async -> [String] {
        var lines: [String] = []
        var seen = 0
        for await event in events {
            guard case .laneOutput(let text) = event.kind else { continue }
            let lane = event.lane?.rawValue ?? "-"
            lines += text.split(separator: "\n", omittingEmptySubsequences: false).map { "[\(lane)] \($0)" }
            seen += 1
            if seen == count { break }
        }
        return lines
    }
}
