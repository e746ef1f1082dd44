import ProximaCore
import ProximaCrypto

/// The reader side of one mDL read over NFC, from engagement to a verified document (ISO/IEC 18013-5 §6.3):
/// static or negotiated (TNEP) handover engagement, session establishment with a fresh ephemeral key on the holder's curve, the
/// DeviceRequest (with reader authentication when a key is configured), the DeviceResponse, its verification,
/// and the session termination (status 20).
///
/// - Parameters:
///   - request: The document and elements to ask for, each with its intent to retain.
///   - channel: The tap's channel; the capability never owns the lease.
///   - trust: The IACA anchors and the clock skew.
///   - readerAuthentication: The reader key and chain from the manifest, if configured.
///   - clock: Seconds since 1970 UTC, read once for the verification.
/// - Returns: The verified document with the requested elements (identity data: `package` only).
/// - Throws: ``MobileDocumentError`` naming the step or check that failed; transport errors (`ProximaError`
///   `cardRemoved`, `cancelled`, …) as the channel throws them.
package func readDocument(
    _ request: DocumentRequest,
    on channel: any CardChannel,
    trust: MdocTrust,
    readerAuthentication: ReaderAuthenticationKey? = nil,
    clock: @Sendable () -> Int64
) async throws -> VerifiedDocument {
    let engagement = try await NFCEngagement.engage(on: channel)
    let handoverSelect = engagement.handoverSelect
    guard handoverSelect.offersNFC else {
        throw MobileDocumentError(
            .unsupportedEngagement,
            "the holder offers no NFC data transfer (BLE and Wi-Fi Aware are not supported)"
        )
    }
    var session = try MdocSession(engagement: handoverSelect.engagement, handover: engagement.handover)
    let transfer = NFCDataTransfer(
        channel: channel,
        holderMaximumCommandData: handoverSelect.maximumCommandDataLength
    )
    try await transfer.select()
    let requestBytes = try deviceRequest(
        for: [request],
        sessionTranscript: session.sessionTranscript,
        readerAuthentication: readerAuthentication
    )
    let answer = try await transfer.exchange(try session.sessionEstablishment(deviceRequest: requestBytes))
    let response = try session.openSessionData(answer)
    let document = try verifyDeviceResponse(
        response,
        request: request,
        sessionTranscript: session.sessionTranscript,
        macKey: { try session.deviceMacKey(deviceKey: $0) },
        trust: trust,
        now: clock()
    )
    // The holder may already have gone; the document is verified either way.
    _ = try? await transfer.exchange(MdocSession.termination)
    return document
}
