package import Foundation
package import ProximaCore
internal import ProximaCrypto

/// The terminal side of Apple VAS (Value Added Services, Wallet passes) over a `CardChannel`.
///
/// Apple has published no specification; the steps follow the reverse-engineered protocol documented by
/// kormax/apple-vas (README, `examples/traces/VASONLY.READ.log`) and proxmark3 (`client/src/cmdhfvas.c`):
///
/// 1. **SELECT OSE.VAS.01** (`Steps/SelectVAS.swift`): `00 A4 04 00 0A "OSE.VAS.01" 00`; the FCI (`6F`) gives
///    the wallet label (`50`), the VAS version (`9F21`, only `0100` is spoken), the device nonce (`9F24`) and the
///    mobile capabilities (`9F23`). A phone without the application (any status but `9000`, or an FCI without
///    `9F21` such as an Android phone's) gives every merchant ``VASEntryStatus/vasDataNotFound``; another version
///    gives ``VASEntryStatus/unsupportedApplicationVersion``.
/// 2. **GET VAS DATA** per merchant (`Steps/GetVASData.swift`): `80 CA 01 01 Lc 9F22 9F25 9F26 9F2B [9F29] 9F28
///    00`, the "more requests follow" bit of `9F26` set on all but the last, so several passes are read in one
///    tap. The status word becomes the entry's status.
/// 3. **Decrypt the cryptogram** (`Steps/DecryptCryptogram.swift`): `9F27` = key id ‖ device ephemeral x ‖
///    AES-256-GCM ciphertext ‖ tag, with the key from ECDH P-256 and the ANSI X9.63 KDF; the plaintext's
///    timestamp must be within `maxCryptogramAgeSeconds` of now.
///
/// **Replay.** VAS puts no reader nonce into the cryptogram (the device nonce `9F24` and the terminal's `9F28`
/// do not enter it), so a cryptogram recorded off the air decrypts again on any reader with the merchant's key.
/// Only its timestamp's age stops a replay: keep `maxCryptogramAgeSeconds` short.
///
/// **Google Smart Tap 2.1.** When `capabilities.loyalty.smartTap` is configured and the OSE answer is an Android
/// phone's Smart Tap directory, the same tap goes on with SELECT Smart Tap 2, NEGOTIATE SECURE CHANNEL and GET DATA
/// (`SmartTap/SmartTapSession.swift`); the pass is one more entry whose merchant id is the collector ID in decimal,
/// so POS code handles both wallets through one request and one result.
///
/// Enhanced Contactless Polling (the `6A 01 …` frame real iPhones want before they open VAS) is not an APDU; it is
/// the reader's or transport's job and outside this capability.
package struct AppleVASCapability: Capability {
    package typealias Request = VASReadRequest
    package typealias Output = VASOutcome

    package let identifier: CapabilityID = "loyalty.vas"
    package var settings: LoyaltySettings
    /// The wall clock the cryptogram's timestamp is checked against.
    package var now: @Sendable () -> Date
    /// Four bytes for `9F28` each request; the OS CSPRNG unless a test injects a fixed source.
    package var terminalNonces: @Sendable () throws -> [UInt8]
    /// The Smart Tap reader nonce, session id and ephemeral key.
    package var smartTapRandomness: SmartTapRandomness

    package init(
        settings: LoyaltySettings,
        now: @escaping @Sendable () -> Date = { Date() },
        terminalNonces: @escaping @Sendable () throws -> [UInt8] = { try SecureRandom.bytes(count: 4) },
        smartTapRandomness: SmartTapRandomness = .system
    ) {
        self.settings = settings
        self.now = now
        self.terminalNonces = terminalNonces
        self.smartTapRandomness = smartTapRandomness
    }

    package var requirements: CapabilityRequirements {
        CapabilityRequirements(
            applicationIdentifiers: [VASSession.applicationName, VASSession.smartTap2AID],
            technologies: [.iso14443A, .iso14443B]
        )
    }

    /// Reads every merchant of `request` from the phone in `channel`.
    ///
    /// - Returns: one entry per merchant, in request order; status words are statuses, not errors.
    /// - Throws: ``LoyaltyError`` — `invalidRequest` (no merchant, or one without configured keys),
    ///   `cardReadFailed` (a malformed answer or an undefined status word), `unknownKey`, `cryptogramRejected`,
    ///   `staleCryptogram`; `ProximaError` from the channel, its reason prefixed with the step.
    package func run(_ request: VASReadRequest, on channel: any CardChannel, context: TapContext) async throws
        -> VASOutcome
    {
        do {
            var session = VASSession(
                settings: settings,
                now: now,
                terminalNonces: terminalNonces,
                smartTapRandomness: smartTapRandomness,
                channel: channel,
                context: context
            )
            return try await session.run(request)
        } catch let error as LoyaltyError {
            throw error.at(reader: channel.reader)
        }
    }
}

