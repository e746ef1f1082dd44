import ProximaCore
import ProximaCrypto
package import ProximaKernel

#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// How a document read is shown or handed over (Apple's display, data and raw requests).
package enum DocumentDelivery: Sendable {
    /// The verified elements go to the lane's attendant display, never to the app; the app gets the outcome.
    case display
    /// The verified elements go to the app.
    case data
    /// The verified elements, the DeviceResponse bytes and the SessionTranscript go to the app.
    case raw
}

/// What a document read returns: the exchange, except for a display request, whose elements went to the lane's
/// display (`exchange` is then `nil`).
package struct DocumentReadOutcome: Sendable {
    /// The docType that verified and the IACA it chains to (no identity value).
    package let docType: String
    package let issuer: String
    package let deviceAuthentication: DeviceAuthenticationMethod
    /// `nil` for a display request.
    package let exchange: DocumentExchange?
}

/// Time limits and routing of a read.
package struct DocumentReadOptions: Sendable {
    package var pinnedReader: ReaderID?
    /// How long one read may take, waiting for a reader and the holder included.
    package var timeout: Duration?

    package init(pinnedReader: ReaderID? = nil, timeout: Duration? = .seconds(60)) {
        self.pinnedReader = pinnedReader
        self.timeout = timeout
    }
}

