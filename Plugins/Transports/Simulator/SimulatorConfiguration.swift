public import ProximaCardEmulator
public import ProximaCore

/// The simulator transport's configuration: simulated readers, the cards that will be tapped on them, when
/// they arrive, the RF timing model and injected faults.
///
/// From the manifest (`plugins[i].config`), every member but `readers` optional:
///
/// ```json
/// { "bitRateKbps": 106, "airTime": true, "cardProcessingMs": 1.0,
///   "readers": [ { "id": "sim-0", "name": "Simulated reader 0", "extendedLength": true,
///                  "cards": ["cards/identity-visa-like.json"],
///                  "arrival": { "pattern": "fixed", "intervalMs": 500, "seed": 1 },
///                  "repeat": true,
///                  "faults": { "removeAfterExchanges": 3, "muteTimeoutMs": 500 } } ] }
/// ```
///
/// Tests, benchmarks and the demo build one in code with the memberwise initialisers.
public struct SimulatorConfiguration: Sendable {
    /// 106, 212, 424 or 848 kbit/s.
    public var bitRateKbps: Int
    /// Whether exchanges take their simulated RF and card time (``AirTimeModel``); `false` answers at once.
    public var airTime: Bool
    /// The card's compute time per APDU, part of the air-time model.
    public var cardProcessing: Duration
    public var readers: [Reader]

    public init(
        bitRateKbps: Int = 106,
        airTime: Bool = true,
        cardProcessing: Duration = .milliseconds(1),
        readers: [Reader]
    ) {
        self.bitRateKbps = bitRateKbps
        self.airTime = airTime
        self.cardProcessing = cardProcessing
        self.readers = readers
    }

    /// The timing model these settings describe.
    public var airTimeModel: AirTimeModel { AirTimeModel(bitRateKbps: bitRateKbps, cardProcessing: cardProcessing) }

    /// One simulated reader.
    public struct Reader: Sendable {
        /// The reader's id; it is also its kernel `ReaderID`, so lanes refer to it by this name.
        public var id: String
        /// The name reported in `ReaderInfo` (defaults to the id).
        public var name: String
        /// Whether extended-length APDUs reach the card (maximum command 65,544 bytes instead of 261).
        public var extendedLength: Bool
        /// The cards tapped on this reader, in order. Each connect takes the next one.
        public var cards: [any VirtualCard]
        public var arrival: Arrival
        /// Whether the queue starts over after the last card; when `false`, connects after the last card wait
        /// (until cancelled) as a reader with no card in its field does.
        public var repeats: Bool
        public var faults: Faults

        public init(
            id: String,
            name: String? = nil,
            extendedLength: Bool = true,
            cards: [any VirtualCard],
            arrival: Arrival = Arrival(),
            repeats: Bool = true,
            faults: Faults = Faults()
        ) {
            self.id = id
            self.name = name ?? id
            self.extendedLength = extendedLength
            self.cards = cards
            self.arrival = arrival
            self.repeats = repeats
            self.faults = faults
        }
    }

    /// When the next card enters the field, counted from the moment `connect` is called.
    public struct Arrival: Hashable, Sendable {
        public enum Pattern: String, Hashable, Sendable, CaseIterable {
            /// At once.
            case immediate
            /// After exactly `interval`.
            case fixed
            /// After an exponentially distributed delay with mean `interval` (a Poisson arrival process),
            /// drawn from a PRNG seeded with `seed`, so runs repeat.
            case poisson
        }

        public var pattern: Pattern
        public var interval: Duration
        public var seed: UInt64

        public init(pattern: Pattern = .fixed, interval: Duration = .milliseconds(500), seed: UInt64 = 1) {
            self.pattern = pattern
            self.interval = interval
            self.seed = seed
        }

        /// Cards are there at once.
        public static let immediate = Arrival(pattern: .immediate, interval: .zero)
    }

    /// Faults injected into every card presence on the reader. Exchanges are counted per presence, from 1.
    ///
    /// When several faults hit the same exchange, the first of vanish, remove, mute applies; corruption only
    /// applies to an exchange that gets an answer.
    public struct Faults: Hashable, Sendable {
        /// Exchange N+1 throws `cardRemoved` and the presence ends (`.cardRemoved` event); the reader serves
        /// the next card.
        public var removeAfterExchanges: Int?
        /// Exchange N+1 and every later one of the presence wait `muteTimeout`, then throw `cardTimeout`.
        public var muteAfterExchanges: Int?
        public var muteTimeout: Duration
        /// The N-th response is corrupted: see `SimulatorTransport` for the rule.
        public var corruptResponseAt: Int?
        /// Exchange N+1 throws `readerVanished`; the reader emits `.vanished` and, `reappearAfter` later
        /// (while `run()` runs), `.appeared` again.
        public var vanishAfterExchanges: Int?
        public var reappearAfter: Duration

        public init(
            removeAfterExchanges: Int? = nil,
            muteAfterExchanges: Int? = nil,
            muteTimeout: Duration = .milliseconds(500),
            corruptResponseAt: Int? = nil,
            vanishAfterExchanges: Int? = nil,
            reappearAfter: Duration = .milliseconds(1000)
        ) {
            self.removeAfterExchanges = removeAfterExchanges
            self.muteAfterExchanges = muteAfterExchanges
            self.muteTimeout = muteTimeout
            self.corruptResponseAt = corruptResponseAt
            self.vanishAfterExchanges = vanishAfterExchanges
            self.reappearAfter = reappearAfter
        }

        /// Whether any fault is configured.
        public var isEmpty: Bool {
            removeAfterExchanges == nil && muteAfterExchanges == nil && corruptResponseAt == nil
                && vanishAfterExchanges == nil
        }
    }
}

