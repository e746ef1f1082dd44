internal import ProximaCore
internal import ProximaCrypto

extension VASSession {
    static func openPassStep(_ collector: String) -> String { "OPEN reb \(collector)" }
    /// The largest inflated bundle accepted.
    static let maximumInflatedBundle = 64 * 1024
    /// The service objects a pass may be (kormax/google-smart-tap README, "Records"): loyalty, offer, gift card,
    /// event ticket, flight, transit, generic, private label card.
    static let serviceObjectTypes = ["ly", "of", "gc", "et", "fl", "tr", "gr", "pl"]

    /// Opens a record bundle: HMAC checked first, AES-128-CTR, zlib when flag bit 1 is set, then the NDEF down to
    /// the pass's redemption value: NDEF { `asv` = NDEF { object (`ly`, `of`, …) = NDEF { …, `n` = format byte ‖
    /// value } } } (Google's sample terminal `GetDataResponse.java`). Total.
    /// - Returns: The redemption value (the first object's `n`, without its format byte).
    /// - Throws: ``LoyaltyError`` — `cryptogramRejected` (HMAC), `cardReadFailed` (too short, corrupt zlib,
    ///   malformed NDEF, no object with an `n`).
    static func openSmartTapPass(_ bundle: [UInt8], keys: SmartTapCrypto.SessionKeys, collector: String)
        throws(LoyaltyError) -> [UInt8]
    {
        let step = openPassStep(collector)
        let (flags, opened) = try SmartTapCrypto.openBundle(bundle, keys: keys)
        var plaintext = opened
        if flags & 0x02 != 0 {
            do {
                plaintext = try Zlib.inflate(opened, maximumOutput: maximumInflatedBundle)
            } catch {
                throw LoyaltyError(.cardReadFailed, step: step, "the compressed bundle: \(reason(of: error))")
            }
        }
        return try redemptionValue(in: plaintext, step: step)
    }

    /// The redemption value in a decrypted (and inflated) bundle. Total.
    static func redemptionValue(in plaintext: [UInt8], step: String) throws(LoyaltyError) -> [UInt8] {
        let records = try NDEF.decode(plaintext, step: step)
        for service in records where service.isNamed("asv") {
            for object in try NDEF.decode(service.payload, step: step)
            where serviceObjectTypes.contains(where: object.isNamed) {
                let fields = try NDEF.decode(object.payload, step: step)
                if let number = fields.first(where: { $0.isNamed("n") }) {
                    guard !number.payload.isEmpty else {
                        throw LoyaltyError(.cardReadFailed, step: step, "the redemption value (n) has no format byte")
                    }
                    return Array(number.payload.dropFirst())
                }
            }
        }
        throw LoyaltyError(
            .cardReadFailed,
            step: step,
            "the bundle holds no service object (asv → ly, of, gc, et, fl, tr, gr, pl) with a redemption value (n)"
        )
    }
}
