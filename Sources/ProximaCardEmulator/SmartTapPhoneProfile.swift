internal import Foundation
internal import ProximaCore
internal import ProximaCrypto

extension SmartTapPhone {
    /// The `smarttap-phone` profile kind:
    ///
    /// ```json
    /// { "profile": "smarttap-phone", "name": "virtual Android phone with a loyalty pass", "uid": "086A5501",
    ///   "passes": [ { "collectorID": 20180608, "keyVersion": 1, "collectorPublicKey": "../keys/smarttap-test-public.pem",
    ///                 "redemptionValue": "PROXIMA-GOOGLE-0001" } ],
    ///   "paymentCard": "pay-visa-qvsdc.json" }
    /// ```
    ///
    /// A pass may add `objectType` (`ly` by default; `of`, `gc`, `et`, `fl`, `tr`, `gr`), `compress` (`true`:
    /// zlib when the terminal inflates) and `statusWord` (four hex digits answered to GET DATA instead). The phone
    /// may add `chunkSize` (bytes per GET DATA answer, 16–254, default 240), `alterMAC` (`true` flips a MAC bit)
    /// and `paymentCard` (another profile, not a phone). Paths resolve against the profile's folder.
    public static let profileKind = CardProfileKind(
        name: "smarttap-phone",
        summary: "an Android-like phone: Google Smart Tap 2.1 passes, then optionally a payment card in the same tap"
    ) { json, source in
        try SmartTapPhone(profile: json, source: source)
    }

    init(profile json: JSONValue, source: String) throws {
        let folder = (source as NSString).deletingLastPathComponent
        func resolve(_ path: String) -> String { path.hasPrefix("/") || folder.isEmpty ? path : folder + "/" + path }
        var object = try StrictObject(json, at: "", errorCode: .malformedData)
        _ = object.value("profile")
        let name = try object.string("name")
        let uid = try CardProfiles.hex(&object, "uid", count: 1...10)
        let ats = try CardProfiles.optionalHex(&object, "ats", count: 0...254) ?? [0x05, 0x78, 0x80, 0x70, 0x02]
        let chunkSize = try object.optionalInteger("chunkSize", in: 16...254) ?? 240
        let alterMAC = try object.bool("alterMAC", default: false)
        let passes = try object.array("passes") { element, path -> Pass in
            var pass = try StrictObject(element, at: path, errorCode: .malformedData)
            let collector = try pass.integer("collectorID", in: 1...Int64(UInt32.max))
            let version = try pass.integer("keyVersion", in: 1...Int64(UInt32.max))
            let keyFile = resolve(try pass.string("collectorPublicKey"))
            let key: P256.PublicKey
            do {
                key = try P256.PublicKey(pemRepresentation: try String(contentsOfFile: keyFile, encoding: .utf8))
            } catch {
                throw pass.fail("collectorPublicKey", "\(keyFile) is no readable P-256 public key in PEM")
            }
            let objectType = try pass.optionalString("objectType") ?? "ly"
            guard ["ly", "of", "gc", "et", "fl", "tr", "gr", "pl"].contains(objectType) else {
                throw pass.fail("objectType", "expected one of ly, of, gc, et, fl, tr, gr, pl")
            }
            let value = Array(try pass.string("redemptionValue").utf8)
            let compress = try pass.bool("compress", default: false)
            let status = try CardProfiles.optionalHex(&pass, "statusWord", count: 2...2).map {
                StatusWord($0[0], $0[1])
            }
            try pass.finish()
            return Pass(
                collectorID: UInt32(collector),
                keyVersion: UInt32(version),
                collectorKey: key,
                objectType: objectType,
                redemptionValue: value,
                compress: compress,
                statusWord: status
            )
        }
        var paymentCard: (any VirtualCard)?
        if let file = try object.optionalString("paymentCard") {
            let card = try CardProfiles.load(contentsOf: resolve(file))
            guard !(card is SmartTapPhone), !(card is VASPhone) else {
                throw object.fail("paymentCard", "a phone cannot hold another phone")
            }
            paymentCard = card
        }
        try object.finish()
        self.init(
            name: name,
            passes: passes,
            paymentCard: paymentCard,
            uid: uid,
            ats: ats,
            chunkSize: Int(chunkSize),
            alterMAC: alterMAC
        )
    }
}
