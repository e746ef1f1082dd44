internal import Foundation
internal import ProximaCore

extension VASSession {
    static func getVASDataStep(_ passTypeIdentifier: String) -> String { "GET VAS DATA \(passTypeIdentifier)" }

    /// `9F22`: the protocol version, always 1.0.
    static let protocolVersion: [UInt8] = [0x01, 0x00]
    /// `9F2B`: the "filter"; kormax/apple-vas found `0100000000` the only value iPhones accept.
    static let filter: [UInt8] = [0x01, 0x00, 0x00, 0x00, 0x00]

    /// `9F26`, the terminal capabilities: byte 2 bit 8 "VAS supported", terminal type payment (bits 2–1 `00`);
    /// byte 4 bit 8 "more GET VAS DATA follow in this tap", bits 2–1 the mode.
    static func terminalCapabilities(mode: VASMode, moreFollow: Bool) -> [UInt8] {
        [0x00, 0x80, 0x00, (moreFollow ? 0x80 : 0x00) | mode.rawValue]
    }

    /// GET VAS DATA `80 CA 01 01 Lc data 00` (P2 `01`: a full request, not URL-only) for one merchant.
    static func getVASDataCommand(
        passTypeHash: [UInt8],
        signupURL: String?,
        mode: VASMode,
        moreFollow: Bool,
        terminalNonce: [UInt8]
    ) throws -> CommandAPDU {
        var objects = [
            TLV(tag: 0x9F22, value: protocolVersion),
            TLV(tag: 0x9F25, value: passTypeHash),
            TLV(tag: 0x9F26, value: terminalCapabilities(mode: mode, moreFollow: moreFollow)),
            TLV(tag: 0x9F2B, value: filter),
        ]
        if let signupURL { objects.append(TLV(tag: 0x9F29, value: Array(signupURL.utf8))) }
        objects.append(TLV(tag: 0x9F28, value: terminalNonce))
        return try CommandAPDU(cla: 0x80, ins: 0xCA, p1: 0x01, p2: 0x01, data: objects.bytes, expectedLength: 256)
    }

    /// The answer of a successful GET VAS DATA: `70 { 9F2A mobile token (may be empty), 9F27 cryptogram }`.
    /// Total: any bytes give a value or an error.
    /// - Throws: ``LoyaltyError/Code/cardReadFailed`` naming the tag or length at fault.
    static func parseVASData(_ data: [UInt8], step: String) throws(LoyaltyError)
        -> (cryptogram: [UInt8], mobileToken: [UInt8]?)
    {
        let template: TLV
        do {
            template = try TLV.decode(data, maximumDepth: 4, maximumSize: 1024)
        } catch {
            throw LoyaltyError(.cardReadFailed, step: step, "the answer is not BER-TLV: \(reason(of: error))")
        }
        guard template.tag == 0x70 else {
            throw LoyaltyError(.cardReadFailed, step: step, "the answer is tag \(template.tag), expected template 70")
        }
        guard let cryptogram = template.child(0x9F27)?.value else {
            throw LoyaltyError(.cardReadFailed, step: step, "template 70 has no cryptogram (9F27)")
        }
        let token = template.child(0x9F2A)?.value
        return (cryptogram, token?.isEmpty == false ? token : nil)
    }

    /// One merchant's GET VAS DATA and, on `9000`, its cryptogram decrypted and its age checked.
    /// - Throws: ``LoyaltyError`` — `cardReadFailed` for a status word VAS does not define or a malformed answer;
    ///   the cryptogram's errors (`unknownKey`, `cryptogramRejected`, `staleCryptogram`).
    func getVASData(
        _ asked: VASMerchantRequest,
        configured: LoyaltySettings.Merchant,
        mode: VASMode,
        moreFollow: Bool
    ) async throws -> VASEntry {
        let step = Self.getVASDataStep(asked.passTypeIdentifier)
        let nonce = try terminalNonces()
        let command = try Self.getVASDataCommand(
            passTypeHash: configured.passTypeHash,
            signupURL: asked.signupURL,
            mode: mode,
            moreFollow: moreFollow,
            terminalNonce: nonce
        )
        let response = try await transceive(command, step: step)
        guard let status = VASEntryStatus(statusWord: response.status) else {
            throw LoyaltyError(
                .cardReadFailed,
                step: step,
                "status word \(response.status) is not a VAS status (9000, 6A83, 6287, 6984, 6A80, 6700, 6B00, 6340)"
            )
        }
        var entry = VASEntry(passTypeIdentifier: asked.passTypeIdentifier, status: status)
        guard status == .success else { return entry }
        let (cryptogram, token) = try Self.parseVASData(response.data, step: step)
        let pass = try VASCryptogram.decrypt(cryptogram, merchant: configured)
        try VASCryptogram.checkAge(
            of: pass.timestamp,
            now: now(),
            maximumAge: settings.maxCryptogramAge,
            merchant: asked.passTypeIdentifier
        )
        entry.message = pass.message
        entry.cryptogramTime = pass.timestamp
        entry.mobileToken = token
        return entry
    }
}
