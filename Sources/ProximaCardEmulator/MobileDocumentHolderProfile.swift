internal import Foundation
internal import ProximaCore

extension MobileDocumentHolder {
    /// The `mdl-holder` card profile: the TEST mDL of ``Credential/test(keysIn:)`` with its validity around the
    /// time the profile is read (signed yesterday, valid a year), device authentication by MAC or signature, and
    /// the tamper switches by name.
    ///
    /// ```json
    /// { "profile": "mdl-holder", "name": "TEST mDL holder", "keys": "../keys",
    ///   "deviceAuthentication": "mac", "tamper": ["expiredMSO"] }
    /// ```
    public static let profileKind = CardProfileKind(
        name: "mdl-holder",
        summary: "an ISO/IEC 18013-5 mDL holder (TEST keys), optionally with a failure switched on"
    ) { json, source in
        try MobileDocumentHolder(profile: json, source: source, now: Int64(Date().timeIntervalSince1970))
    }

    /// The switch names of a profile's `tamper` list.
    public static let tamperNames: [(String, Tamper)] = [
        ("tamperedElement", .tamperedElement), ("expiredMSO", .expiredMSO), ("unknownIACA", .unknownIACA),
        ("wrongDocType", .wrongDocType), ("badDeviceMAC", .badDeviceMAC), ("badDeviceSignature", .badDeviceSignature),
        ("muteAfterEngagement", .muteAfterEngagement),
    ]

    init(profile json: JSONValue, source: String, now: Int64) throws {
        let folder = (source as NSString).deletingLastPathComponent
        func resolve(_ path: String) -> String { path.hasPrefix("/") || folder.isEmpty ? path : folder + "/" + path }
        var object = try StrictObject(json, at: "", errorCode: .malformedData)
        _ = object.value("profile")
        let name = try object.optionalString("name")
        let keys = resolve(try object.string("keys"))
        let authentication = try object.optionalChoice("deviceAuthentication", ["mac", "signature"]) ?? "mac"
        let decoder = object
        let names = Self.tamperNames.map(\.0)
        let switches = try object.optionalArray("tamper") { value, path -> Tamper in
            let name = try decoder.decodeString(value, at: path)
            guard let found = Self.tamperNames.first(where: { $0.0 == name }) else {
                throw ProximaError(.malformedData, "\(path): unknown switch \"\(name)\", known: \(names)")
            }
            return found.1
        }
        try object.finish()
        var credential: Credential
        do {
            credential = try Credential.test(keysIn: keys)
        } catch {
            throw object.fail("keys", "\(keys) does not hold the TEST mDL keys (mdl-ds-test.pem, …): \(error)")
        }
        let day: Int64 = 86_400
        let signed = CivilTime(unixSeconds: (now / day - 1) * day)
        credential.signed = signed
        credential.validFrom = signed
        credential.validUntil = CivilTime(unixSeconds: signed.unixSeconds + 365 * day)
        credential.authenticatesByMAC = authentication == "mac"
        self.init(credential: credential, tamper: (switches ?? []).reduce(into: Tamper()) { $0.formUnion($1) })
        if let name { self.name = name }
    }
}
