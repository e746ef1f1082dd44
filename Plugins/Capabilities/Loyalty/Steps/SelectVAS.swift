internal import ProximaCore

extension VASSession {
    static let selectStep = "SELECT OSE.VAS.01"
    /// `OSE.VAS.01` in ASCII; Google Smart Tap answers the same name.
    static let applicationName: [UInt8] = Array("OSE.VAS.01".utf8)

    /// SELECT OSE.VAS.01. `nil` when the phone has no VAS application (any status but `9000`) or answers an FCI
    /// without a VAS version (`9F21`), as an Android phone's Smart Tap directory does.
    /// - Throws: ``LoyaltyError/Code/cardReadFailed`` for a malformed FCI.
    func selectVAS() async throws -> VASApplicationInfo? {
        let command = try CommandAPDU(
            cla: 0x00,
            ins: 0xA4,
            p1: 0x04,
            p2: 0x00,
            data: Self.applicationName,
            expectedLength: 256
        )
        let response = try await transceive(command, step: Self.selectStep)
        guard response.status == .success else { return nil }
        let info = try Self.parseSelectResponse(response.data)
        return info.version.isEmpty ? nil : info
    }

    /// Parses the FCI of SELECT OSE.VAS.01: `6F { 50 label, 9F21 version (2), 9F24 nonce, 9F23 capabilities (4) }`.
    /// A missing `9F21` gives an empty ``VASApplicationInfo/version``. Total: any bytes give a value or an error.
    /// - Throws: ``LoyaltyError/Code/cardReadFailed`` naming the tag or length at fault.
    static func parseSelectResponse(_ data: [UInt8]) throws(LoyaltyError) -> VASApplicationInfo {
        let fci: TLV
        do {
            fci = try TLV.decode(data, maximumDepth: 4, maximumSize: 1024)
        } catch {
            throw LoyaltyError(.cardReadFailed, step: selectStep, "the FCI is not BER-TLV: \(Self.reason(of: error))")
        }
        guard fci.tag == 0x6F else {
            throw LoyaltyError(.cardReadFailed, step: selectStep, "the answer is tag \(fci.tag), expected FCI 6F")
        }
        let version = fci.child(0x9F21)?.value ?? []
        guard version.isEmpty || version.count == 2 else {
            throw LoyaltyError(.cardReadFailed, step: selectStep, "9F21 has \(version.count) bytes, expected 2")
        }
        let capabilities = fci.child(0x9F23)?.value ?? []
        guard version.isEmpty || capabilities.count == 4 else {
            throw LoyaltyError(
                .cardReadFailed,
                step: selectStep,
                "9F23 (mobile capabilities) has \(capabilities.count) bytes, expected 4"
            )
        }
        let nonce = fci.child(0x9F24)?.value
        if let nonce, nonce.count > 32 {
            throw LoyaltyError(.cardReadFailed, step: selectStep, "9F24 has \(nonce.count) bytes, expected at most 32")
        }
        let label = fci.child(0x50).map { String(decoding: $0.value, as: UTF8.self) }
        return VASApplicationInfo(walletLabel: label, version: version, deviceNonce: nonce, capabilities: capabilities)
    }
}
