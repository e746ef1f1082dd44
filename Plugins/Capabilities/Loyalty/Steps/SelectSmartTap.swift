internal import ProximaCore

extension VASSession {
    static let selectSmartTapStep = "SELECT Smart Tap 2"

    /// What SELECT Smart Tap 2 answered: the version range and the device nonce of its `mdn` record.
    struct SmartTapSelection: Hashable, Sendable {
        var minimumVersion: [UInt8]
        var maximumVersion: [UInt8]
        var deviceNonce: [UInt8]
    }

    /// SELECT Smart Tap 2 (`00 A4 04 00 09 A000000476D0000111 00`). `nil` when the phone answers anything but
    /// `9000` (no Smart Tap applet).
    /// - Throws: ``LoyaltyError/Code/cardReadFailed`` for a malformed answer.
    func selectSmartTap() async throws -> SmartTapSelection? {
        let command = try CommandAPDU(
            cla: 0x00,
            ins: 0xA4,
            p1: 0x04,
            p2: 0x00,
            data: Self.smartTap2AID,
            expectedLength: 256
        )
        let response = try await transceive(command, step: Self.selectSmartTapStep)
        guard response.status == .success else { return nil }
        return try Self.parseSmartTapSelection(response.data)
    }

    /// The answer of SELECT Smart Tap 2: minimum version (2) ‖ maximum version (2) ‖ NDEF { `mdn`: format byte ‖
    /// 32-byte device nonce } (kormax/google-smart-tap README, "SELECT SMART TAP APPLET"). Total.
    /// - Throws: ``LoyaltyError/Code/cardReadFailed`` naming the field at fault.
    static func parseSmartTapSelection(_ data: [UInt8]) throws(LoyaltyError) -> SmartTapSelection {
        let step = selectSmartTapStep
        guard data.count > 4 else {
            throw LoyaltyError(
                .cardReadFailed,
                step: step,
                "the answer has \(data.count) bytes; expected versions and NDEF"
            )
        }
        let records = try NDEF.decode(Array(data[4...]), step: step)
        let mdn = try NDEF.required("mdn", in: records, step: step, parent: "the SELECT answer")
        guard mdn.payload.count == 33 else {
            throw LoyaltyError(.cardReadFailed, step: step, "mdn has \(mdn.payload.count) bytes, expected 1 + 32")
        }
        return SmartTapSelection(
            minimumVersion: Array(data[0..<2]),
            maximumVersion: Array(data[2..<4]),
            deviceNonce: Array(mdn.payload[1...])
        )
    }
}