/// What an app's ID verification request becomes: the reader token verified (issuer, audience, expiry, as payment
/// tokens are), the request checked, a tap on the lane, the ISO/IEC 18013-5 read and verification against the
/// manifest's IACAs, and — for a display request — the elements shown on the lane's attendant display inside this
/// module, so the app gets only the outcome. The Apple-shaped API (`Proxima`) maps its names onto these calls.
package struct MobileDocumentService: Sendable {
    package let kernel: Kernel
    package let lane: LaneID
    package let settings: MobileDocumentSettings
    /// How reader tokens are verified: `capabilities.mobileDocument.readerToken`, else the payment's rules.
    package let tokenCheck: ReaderTokenCheck?
    /// The reader instance identifier tokens must name.
    package let readerIdentifier: String?
    package let now: @Sendable () -> Date

    /// A service for `lane` of `kernel`; `nil` picks the manifest's first lane.
    ///
    /// - Parameters:
    ///   - paymentTokenCheck: The payment settings' token rules and reader identifier, used when the manifest's
    ///     mobileDocument block has no `readerToken`.
    /// - Throws: ``MobileDocumentServiceError`` `unsupported` (no such lane), `notAllowed` (no valid
    ///   `capabilities.mobileDocument`).
    package init(
        kernel: Kernel,
        lane: LaneID?,
        paymentTokenCheck: (ReaderTokenCheck, String)? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(MobileDocumentServiceError) {
        let lanes = kernel.manifest.lanes.map(\.id)
        guard let chosen = lane ?? lanes.first else {
            throw MobileDocumentServiceError(.unsupported, "the manifest has no lanes")
        }
        guard lanes.contains(chosen) else {
            throw MobileDocumentServiceError(
                .unsupported,
                "lane \"\(chosen)\" is not in the manifest (lanes: \(lanes.map(\.rawValue).joined(separator: ", ")))"
            )
        }
        self.kernel = kernel
        self.lane = chosen
        let settings = try MobileDocumentSettings(manifest: kernel.manifest)
        self.settings = settings
        if let check = settings.readerToken {
            tokenCheck = check
            readerIdentifier = settings.readerIdentifier
        } else {
            tokenCheck = paymentTokenCheck?.0
            readerIdentifier = paymentTokenCheck?.1
        }
        self.now = now
    }

    // MARK: Token

    /// The token's claims, verified by the shared reader-token check.
    /// - Throws: ``MobileDocumentServiceError`` `invalidToken`, `tokenExpired`, `notAllowed` (no rules to verify
    ///   tokens with).
    @discardableResult
    package func verify(_ token: String) throws(MobileDocumentServiceError) -> JWTClaims {
        guard let tokenCheck else {
            throw MobileDocumentServiceError(
                .notAllowed,
                "reader tokens cannot be verified: add capabilities.mobileDocument.readerToken (publicKey, issuer, "
                    + "readerIdentifier) or a capabilities.payment block"
            )
        }
        guard token.contains(where: { !$0.isWhitespace }) else {
            throw MobileDocumentServiceError(.invalidToken, "the reader token is empty; ask your server for one")
        }
        do {
            return try tokenCheck.verify(token, now: now)
        } catch {
            if error.code == .expired {
                throw MobileDocumentServiceError(
                    .tokenExpired,
                    "the reader token has expired (\(error.reason)); ask your server for a new one",
                    underlying: error
                )
            }
            throw MobileDocumentServiceError(
                .invalidToken,
                "the reader token was refused: \(error.code): \(error.reason)",
                underlying: error
            )
        }
    }

    // MARK: Readiness

    /// Waits until a reader that may serve this lane (or `pinnedReader`) is present and healthy.
    package func waitUntilReady(pinnedReader: ReaderID?, timeout: Duration) async -> Bool {
        await kernel.waitUntilServable(lane: lane, pinnedReader: pinnedReader, timeout: timeout)
    }

    // MARK: Reading

    /// Checks `requests`: at least one, each with at least one element and no element twice in a namespace.
    /// - Throws: ``MobileDocumentServiceError/Code/invalidRequest``.
    package static func validate(_ requests: [DocumentRequest]) throws(MobileDocumentServiceError) {
        guard !requests.isEmpty else {
            throw MobileDocumentServiceError(.invalidRequest, "the request names no document")
        }
        for request in requests {
            guard request.elements.values.contains(where: { !$0.isEmpty }) else {
                throw MobileDocumentServiceError(.invalidRequest, "the \(request.docType) request names no element")
            }
        }
        let docTypes = requests.map(\.docType)
        if let twice = docTypes.enumerated().first(where: { docTypes[..<$0.offset].contains($0.element) }) {
            throw MobileDocumentServiceError(.invalidRequest, "\(twice.element) is requested twice")
        }
    }

    /// Reads a document on the lane: token, request, one tap, engagement, session, DeviceRequest (with reader
    /// authentication when configured), verification. For ``DocumentDelivery/display`` the verified elements are
    /// shown on the lane's attendant display inside the tap and the outcome carries no element.
    ///
    /// - Parameters:
    ///   - requests: One request per docType; the first returned is verified (Apple's any-of request).
    ///   - token: The reader token.
    ///   - delivery: Display, data or raw.
    /// - Throws: ``MobileDocumentServiceError`` (token, request, `noDisplay`), ``MobileDocumentError`` (the check
    ///   that failed), the kernel's `ProximaError` (deadline, reader gone, cancelled, …).
    package func read(
        _ requests: [DocumentRequest],
        token: String,
        delivery: DocumentDelivery,
        options: DocumentReadOptions = DocumentReadOptions()
    ) async throws -> DocumentReadOutcome {
        try verify(token)
        try Self.validate(requests)
        if delivery == .display, !kernel.laneDisplays.hasDisplay(lane) {
            throw MobileDocumentServiceError(
                .noDisplay,
                "lane \"\(lane)\" has no attendant display for a display request; use a data request or attach one"
            )
        }
        let settings = self.settings
        let now = self.now
        let kernel = self.kernel
        let lane = self.lane
        let tapOptions = TapOptions(reader: options.pinnedReader, timeout: options.timeout)
        return try await kernel.tap(lane: lane, options: tapOptions) { channel, _ in
            let exchange = try await readDocument(
                anyOf: requests,
                on: channel,
                trust: settings.trust,
                readerAuthentication: settings.readerAuthentication,
                clock: { Int64(now().timeIntervalSince1970) }
            )
            let document = exchange.document
            guard delivery == .display else {
                return DocumentReadOutcome(
                    docType: document.docType,
                    issuer: document.issuer,
                    deviceAuthentication: document.deviceAuthentication,
                    exchange: exchange
                )
            }
            guard kernel.laneDisplays.show(Self.displayContent(of: exchange), on: lane) else {
                throw MobileDocumentServiceError(.noDisplay, "the attendant display of lane \"\(lane)\" went away")
            }
            kernel.events.publish(
                KernelEvent(
                    .laneOutput("mobileDocument: \(document.docType) shown on the attendant display"),
                    lane: lane,
                    time: kernel.clock.now
                )
            )
            return DocumentReadOutcome(
                docType: document.docType,
                issuer: document.issuer,
                deviceAuthentication: document.deviceAuthentication,
                exchange: nil
            )
        }
    }

    /// The attendant display's content of a verified read: docType and IACA, then each requested element that
    /// came back, in the order asked (``ElementText``), and the verification line.
    package static func displayContent(of exchange: DocumentExchange) -> LaneDisplayContent {
        let document = exchange.document
        var items: [LaneDisplayContent.Item] = [
            .init(label: "docType", text: document.docType), .init(label: "issuer", text: document.issuer),
        ]
        for (namespace, elements) in exchange.answered.elements.sorted(by: { $0.key < $1.key }) {
            for identifier in elements.keys.sorted() {
                guard let value = document.elements[namespace]?[identifier] else {
                    items.append(.init(label: identifier, text: "(not returned)"))
                    continue
                }
                if identifier == "portrait", let bytes = value.bytesValue {
                    items.append(.init(label: identifier, text: ElementText.describe(value), image: bytes))
                } else {
                    items.append(.init(label: identifier, text: ElementText.describe(value)))
                }
            }
        }
        items.append(.init(label: "verified", text: "issuer, device"))
        return LaneDisplayContent(title: "\(document.docType) verified", items: items)
    }
}
