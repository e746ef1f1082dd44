internal import ProximaCore
package import ProximaCrypto

/// Where a Smart Tap read takes its randomness: the reader nonce (32 bytes), the session id (8 bytes) and the
/// reader's ephemeral key. The OS CSPRNG and a fresh key unless a test fixes them to build a transcript.
package struct SmartTapRandomness: Sendable {
    package var bytes: @Sendable (Int) throws -> [UInt8]
    package var ephemeralKey: @Sendable () throws -> P256.PrivateKey

    package init(
        bytes: @escaping @Sendable (Int) throws -> [UInt8],
        ephemeralKey: @escaping @Sendable () throws -> P256.PrivateKey
    ) {
        self.bytes = bytes
        self.ephemeralKey = ephemeralKey
    }

    package static let system = SmartTapRandomness(
        bytes: { try SecureRandom.bytes(count: $0) },
        ephemeralKey: { try P256.PrivateKey() }
    )
}

extension VASSession {
    /// Google Smart Tap 2.1 on a phone whose OSE answer offers it (kormax/google-smart-tap README; Google's sample
    /// terminal, Apache-2.0):
    ///
    /// 1. SELECT Smart Tap 2 (`Steps/SelectSmartTap.swift`) for the device nonce (`mdn`; the OSE answer's `C2` when
    ///    the phone has no `mdn`).
    /// 2. NEGOTIATE SECURE CHANNEL (`Steps/NegotiateSecureChannel.swift`): the collector's signature, the session
    ///    keys (HKDF-SHA256 → AES-128-CTR and HMAC-SHA256, `SmartTap/SmartTapCrypto.swift`).
    /// 3. GET DATA and GET MORE DATA while `9100` (`Steps/GetSmartTapData.swift`).
    /// 4. The record bundle opened down to the redemption value (`Steps/OpenSmartTapPass.swift`).
    ///
    /// - Returns: The collector's entry: ``VASEntryStatus/success`` with the redemption value, or the status a
    ///   phone's status word stands for (`9001` no pass → `vasDataNotFound`, `93xx` → `userInterventionRequired`).
    /// - Throws: ``LoyaltyError`` as the steps do; a phone that refuses the session (`95xx`) is `sessionRefused`,
    ///   one that rejects a command (`94xx`) `commandRejected`.
    func readSmartTap(_ smartTap: LoyaltySettings.SmartTap, directory: SmartTapDirectory, mode: VASMode) async throws
        -> VASEntry
    {
        var entry = VASEntry(passTypeIdentifier: smartTap.collectorName, status: .vasDataNotFound)
        try checkCancellation(before: Self.selectSmartTapStep)
        let selection = try await selectSmartTap()
        guard let deviceNonce = selection?.deviceNonce ?? directory.deviceNonce else { return entry }
        try checkCancellation(before: Self.negotiateStep(smartTap.collectorName))
        let channel: SmartTapChannel
        switch try await negotiate(smartTap, deviceNonce: deviceNonce) {
        case .value(let negotiated): channel = negotiated
        case .entry(let status):
            entry.status = status
            return entry
        }
        try checkCancellation(before: Self.getDataStep(smartTap.collectorName))
        switch try await getSmartTapData(smartTap, channel: channel, mode: mode) {
        case .value(let bundle):
            entry.message = try Self.openSmartTapPass(bundle, keys: channel.keys, collector: smartTap.collectorName)
            entry.status = .success
        case .entry(let status):
            entry.status = status
        }
        return entry
    }
}

/// The parsers of a phone's Smart Tap answers, for tests and the fuzz target. Each is total.
package enum SmartTapResponses {
    package static func ndef(_ data: [UInt8]) throws(LoyaltyError) -> [NDEFRecord] {
        try NDEF.decode(data, step: "fuzz")
    }

    /// The answer of SELECT Smart Tap 2; the device nonce.
    package static func selection(_ data: [UInt8]) throws(LoyaltyError) -> [UInt8] {
        try VASSession.parseSmartTapSelection(data).deviceNonce
    }

    /// The `nrs` answer of NEGOTIATE SECURE CHANNEL to `sent`; the device's ephemeral key.
    package static func negotiate(_ data: [UInt8], sent: SmartTapSessionRecord) throws(LoyaltyError) -> [UInt8] {
        try VASSession.parseNegotiateResponse(data, sent: sent, step: "fuzz").deviceEphemeral
    }

    /// The `srs` answer of GET DATA to `sent`; the record bundle.
    package static func serviceResponse(_ data: [UInt8], sent: SmartTapSessionRecord) throws(LoyaltyError)
        -> [UInt8]
    {
        try VASSession.parseServiceResponse(data, sent: sent, step: "fuzz")
    }

    /// A decrypted bundle down to its redemption value.
    package static func redemptionValue(_ plaintext: [UInt8]) throws(LoyaltyError) -> [UInt8] {
        try VASSession.redemptionValue(in: plaintext, step: "fuzz")
    }

    /// A sealed bundle opened (HMAC, AES-CTR, zlib) down to its redemption value.
    package static func openPass(_ bundle: [UInt8], keys: SmartTapCrypto.SessionKeys) throws(LoyaltyError) -> [UInt8] {
        try VASSession.openSmartTapPass(bundle, keys: keys, collector: "fuzz")
    }
}
