public import ProximaCore

/// A virtual card that answers from a fixed script: the first exchange whose command matches wins.
///
/// Loaded from a card profile (`"profile": "scripted"`, see ``CardProfiles``):
///
/// ```json
/// { "profile": "scripted", "name": "test card", "technology": "iso14443A",
///   "uid": "08A1B2C3", "atr": "3B80800101", "ats": "0578807002",
///   "exchanges": [ { "command": "00A40400 0E 325041592E5359532E4444463031 00", "match": "exact",
///                    "response": "6F…9000" } ],
///   "otherwise": "6D00" }
/// ```
///
/// `technology` (default `iso14443A`), `atr` (default the pseudo-ATR `3B80800101`), `ats` (default empty),
/// `match` (default `exact`) and `otherwise` (default `6D00`) are optional. A `prefix` command may be as short as
/// one byte; an `exact` one must be a well-formed APDU. Hex strings may contain spaces and colons.
///
/// A received command that is not a well-formed APDU (ISO/IEC 7816-4 §5.1) gets `6700` before any exchange is
/// tried; a well-formed one that matches nothing gets ``otherwise``. The card keeps no state between commands.
public struct ScriptedCard: VirtualCard, Hashable {
    /// How an exchange's command is compared with the command received.
    public enum Match: String, Hashable, Sendable, CaseIterable {
        /// The received bytes equal the command bytes.
        case exact
        /// The received bytes start with the command bytes (e.g. `00A40400` for any SELECT by name).
        case prefix
    }

    /// One scripted command and its answer.
    public struct Exchange: Hashable, Sendable {
        public var command: [UInt8]
        public var match: Match
        /// Response data followed by SW1 SW2.
        public var response: [UInt8]

        public init(command: [UInt8], match: Match = .exact, response: [UInt8]) {
            self.command = command
            self.match = match
            self.response = response
        }

        func matches(_ received: [UInt8]) -> Bool {
            switch match {
            case .exact: received == command
            case .prefix: received.starts(with: command)
            }
        }
    }

    public var name: String
    public var technology: CardTechnology
    public var uid: [UInt8]
    public var atr: [UInt8]
    public var ats: [UInt8]
    public var exchanges: [Exchange]
    /// The answer to a well-formed command no exchange matches (`6D00` unless the profile says otherwise).
    public var otherwise: [UInt8]

    public init(
        name: String,
        technology: CardTechnology = .iso14443A,
        uid: [UInt8],
        atr: [UInt8] = ScriptedCard.contactlessPseudoATR,
        ats: [UInt8] = [],
        exchanges: [Exchange],
        otherwise: [UInt8] = [0x6D, 0x00]
    ) {
        self.name = name
        self.technology = technology
        self.uid = uid
        self.atr = atr
        self.ats = ats
        self.exchanges = exchanges
        self.otherwise = otherwise
    }

    /// The PC/SC Part 3 pseudo-ATR of an ISO/IEC 14443-4 card without historical bytes (`3B 80 80 01 01`).
    public static let contactlessPseudoATR: [UInt8] = [0x3B, 0x80, 0x80, 0x01, 0x01]

    public mutating func respond(to command: [UInt8]) -> [UInt8] {
        guard CommandBytes.isWellFormed(command) else { return [0x67, 0x00] }
        for exchange in exchanges where exchange.matches(command) {
            return exchange.response
        }
        return otherwise
    }
}

// MARK: - Profile

extension ScriptedCard {
    /// The `scripted` profile kind.
    public static let profileKind = CardProfileKind(
        name: "scripted",
        summary: "answers commands from a list of exchanges (exact or prefix match)"
    ) { json, _ in
        try ScriptedCard(profile: json)
    }

    /// Largest hex field accepted: an extended command APDU (65,544 bytes) or response (65,538 bytes).
    static let maximumFieldBytes = 65_544

    /// Reads a `scripted` profile.
    ///
    /// - Throws: `ProximaError.malformedData` naming the JSON path (`exchanges[2].response: …`).
    init(profile json: JSONValue) throws {
        var object = try StrictObject(json, at: "", errorCode: .malformedData)
        _ = object.value("profile")
        let name = try object.string("name")
        let technologyName =
            try object.optionalChoice("technology", CardProfiles.technologyNames) ?? CardTechnology.iso14443A.rawValue
        let technology = CardTechnology(rawValue: technologyName) ?? .iso14443A
        let uid = try CardProfiles.hex(&object, "uid", count: 1...10)
        let atr = try CardProfiles.optionalHex(&object, "atr", count: 0...33) ?? ScriptedCard.contactlessPseudoATR
        let ats = try CardProfiles.optionalHex(&object, "ats", count: 0...254) ?? []
        let exchanges = try object.array("exchanges") { element, path in
            var entry = try StrictObject(element, at: path, errorCode: .malformedData)
            let match = try entry.optionalChoice("match", Match.allCases.map(\.rawValue)).flatMap(Match.init) ?? .exact
            let minimumCommand = match == .exact ? 4 : 1
            let command = try CardProfiles.hex(&entry, "command", count: minimumCommand...Self.maximumFieldBytes)
            if match == .exact && !CommandBytes.isWellFormed(command) {
                throw entry.fail("command", "\(command.count) bytes are no well-formed command APDU (check Lc and Le)")
            }
            let response = try CardProfiles.hex(&entry, "response", count: 2...Self.maximumFieldBytes)
            try entry.finish()
            return Exchange(command: command, match: match, response: response)
        }
        let otherwise =
            try CardProfiles.optionalHex(&object, "otherwise", count: 2...Self.maximumFieldBytes) ?? [0x6D, 0x00]
        try object.finish()
        self.init(
            name: name,
            technology: technology,
            uid: uid,
            atr: atr,
            ats: ats,
            exchanges: exchanges,
            otherwise: otherwise
        )
    }
}
