internal import ProximaCore

extension VASSession {
    static func getDataStep(_ collector: String) -> String { "GET DATA \(collector)" }
    /// GET MORE DATA rounds per pass at most (each answer is up to 256 bytes).
    static let maximumMoreDataRounds = 32
    /// The largest `srs` answer accepted, all rounds together.
    static let maximumServiceResponse = 16 * 1024

    /// `pcr` byte 5, the VAS type of the tap (kormax/google-smart-tap README, "Terminal capabilities").
    static func smartTapVASType(_ mode: VASMode) -> UInt8 {
        switch mode {
        case .vasOnly: 0x01  // pass only
        case .paymentOnly: 0x02  // payment only
        case .vasAndPayment: 0x04  // pass and payment
        case .vasOrPayment: 0x08  // pass over payment
        }
    }

    /// The GET DATA command (`90 50 00 00 Lc srq 00`): `srq` = version `0001` ‖ NDEF { `ses`, `mer` = NDEF { `cld` },
    /// `slr` = NDEF { `str` = `01` (every pass type but payment cards) }, `pcr` = POS capabilities (5) }. Byte 1 of
    /// `pcr` is `40` (zlib supported) | `01` (standalone), byte 5 the VAS type.
    static func getDataCommand(session: SmartTapSessionRecord, collectorID: UInt32, mode: VASMode) throws -> CommandAPDU
    {
        let merchant = NDEFRecord(type: "mer", payload: NDEF.encode([SmartTapCrypto.collectorRecord(collectorID)]))
        let services = NDEFRecord(type: "slr", payload: NDEF.encode([NDEFRecord(type: "str", payload: [0x01])]))
        let capabilities = NDEFRecord(type: "pcr", payload: [0x41, 0x00, 0x00, 0x00, smartTapVASType(mode)])
        let srq = NDEFRecord(
            type: "srq",
            payload: [0x00, 0x01] + NDEF.encode([session.record, merchant, services, capabilities])
        )
        return try CommandAPDU(cla: 0x90, ins: 0x50, p1: 0x00, p2: 0x00, data: NDEF.encode([srq]), expectedLength: 256)
    }

    /// GET MORE DATA, `90 C0 00 00 00` (no data in Smart Tap 2.1).
    static func getMoreDataCommand() throws -> CommandAPDU {
        try CommandAPDU(cla: 0x90, ins: 0xC0, p1: 0x00, p2: 0x00, expectedLength: 256)
    }

    /// The answer of GET DATA (all rounds joined): NDEF { `srs` = NDEF { `ses`, `reb` } }. Total.
    /// - Returns: The `reb` payload (flags ‖ IV ‖ ciphertext ‖ HMAC).
    static func parseServiceResponse(_ data: [UInt8], sent: SmartTapSessionRecord, step: String) throws(LoyaltyError)
        -> [UInt8]
    {
        let outer = try NDEF.decode(data, step: step)
        let srs = try NDEF.required("srs", in: outer, step: step, parent: "the answer")
        let inner = try NDEF.decode(srs.payload, step: step)
        _ = try SmartTapSessionRecord.answer(in: inner, to: sent, step: step, parent: "srs")
        return try NDEF.required("reb", in: inner, step: step, parent: "srs").payload
    }

    /// GET DATA, then GET MORE DATA while the phone answers `9100`, with the answers joined.
    /// - Returns: The record bundle, or the entry status of `9001`/`9102` (no pass) or `93xx` (customer action).
    /// - Throws: ``LoyaltyError`` — `sessionRefused` (`95xx`), `commandRejected` (`94xx`), `cardReadFailed` (`92xx`,
    ///   undefined status words, too many rounds or bytes, a malformed `srs`).
    func getSmartTapData(_ smartTap: LoyaltySettings.SmartTap, channel: SmartTapChannel, mode: VASMode) async throws
        -> SmartTapOutcome<[UInt8]>
    {
        let step = Self.getDataStep(smartTap.collectorName)
        var response = try await transceive(
            try Self.getDataCommand(session: channel.session, collectorID: smartTap.collectorID, mode: mode),
            step: step
        )
        var joined = response.data
        var rounds = 0
        while SmartTapStatus(response.status) == .moreData {
            rounds += 1
            guard rounds <= Self.maximumMoreDataRounds, joined.count <= Self.maximumServiceResponse else {
                throw LoyaltyError(
                    .cardReadFailed,
                    step: "GET MORE DATA \(smartTap.collectorName)",
                    "the phone still has more data after \(rounds - 1) rounds and \(joined.count) bytes"
                )
            }
            try checkCancellation(before: "GET MORE DATA")
            response = try await transceive(
                try Self.getMoreDataCommand(),
                step: "GET MORE DATA \(smartTap.collectorName)"
            )
            joined += response.data
        }
        switch SmartTapStatus(response.status) {
        case .success:
            return .value(try Self.parseServiceResponse(joined, sent: channel.session, step: step))
        case .noPass: return .entry(.vasDataNotFound)
        case .userAction: return .entry(.userInterventionRequired)
        case .refused:
            throw LoyaltyError(
                .sessionRefused,
                step: step,
                "status word \(response.status): \(SmartTapStatus.meaning(response.status))"
            )
        case .commandRejected:
            throw LoyaltyError(
                .commandRejected,
                step: step,
                "status word \(response.status): \(SmartTapStatus.meaning(response.status))"
            )
        case .moreData, .transient, .undefined:
            throw LoyaltyError(
                .cardReadFailed,
                step: step,
                "status word \(response.status): \(SmartTapStatus.meaning(response.status))"
            )
        }
    }
}
