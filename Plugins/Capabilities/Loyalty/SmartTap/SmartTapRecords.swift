internal import ProximaCore

/// The Smart Tap `ses` record: session id (8) ‖ sequence number (1) ‖ status (1, `01` OK) (kormax/google-smart-tap
/// README, "Records" and "Statuses"). The reader sends the last sequence number it saw; the phone answers it plus one.
package struct SmartTapSessionRecord: Hashable, Sendable {
    package var sessionID: [UInt8]
    package var sequence: UInt8
    package var status: UInt8

    package static let ok: UInt8 = 0x01

    package init(sessionID: [UInt8], sequence: UInt8, status: UInt8 = SmartTapSessionRecord.ok) {
        self.sessionID = sessionID
        self.sequence = sequence
        self.status = status
    }

    package var record: NDEFRecord { NDEFRecord(type: "ses", payload: sessionID + [sequence, status]) }

    /// The `ses` of `records`, checked against the session the reader runs: same id, the next sequence number,
    /// status OK.
    static func answer(in records: [NDEFRecord], to sent: SmartTapSessionRecord, step: String, parent: String)
        throws(LoyaltyError) -> SmartTapSessionRecord
    {
        let ses = try NDEF.required("ses", in: records, step: step, parent: parent)
        guard ses.payload.count == 10 else {
            throw LoyaltyError(.cardReadFailed, step: step, "ses has \(ses.payload.count) bytes, expected 10")
        }
        let answer = SmartTapSessionRecord(
            sessionID: Array(ses.payload[0..<8]),
            sequence: ses.payload[8],
            status: ses.payload[9]
        )
        guard answer.sessionID == sent.sessionID else {
            throw LoyaltyError(.cardReadFailed, step: step, "the phone answered another session id")
        }
        guard answer.sequence == sent.sequence &+ 1 else {
            throw LoyaltyError(
                .cardReadFailed,
                step: step,
                "sequence number \(answer.sequence) after \(sent.sequence); expected \(sent.sequence &+ 1)"
            )
        }
        guard answer.status == ok else {
            throw LoyaltyError(.cardReadFailed, step: step, "the session status is \(answer.status), expected 01 (OK)")
        }
        return answer
    }
}

extension SmartTapCrypto {
    static func bigEndian32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    /// `cld`: the BINARY format byte `04` ‖ the collector ID (4 bytes, big-endian).
    static func collectorRecord(_ collectorID: UInt32) -> NDEFRecord {
        NDEFRecord(type: "cld", payload: [0x04] + bigEndian32(collectorID))
    }
}
