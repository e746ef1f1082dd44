internal import ProximaCore
internal import ProximaCrypto

extension VASSession {
    static func negotiateStep(_ collector: String) -> String { "NEGOTIATE SECURE CHANNEL \(collector)" }

    /// A step's value, or the entry status a phone's status word ends the read with.
    enum SmartTapOutcome<Value: Sendable>: Sendable {
        case value(Value)
        case entry(VASEntryStatus)
    }

    /// One negotiated Smart Tap session: its keys and the last `ses` the phone sent.
    struct SmartTapChannel: Sendable {
        var keys: SmartTapCrypto.SessionKeys
        var session: SmartTapSessionRecord
    }

    /// The NEGOTIATE SECURE CHANNEL command (`90 53 00 00 Lc ngr 00`):
    /// `ngr` = version `0001` ‖ NDEF { `ses`, `cpr` }, `cpr` = reader nonce (32) ‖ `01` (live authentication) ‖
    /// reader ephemeral key (33, compressed) ‖ key version (4) ‖ NDEF { `sig` = `04` ‖ DER signature, `cld` }.
    static func negotiateCommand(
        session: SmartTapSessionRecord,
        readerNonce: [UInt8],
        readerEphemeral: P256.PublicKey,
        keyVersion: UInt32,
        collectorID: UInt32,
        signature: P256.ECDSASignature
    ) throws -> CommandAPDU {
        let signatureRecord = NDEFRecord(type: "sig", payload: [0x04] + signature.derRepresentation)
        let parameters =
            readerNonce + [0x01] + readerEphemeral.compressedRepresentation + SmartTapCrypto.bigEndian32(keyVersion)
            + NDEF.encode([signatureRecord, SmartTapCrypto.collectorRecord(collectorID)])
        let cpr = NDEFRecord(type: "cpr", payload: parameters)
        let ngr = NDEFRecord(type: "ngr", payload: [0x00, 0x01] + NDEF.encode([session.record, cpr]))
        return try CommandAPDU(cla: 0x90, ins: 0x53, p1: 0x00, p2: 0x00, data: NDEF.encode([ngr]), expectedLength: 256)
    }

    /// The answer of NEGOTIATE SECURE CHANNEL: NDEF { `nrs` = NDEF { `ses`, `dpk` = device ephemeral key (33) } }.
    /// Total.
    /// - Returns: The phone's `ses` and its ephemeral key's 33 bytes.
    /// - Throws: ``LoyaltyError/Code/cardReadFailed`` naming the record at fault.
    static func parseNegotiateResponse(_ data: [UInt8], sent: SmartTapSessionRecord, step: String)
        throws(LoyaltyError) -> (session: SmartTapSessionRecord, deviceEphemeral: [UInt8])
    {
        let outer = try NDEF.decode(data, step: step)
        let nrs = try NDEF.required("nrs", in: outer, step: step, parent: "the answer")
        let inner = try NDEF.decode(nrs.payload, step: step)
        let session = try SmartTapSessionRecord.answer(in: inner, to: sent, step: step, parent: "nrs")
        let dpk = try NDEF.required("dpk", in: inner, step: step, parent: "nrs")
        guard dpk.payload.count == 33, dpk.payload[0] == 0x02 || dpk.payload[0] == 0x03 else {
            throw LoyaltyError(
                .cardReadFailed,
                step: step,
                "dpk has \(dpk.payload.count) bytes; expected a 33-byte compressed P-256 key"
            )
        }
        return (session, dpk.payload)
    }

    /// NEGOTIATE SECURE CHANNEL: signs reader nonce ‖ device nonce ‖ collector ID ‖ reader ephemeral key with the
    /// collector's long-term key, sends it with the key version, and derives the session keys from the phone's
    /// ephemeral key.
    /// - Returns: The channel, or the entry status when the phone answers a `93xx` (customer action).
    /// - Throws: ``LoyaltyError`` — `sessionRefused` (`95xx`: collector, key version or signature not accepted),
    ///   `commandRejected` (`94xx`), `cardReadFailed` (`92xx`, an undefined status word, a malformed answer or a key
    ///   not on P-256).
    func negotiate(_ smartTap: LoyaltySettings.SmartTap, deviceNonce: [UInt8]) async throws
        -> SmartTapOutcome<SmartTapChannel>
    {
        let step = Self.negotiateStep(smartTap.collectorName)
        let readerNonce = try smartTapRandomness.bytes(32)
        let readerEphemeral = try smartTapRandomness.ephemeralKey()
        let sent = SmartTapSessionRecord(sessionID: try smartTapRandomness.bytes(8), sequence: 0)
        let signed = SmartTapCrypto.signedData(
            readerNonce: readerNonce,
            deviceNonce: deviceNonce,
            collectorID: smartTap.collectorID,
            readerEphemeral: readerEphemeral.publicKey
        )
        let signature = try smartTap.signingKey.signature(for: signed)
        let command = try Self.negotiateCommand(
            session: sent,
            readerNonce: readerNonce,
            readerEphemeral: readerEphemeral.publicKey,
            keyVersion: smartTap.keyVersion,
            collectorID: smartTap.collectorID,
            signature: signature
        )
        let response = try await transceive(command, step: step)
        switch SmartTapStatus(response.status) {
        case .success: break
        case .userAction: return .entry(.userInterventionRequired)
        case .noPass: return .entry(.vasDataNotFound)
        case .refused:
            throw LoyaltyError(
                .sessionRefused,
                step: step,
                "status word \(response.status): \(SmartTapStatus.meaning(response.status)) (collector "
                    + "\(smartTap.collectorName), key version \(smartTap.keyVersion))"
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
        let (session, deviceEphemeral) = try Self.parseNegotiateResponse(response.data, sent: sent, step: step)
        do {
            let keys = try SmartTapCrypto.sessionKeys(
                readerEphemeral: readerEphemeral,
                deviceEphemeral: deviceEphemeral,
                readerNonce: readerNonce,
                deviceNonce: deviceNonce,
                collectorID: smartTap.collectorID,
                signature: signature
            )
            return .value(SmartTapChannel(keys: keys, session: session))
        } catch {
            throw LoyaltyError(
                .cardReadFailed,
                step: step,
                "the phone's ephemeral key is not a P-256 point (\(Self.reason(of: error)))"
            )
        }
    }
}