/// One VAS tap's state.
struct VASSession {
    let settings: LoyaltySettings
    let now: @Sendable () -> Date
    let terminalNonces: @Sendable () throws -> [UInt8]
    let smartTapRandomness: SmartTapRandomness
    let channel: any CardChannel
    let context: TapContext

    static let transceiveOptions = TransceiveOptions(maximumResponseLength: 2048, maximumGetResponseCount: 8)

    /// Checks the request against the settings before any APDU: every merchant must have keys.
    static func merchants(of request: VASReadRequest, in settings: LoyaltySettings) throws(LoyaltyError)
        -> [(VASMerchantRequest, LoyaltySettings.Merchant)]
    {
        guard !request.merchants.isEmpty else {
            throw LoyaltyError(.invalidRequest, step: "request", "the VAS request names no merchant")
        }
        guard request.merchants.count <= 16 else {
            throw LoyaltyError(
                .invalidRequest,
                step: "request",
                "the VAS request names \(request.merchants.count) merchants; at most 16 per tap"
            )
        }
        let collector = settings.smartTap?.collectorName
        return try request.merchants.filter { $0.passTypeIdentifier != collector }.map { (asked) throws(LoyaltyError) in
            guard let configured = settings.merchant(asked.passTypeIdentifier) else {
                var known = settings.merchants.map(\.passTypeIdentifier)
                if let collector { known.append("Smart Tap collector \(collector)") }
                throw LoyaltyError(
                    .invalidRequest,
                    step: "request",
                    "merchant \"\(asked.passTypeIdentifier)\" has no keys in capabilities.loyalty.appleVAS and is not "
                        + "the smartTap collector (configured: \(known.joined(separator: ", ")))"
                )
            }
            if let url = asked.signupURL {
                guard url.utf8.count <= 64, url.hasPrefix("https://"),
                    url.utf8.allSatisfy({ (0x21..<0x7F).contains($0) })
                else {
                    throw LoyaltyError(
                        .invalidRequest,
                        step: "request",
                        "merchant \"\(asked.passTypeIdentifier)\": the signup URL must be https, ASCII, at most 64 "
                            + "characters"
                    )
                }
            }
            return (asked, configured)
        }
    }

    mutating func run(_ request: VASReadRequest) async throws -> VASOutcome {
        let merchants = try Self.merchants(of: request, in: settings)
        guard request.mode != .paymentOnly else {
            return VASOutcome(application: nil, entries: [], reader: channel.reader)
        }
        let application = try await selectVAS()
        var appleEntries: [VASEntry] = []
        if !merchants.isEmpty {
            appleEntries = try await readApplePasses(merchants, application: application, mode: request.mode)
        }
        var smartTapEntry: VASEntry?
        if let smartTap = settings.smartTap {
            if let directory = application?.smartTap, directory.offersSmartTap2 || directory.deviceNonce != nil {
                smartTapEntry = try await readSmartTap(smartTap, directory: directory, mode: request.mode)
            } else if request.merchants.contains(where: { $0.passTypeIdentifier == smartTap.collectorName }) {
                smartTapEntry = VASEntry(passTypeIdentifier: smartTap.collectorName, status: .vasDataNotFound)
            }
        }
        // Request order; the Smart Tap entry where the request names the collector, else last.
        var entries: [VASEntry] = []
        var apple = appleEntries.makeIterator()
        for asked in request.merchants {
            if let smartTap = settings.smartTap, asked.passTypeIdentifier == smartTap.collectorName {
                if let entry = smartTapEntry { entries.append(entry) }
                smartTapEntry = nil
            } else if let entry = apple.next() {
                entries.append(entry)
            }
        }
        if let smartTapEntry { entries.append(smartTapEntry) }
        return VASOutcome(application: application, entries: entries, reader: channel.reader)
    }

