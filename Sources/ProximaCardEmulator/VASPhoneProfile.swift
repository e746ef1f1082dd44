internal import Foundation
internal import ProximaCore
internal import ProximaCrypto

extension VASPhone {
    /// The `vas-phone` profile kind:
    ///
    /// ```json
    /// { "profile": "vas-phone", "name": "virtual iPhone with a loyalty pass", "uid": "087A5501",
    ///   "passes": [ { "passTypeIdentifier": "pass.com.example.loyalty",
    ///                 "merchantPublicKey": "../keys/vas-test-public.pem", "message": "PROXIMA-LOYALTY-0001" } ],
    ///   "paymentCard": "pay-visa-qvsdc.json" }
    /// ```
    ///
    /// A pass may add `statusWord` (four hex digits answered instead of a cryptogram), `timestampOffsetSeconds`
    /// (added to the clock; negative for a stale cryptogram), `keyID` (four bytes of hex claimed instead of the
    /// key's) and `alterTag` (`true` flips a tag bit). `applicationVersion` (`9F21`, default `0100`) and
    /// `capabilities` (`9F23`, default `0000003E`) are optional; `paymentCard` (optional) names another profile,
    /// not a `vas-phone`. Paths resolve against the profile's folder.
    public static let profileKind = CardProfileKind(
        name: "vas-phone",
        summary: "an iPhone-like phone: Apple VAS passes, then optionally a payment card in the same tap"
    ) { json, source in
        try VASPhone(profile: json, source: source)
    }

    init(profile json: JSONValue, source: String) throws {
        let folder = (source as NSString).deletingLastPathComponent
        func resolve(_ path: String) -> String { path.hasPrefix("/") || folder.isEmpty ? path : folder + "/" + path }
        var object = try StrictObject(json, at: "", errorCode: .malformedData)
        _ = object.value("profile")
        let name = try object.string("name")
        let uid = try CardProfiles.hex(&object, "uid", count: 1...10)
        let ats = try CardProfiles.optionalHex(&object, "ats", count: 0...254) ?? [0x05, 0x78, 0x80, 0x70, 0x02]
        let version = try CardProfiles.optionalHex(&object, "applicationVersion", count: 0...4) ?? [0x01, 0x00]
        let capabilities = try CardProfiles.optionalHex(&object, "capabilities", count: 4...4) ?? [0, 0, 0, 0x3E]
        let passes = try object.array("passes") { element, path -> Pass in
            var pass = try StrictObject(element, at: path, errorCode: .malformedData)
            let identifier = try pass.string("passTypeIdentifier")
            let keyFile = resolve(try pass.string("merchantPublicKey"))
            let key: P256.PublicKey
            do {
                let pem = try String(contentsOfFile: keyFile, encoding: .utf8)
                key = try P256.PublicKey(pemRepresentation: pem)
            } catch {
                throw pass.fail("merchantPublicKey", "\(keyFile) is no readable P-256 public key in PEM")
            }
            let message = Array(try pass.string("message", nonEmpty: false).utf8)
            let status = try CardProfiles.optionalHex(&pass, "statusWord", count: 2...2).map {
                StatusWord($0[0], $0[1])
            }
            let offset = try pass.optionalInteger("timestampOffsetSeconds", in: -86_400_000...86_400_000) ?? 0
            let keyID = try CardProfiles.optionalHex(&pass, "keyID", count: 4...4)
            let alterTag = try pass.bool("alterTag", default: false)
            try pass.finish()
            return Pass(
                passTypeIdentifier: identifier,
                merchantKey: key,
                message: message,
                statusWord: status,
                timestampOffsetSeconds: offset,
                keyIDOverride: keyID,
                alterTag: alterTag
            )
        }
        var paymentCard: (any VirtualCard)?
        if let file = try object.optionalString("paymentCard") {
            let card = try CardProfiles.load(contentsOf: resolve(file))
            guard !(card is VASPhone) else { throw object.fail("paymentCard", "a phone cannot hold another phone") }
            paymentCard = card
        }
        try object.finish()
        self.init(
            name: name,
            passes: passes,
            paymentCard: paymentCard,
            uid: uid,
            ats: ats,
            applicationVersion: version,
            capabilities: capabilities
        )
    }
}