// MARK: - JSON

extension SimulatorConfiguration {
    /// Reads the plugin's `config` object and loads every card profile it names.
    ///
    /// - Parameters:
    ///   - json: the `config` object.
    ///   - path: its JSON path for messages (`plugins[0].config`).
    ///   - baseDirectory: the manifest's folder; relative card paths resolve against it.
    /// - Throws: `ProximaError.invalidManifest` naming the JSON path (`plugins[0].config.readers[1].cards[0]: …`)
    ///   and, for a card file, the card loader's reason.
    public init(json: JSONValue, path: String, baseDirectory: String) throws {
        var object = try StrictObject(json, at: path)
        let bitRateKey = "bitRateKbps"
        let bitRate = try object.optionalInteger(bitRateKey, in: 106...848).map(Int.init) ?? 106
        guard AirTimeModel.bitRates.contains(bitRate) else {
            throw object.fail(bitRateKey, "\(bitRate) is not an ISO/IEC 14443 bit rate, expected 106, 212, 424 or 848")
        }
        let airTime = try object.bool("airTime", default: true)
        let processingMs = try object.optionalNumber("cardProcessingMs", in: 0...10_000) ?? 1.0
        var seenIDs: [String: String] = [:]
        let readers = try object.array("readers") { element, readerPath in
            let reader = try Reader(json: element, path: readerPath, baseDirectory: baseDirectory)
            if let first = seenIDs[reader.id] {
                throw ProximaError(
                    .invalidManifest,
                    "\"\(reader.id)\" is already the id of \(first)",
                    jsonPath: "\(readerPath).id"
                )
            }
            seenIDs[reader.id] = readerPath
            return reader
        }
        guard !readers.isEmpty else { throw object.fail("readers", "expected at least one reader") }
        try object.finish()
        self.init(
            bitRateKbps: bitRate,
            airTime: airTime,
            cardProcessing: .microseconds((processingMs * 1000).rounded()),
            readers: readers
        )
    }
}

extension SimulatorConfiguration.Reader {
    init(json: JSONValue, path: String, baseDirectory: String) throws {
        var object = try StrictObject(json, at: path)
        let id = try object.string("id")
        let name = try object.optionalString("name") ?? id
        let extendedLength = try object.bool("extendedLength", default: true)
        let decoder = object
        let cards = try object.array("cards") { element, cardPath in
            let file = try decoder.decodeString(element, at: cardPath)
            let resolved = file.hasPrefix("/") || baseDirectory.isEmpty ? file : baseDirectory + "/" + file
            do {
                return try CardProfiles.load(contentsOf: resolved)
            } catch let error as ProximaError {
                throw ProximaError(
                    .invalidManifest,
                    "card profile \"\(file)\" is invalid: \(error.pathAndReason)",
                    jsonPath: cardPath,
                    underlying: error
                )
            }
        }
        guard !cards.isEmpty else { throw object.fail("cards", "expected at least one card profile path") }
        let arrival = try object.value("arrival").map {
            try SimulatorConfiguration.Arrival(json: $0, path: object.path(of: "arrival"))
        }
        let repeats = try object.bool("repeat", default: true)
        let faults = try object.value("faults").map {
            try SimulatorConfiguration.Faults(json: $0, path: object.path(of: "faults"))
        }
        try object.finish()
        self.init(
            id: id,
            name: name,
            extendedLength: extendedLength,
            cards: cards,
            arrival: arrival ?? SimulatorConfiguration.Arrival(),
            repeats: repeats,
            faults: faults ?? SimulatorConfiguration.Faults()
        )
    }
}

extension SimulatorConfiguration.Arrival {
    init(json: JSONValue, path: String) throws {
        var object = try StrictObject(json, at: path)
        let patternName = try object.optionalChoice("pattern", Pattern.allCases.map(\.rawValue))
        let pattern = patternName.flatMap(Pattern.init(rawValue:)) ?? .fixed
        let intervalMs = try object.optionalInteger("intervalMs", in: 0...3_600_000) ?? 500
        let seed = try object.optionalInteger("seed", in: Int64.min...Int64.max) ?? 1
        try object.finish()
        self.init(pattern: pattern, interval: .milliseconds(intervalMs), seed: UInt64(bitPattern: seed))
    }
}

extension SimulatorConfiguration.Faults {
    init(json: JSONValue, path: String) throws {
        var object = try StrictObject(json, at: path)
        let counts: ClosedRange<Int64> = 0...1_000_000_000
        let positive: ClosedRange<Int64> = 1...1_000_000_000
        let durations: ClosedRange<Int64> = 0...3_600_000
        let remove = try object.optionalInteger("removeAfterExchanges", in: counts)
        let mute = try object.optionalInteger("muteAfterExchanges", in: counts)
        let muteTimeoutMs = try object.optionalInteger("muteTimeoutMs", in: 1...3_600_000) ?? 500
        let corrupt = try object.optionalInteger("corruptResponseAt", in: positive)
        let vanish = try object.optionalInteger("vanishAfterExchanges", in: counts)
        let reappearMs = try object.optionalInteger("reappearAfterMs", in: durations) ?? 1000
        try object.finish()
        self.init(
            removeAfterExchanges: remove.map(Int.init),
            muteAfterExchanges: mute.map(Int.init),
            muteTimeout: .milliseconds(muteTimeoutMs),
            corruptResponseAt: corrupt.map(Int.init),
            vanishAfterExchanges: vanish.map(Int.init),
            reappearAfter: .milliseconds(reappearMs)
        )
    }
}
