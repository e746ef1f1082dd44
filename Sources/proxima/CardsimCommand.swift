import Foundation
import ProximaCardEmulator
import ProximaCore

/// `proxima cardsim --vpcd HOST:PORT --card FILE [--taps N] [--interval D]`, or `--pn532 [--link PATH]` instead of
/// `--vpcd` for an emulated PN532 on a pseudo-terminal.
enum CardsimCommand {
    static let command = Command(
        name: "cardsim",
        summary: "Host a virtual card on a vpcd reader slot in pcscd, or on an emulated PN532 (--pn532).",
        details: """
            Hosts a virtual card on a reader slot of vsmartcard's vpcd driver in pcscd, so that every PC/SC client
            (proxima with the pcsc transport, pcsc_scan, OpenSC) sees it in that reader. Prints one line each time the
            card enters or leaves the field (never card data). Ctrl-C takes the card out and stops.

            With --pn532 the card sits on an emulated PN532 board on a pseudo-terminal instead: the first line printed
            is its libnfc connstring (pn532_uart:/dev/pts/N), for LIBNFC_DEVICE=... nfc-list or a libnfc transport.
            """,
        options: [
            .value(
                "vpcd",
                "HOST:PORT",
                help: "Where vpcd listens for the slot: 127.0.0.1:35963 is \"Virtual PCD 00 00\" and 127.0.0.1:35964 "
                    + "\"Virtual PCD 00 01\" with Debian's vsmartcard-vpcd; the six readers of scripts/pcscd-harness.sh "
                    + "listen on 35963/35964, 35979/35980 and 35995/35996. Required unless --pn532."
            ),
            .flag("pn532", help: "Host the card on an emulated PN532 on a pseudo-terminal instead of vpcd."),
            .value("link", "PATH", help: "With --pn532: also make PATH a symbolic link to the terminal."),
            .value("card", "FILE", help: "A card profile, e.g. Config/cards/pay-visa-qvsdc.json.", required: true),
            .value("taps", "N", help: "Present the card N times, then stop.", defaultDescription: "no limit"),
            .value(
                "interval",
                "D",
                help: "Keep the card in the field for D, then out of it for D, and again (500ms, 2s, 1.5). Without "
                    + "--taps and --interval the card stays in the field until Ctrl-C, and comes back by itself when "
                    + "pcscd restarts.",
                defaultDescription: "1s when --taps is given"
            ),
        ],
        notes: "pcscd notices a card entering or leaving a vpcd reader within about 0.4 s (it polls).",
        readsManifest: false,
        action: { try await run($0) }
    )

    static func run(_ args: Arguments) async throws -> ExitCode {
        if args.flag("pn532") { return try await runPN532(args) }
        guard let endpointText = args.value("vpcd") else {
            throw UsageError("'proxima cardsim' needs --vpcd HOST:PORT (or --pn532)")
        }
        guard let endpoint = VPCDCardHost.Endpoint(parsing: endpointText) else {
            throw UsageError(
                "--vpcd must be HOST:PORT with a port in 1…65535, e.g. 127.0.0.1:35963, got \"\(endpointText)\""
            )
        }
        guard let cardPath = args.value("card") else { throw UsageError("cardsim needs --card FILE") }
        try FileChecks.cardProfile(cardPath)
        let card = try CardProfiles.load(contentsOf: cardPath)
        let schedule = try schedule(args)
        let taps = schedule.taps
        let total = taps.map { "/\($0)" } ?? ""
        let host = VPCDCardHost(card: card, endpoint: endpoint) { event in
            switch event {
            case .inserted(let presence, let endpoint):
                print("inserted  \(card.name) into vpcd \(endpoint) (tap \(presence)\(total))")
            case .removed(let presence, let endpoint, let reason, let commands):
                let why = reason == .removed ? "" : ": \(reason)"
                print("removed   \(card.name) from vpcd \(endpoint) (tap \(presence)\(total), \(commands) APDUs)\(why)")
            }
            flushStandardOutput()
        }
        try await host.run(schedule) { error in
            printError("proxima cardsim: \(error.reason); trying again until it listens (Ctrl-C stops)")
        }
        return .success
    }

    /// `--pn532`: the card on an emulated PN532 on a pseudo-terminal, until Ctrl-C or the last tap.
    static func runPN532(_ args: Arguments) async throws -> ExitCode {
        guard args.value("vpcd") == nil else { throw UsageError("--pn532 and --vpcd exclude each other") }
        guard let cardPath = args.value("card") else { throw UsageError("cardsim needs --card FILE") }
        try FileChecks.cardProfile(cardPath)
        let card = try CardProfiles.load(contentsOf: cardPath)
        let schedule = try schedule(args)
        let host = PN532CardHost(linkPath: args.value("link")) { event in
            switch event {
            case .inserted(let name): print("inserted  \(name) into the PN532")
            case .removed(let name, let apdus): print("removed   \(name) from the PN532 (\(apdus) APDUs)")
            case .started, .stopped: return
            }
            flushStandardOutput()
        }
        try host.start()
        print(host.connstring)
        flushStandardOutput()
        await host.run(schedule, card: card, clock: ContinuousClock())
        host.stop()
        return .success
    }

    /// The presence schedule of `--taps` and `--interval`.
    static func schedule(_ args: Arguments) throws -> VPCDCardHost.Schedule {
        let taps = try args.value("taps").map { _ in try args.integer("taps", in: 1...1_000_000) }
        let interval = try args.value("interval").map { text in
            guard let duration = parseDuration(text) else {
                throw UsageError("--interval must be a duration such as 500ms, 2s or 1.5 (seconds), got \"\(text)\"")
            }
            return duration
        }
        if taps == nil && interval == nil { return VPCDCardHost.Schedule() }
        let period = interval ?? .seconds(1)
        return VPCDCardHost.Schedule(taps: taps, present: period, absent: period)
    }

    /// `500ms`, `2s`, `1.5s` or a bare number of seconds; `nil` for anything else, zero, or over an hour.
    static func parseDuration(_ text: String) -> Duration? {
        let (number, unit): (Substring, Double) =
            if text.hasSuffix("ms") {
                (text.dropLast(2), 1e-3)
            } else if text.hasSuffix("s") {
                (text.dropLast(), 1)
            } else {
                (Substring(text), 1)
            }
        guard let value = Double(number), value.isFinite, value > 0 else { return nil }
        let seconds = value * unit
        guard seconds <= 3600 else { return nil }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}
