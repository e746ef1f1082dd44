import ProximaCore
import ProximaCrypto

/// One mDL read's result with what a raw request hands over: the verified document, the decrypted DeviceResponse
/// bytes and the encoded SessionTranscript they were verified against, and the request that was answered.
package struct DocumentExchange: Sendable {
    package let document: VerifiedDocument
    /// The request (of those sent) whose docType came back.
    package let answered: DocumentRequest
    /// The decrypted DeviceResponse, as received (identity data: `package` only).
    package let deviceResponse: [UInt8]
    package let sessionTranscript: [UInt8]
}

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
    try await readDocument(
        anyOf: [request],
        on: channel,
        trust: trust,
        readerAuthentication: readerAuthentication,
        clock: clock
    ).document
}

/// Like ``readDocument(_:on:trust:readerAuthentication:clock:)`` with several DocRequests in one DeviceRequest
/// (one per docType): the first of `requests` whose docType the holder returned is verified.
///
/// - Throws: As the single-request read; `documentNotReturned` when none of the docTypes came back.
package func readDocument(
    anyOf requests: [DocumentRequest],
    on channel: any CardChannel,
    trust: MdocTrust,
    readerAuthentication: ReaderAuthenticationKey? = nil,
    clock: @Sendable () -> Int64
) async throws -> DocumentExchange {
    guard !requests.isEmpty else { throw MobileDocumentError(.documentNotReturned, "no document was requested") }
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
        for: requests,
        sessionTranscript: session.sessionTranscript,
        readerAuthentication: readerAuthentication
    )
    let answer = try await transfer.exchange(try session.sessionEstablishment(deviceRequest: requestBytes))
    let response = try session.openSessionData(answer)
    let now = clock()
    let transcript = session.sessionTranscript
    var exchange: DocumentExchange?
    var notReturned: MobileDocumentError?
    for request in requests {
        do {
            let document = try verifyDeviceResponse(
                response,
                request: request,
                sessionTranscript: transcript,
                macKey: { try session.deviceMacKey(deviceKey: $0) },
                trust: trust,
                now: now
            )
            exchange = DocumentExchange(
                document: document,
                answered: request,
                deviceResponse: response,
                sessionTranscript: transcript
            )
            break
        } catch let error as MobileDocumentError where error.code == .documentNotReturned {
            notReturned = notReturned ?? error
        }
    }
    // The holder may already have gone; the document is verified (or refused) either way.
    _ = try? await transfer.exchange(MdocSession.termination)
    guard let exchange else {
        throw notReturned ?? MobileDocumentError(.documentNotReturned, "no requested document came back")
    }
    return exchange
}
