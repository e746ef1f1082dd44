internal import Foundation
public import ProximaCore

/// One kind of card profile: the value of a profile file's `"profile"` member and how to read the rest.
public struct CardProfileKind: Sendable {
    /// The `"profile"` value (`scripted`, later `emv-qvsdc`, `emv-mchip`).
    public var name: String
    /// One line for help texts and error messages.
    public var summary: String
    /// Reads the whole profile object (including its `"profile"` member) into a card.
    /// - Throws: `ProximaError.malformedData` naming the JSON path inside the profile, without the file name
    ///   (``CardProfiles`` adds it).
    public var parse: @Sendable (_ json: JSONValue, _ source: String) throws -> any VirtualCard

    public init(
        name: String,
        summary: String,
        parse: @escaping @Sendable (_ json: JSONValue, _ source: String) throws -> any VirtualCard
    ) {
        self.name = name
        self.summary = summary
        self.parse = parse
    }
}

/// Loads virtual cards from card profile files (`Config/cards/*.json`).
///
/// A profile is a JSON object whose `"profile"` member selects its kind from ``kinds``; the kind reads the
/// rest strictly (unknown members are errors). Every error is `ProximaError.malformedData` and reads
/// `<file>: <JSON path>: <what was expected>`.
public enum CardProfiles {
    /// The profile kinds Proxima knows, in the order error messages list them.
    public static let kinds: [CardProfileKind] = [
        ScriptedCard.profileKind, EMVCard.qvsdcProfileKind, EMVCard.mchipProfileKind, VASPhone.profileKind,
        SmartTapPhone.profileKind,
        MobileDocumentHolder.profileKind,
    ]

    /// Largest profile file read (a profile with a few hundred exchanges is far below it).
    public static let maximumFileBytes = 4 << 20

    /// Reads and parses the profile file at `path`.
    ///
    /// - Throws: `ProximaError.malformedData` naming the file, and the JSON path when the content is wrong.
    public static func load(contentsOf path: String) throws -> any VirtualCard {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ProximaError(.malformedData, "\(path): cannot read the card profile (\(error.localizedDescription))")
        }
        let json: JSONValue
        do {
            json = try JSONValue.parse(Array(data), limits: JSONValue.Limits(maxBytes: maximumFileBytes))
        } catch let error as ProximaError {
            throw ProximaError(.malformedData, "\(path): \(error.reason)")
        }
        return try parse(json, source: path)
    }

    /// Builds the card a parsed profile describes.
    ///
    /// - Parameter source: where the profile came from (a file name), put at the front of error messages.
    /// - Throws: `ProximaError.malformedData` reading `<source>: <JSON path>: <problem>`; an unknown or missing
    ///   `"profile"` lists the known kinds.
    public static func parse(_ json: JSONValue, source: String) throws -> any VirtualCard {
        do {
            var object = try StrictObject(json, at: "", errorCode: .malformedData)
            let known = kinds.map { "\"\($0.name)\"" }.joined(separator: ", ")
            guard let profileValue = object.value("profile") else {
                throw ProximaError(.malformedData, "profile: missing required member (one of \(known))")
            }
            let profile = try object.decodeString(profileValue, at: "profile")
            guard let kind = kinds.first(where: { $0.name == profile }) else {
                throw ProximaError(.malformedData, "profile: unknown profile \"\(profile)\", known: \(known)")
            }
            return try kind.parse(json, source)
        } catch let error as ProximaError {
            throw ProximaError(.malformedData, "\(source): \(error.pathAndReason)", underlying: error)
        }
    }

    /// The accepted `"technology"` values.
    static let technologyNames = ["iso14443A", "iso14443B", "felica", "contact", "unknown"]

    // MARK: Hex members, shared by the profile kinds

    /// A required hex member whose byte count lies in `count`.
    static func hex(_ object: inout StrictObject, _ key: String, count: ClosedRange<Int>) throws -> [UInt8] {
        let value = try object.required(key, expected: "a hex string")
        return try decodeHex(value, in: object, at: object.path(of: key), count: count)
    }

    /// An optional hex member whose byte count lies in `count`.
    static func optionalHex(_ object: inout StrictObject, _ key: String, count: ClosedRange<Int>) throws -> [UInt8]? {
        guard let value = object.value(key) else { return nil }
        return try decodeHex(value, in: object, at: object.path(of: key), count: count)
    }

    static func decodeHex(
        _ value: JSONValue,
        in object: StrictObject,
        at path: String,
        count: ClosedRange<Int>
    ) throws -> [UInt8] {
        let text = try object.decodeString(value, at: path, nonEmpty: false)
        guard let bytes = [UInt8](hex: text) else {
            throw ProximaError(
                .malformedData,
                "\(path): expected hex digits in pairs (0-9, A-F; spaces and colons allowed)"
            )
        }
        guard count.contains(bytes.count) else {
            throw ProximaError(
                .malformedData,
                "\(path): \(bytes.count) bytes, expected \(count.lowerBound)…\(count.upperBound)"
            )
        }
        return bytes
    }
}
