internal import ProximaCore

extension VASSession {
    static let selectStep = "SELECT OSE.VAS.01"
    /// `OSE.VAS.01` in ASCII; Google Smart Tap answers the same name.
    static let applicationName: [UInt8] = Array("OSE.VAS.01".utf8)

    /// SELECT OSE.VAS.01. `nil` when the phone has no VAS application (any status but `9000`); an FCI without a
    /// VAS version (`9F21`), as an Android phone's Smart Tap directory, has an empty
    /// ``VASApplicationInfo/version`` and, where present, its ``VASApplicationInfo/smartTap`` part.
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
        return try Self.parseSelectResponse(response.data)
    }

    /// Parses the FCI of SELECT OSE.VAS.01: `6F { 50 label, 9F21 version (2), 9F24 nonce, 9F23 capabilities (4) }`.
    /// A missing `9F21` gives an empty ``VASApplicationInfo/version``. Total: any bytes give a value or an error.
    /// - Throws: ``LoyaltyError/Code/cardReadFailed`` naming the tag or length at fault.
    static func parseSelectResponse(_ data: [UInt8]) throws(LoyaltyError) -> VASApplicationInfo {
        let fci: TLV
        do {
            fci = try TLV.decode(data, maximumDepth: 6, maximumSize: 1024)
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
        return VASApplicationInfo(
            walletLabel: label,
            version: version,
            deviceNonce: nonce,
            capabilities: capabilities,
            smartTap: try parseSmartTapDirectory(fci)
        )
    }

    /// Smart Tap 2's AID, `A000000476D0000111` (Smart Tap 1's `…0101` no longer answers).
    static let smartTap2AID: [UInt8] = [0xA0, 0x00, 0x00, 0x04, 0x76, 0xD0, 0x00, 0x01, 0x11]

    /// The Smart Tap part of an OSE answer: `C0` version, `C2` device nonce (32 bytes), `C3` device ephemeral key
    /// (33 bytes) and whether a directory entry (`A5/BF0C/61/4F`) names Smart Tap 2. `nil` when the FCI has none
    /// of them (an iPhone's).
    static func parseSmartTapDirectory(_ fci: TLV) throws(LoyaltyError) -> SmartTapDirectory? {
        let version = fci.child(0xC0)?.value
        let nonce = fci.child(0xC2)?.value
        let key = fci.child(0xC3)?.value
        let entries = fci.find(path: [0xA5, 0xBF0C])?.children.filter { $0.tag == 0x61 } ?? []
        let offersSmartTap2 = entries.contains { $0.child(0x4F)?.value == smartTap2AID }
        guard version != nil || nonce != nil || key != nil || offersSmartTap2 else { return nil }
        if let nonce, nonce.count != 32 {
            throw LoyaltyError(
                .cardReadFailed,
                step: selectStep,
                "C2 (device nonce) has \(nonce.count) bytes, expected 32"
            )
        }
        if let key, key.count != 33 {
            throw LoyaltyError(.cardReadFailed, step: selectStep, "C3 (device key) has \(key.count) bytes, expected 33")
        }
        return SmartTapDirectory(
            version: version,
            deviceNonce: nonce,
            deviceEphemeral: key,
            offersSmartTap2: offersSmartTap2
        )
    }
}