    /// GET VAS DATA for every Apple merchant, or the status they all get when the phone has no usable Apple VAS.
    func readApplePasses(
        _ merchants: [(VASMerchantRequest, LoyaltySettings.Merchant)],
        application: VASApplicationInfo?,
        mode: VASMode
    ) async throws -> [VASEntry] {
        let unavailable: VASEntryStatus? =
            switch application {
            case nil: .vasDataNotFound
            case let info? where info.version.isEmpty: .vasDataNotFound
            case let info? where !info.isSupportedVersion: .unsupportedApplicationVersion
            case let info? where !info.mayPerformVAS: .vasDataNotFound
            default: nil
            }
        if let unavailable {
            return merchants.map { VASEntry(passTypeIdentifier: $0.0.passTypeIdentifier, status: unavailable) }
        }
        var entries: [VASEntry] = []
        for (index, (asked, configured)) in merchants.enumerated() {
            try checkCancellation(before: "GET VAS DATA")
            entries.append(
                try await getVASData(
                    asked,
                    configured: configured,
                    mode: mode,
                    moreFollow: index < merchants.count - 1
                )
            )
        }
        return entries
    }

    /// `channel.transceive` with the step named in every error.
    func transceive(_ command: CommandAPDU, step: String) async throws -> ResponseAPDU {
        do {
            return try await channel.transceive(command, options: Self.transceiveOptions)
        } catch let error as ProximaError {
            if error.code == .malformedData {
                throw LoyaltyError(.cardReadFailed, step: step, error.reason, reader: channel.reader)
            }
            throw ProximaError(
                error.code,
                "\(step): \(error.reason)",
                reader: error.reader ?? channel.reader,
                lane: error.lane ?? context.lane
            )
        }
    }

    /// `step` is only made when the task was cancelled.
    func checkCancellation(before step: @autoclosure () -> String) throws {
        guard Task.isCancelled else { return }
        throw ProximaError(.cancelled, "cancelled before \(step())", reader: channel.reader, lane: context.lane)
    }
}

extension VASSession {
    /// The reason of a `ProximaError` or `CryptoError`, or the error's description.
    static func reason(of error: any Error) -> String {
        if let error = error as? ProximaError { return error.reason }
        if let error = error as? CryptoError { return error.reason }
        return "\(error)"
    }
}

/// The parsers of a phone's VAS answers, for tests and the fuzz target.
package enum VASResponses {
    /// The FCI of SELECT OSE.VAS.01.
    package static func selectResponse(_ data: [UInt8]) throws(LoyaltyError) -> VASApplicationInfo {
        try VASSession.parseSelectResponse(data)
    }

    /// The `70` template of a successful GET VAS DATA.
    package static func vasData(_ data: [UInt8]) throws(LoyaltyError) -> (cryptogram: [UInt8], mobileToken: [UInt8]?) {
        try VASSession.parseVASData(data, step: "GET VAS DATA")
    }

    /// The GET VAS DATA command bytes for one merchant (tests compare them with the published trace).
    package static func getVASDataCommand(
        passTypeHash: [UInt8],
        signupURL: String?,
        mode: VASMode,
        moreFollow: Bool,
        terminalNonce: [UInt8]
    ) throws -> CommandAPDU {
        try VASSession.getVASDataCommand(
            passTypeHash: passTypeHash,
            signupURL: signupURL,
            mode: mode,
            moreFollow: moreFollow,
            terminalNonce: terminalNonce
        )
    }
}
