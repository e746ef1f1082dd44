import Foundation
package import MobileDocumentCapability
internal import PaymentCapability
public import ProximaCore
public import ProximaKernel
internal import Synchronization

/// An ISO/IEC 18013-5 mDL reader bound to a kernel and a lane (Apple's `MobileDocumentReader`): prepare a session
/// with a reader token from your server, then request documents on the lane's readers.
///
/// ```swift
/// let docReader = MobileDocumentReader()
/// let session = try await MobileDocumentReaderSession(reader: docReader, readerToken: readerToken)
/// try await session.prepare()
/// let response = try await session.readDocument(MobileDriversLicenseDataRequest(retainedElements: [.givenName]))
/// ```
///
/// ``init()`` uses the process-wide kernel of `PaymentCardReader()` (`PROXIMA_CONFIG`, else `Config/proxima.json`)
/// on the lane `PROXIMA_ID_LANE`, else the payment lane (`PROXIMA_LANE`), else the manifest's first lane.
/// ``init(kernel:lane:)`` binds a kernel the caller runs. The manifest's `capabilities.mobileDocument` block holds
/// the IACA trust anchors; without it every call throws ``MobileDocumentReaderError/notAllowed(_:)``.
public final class MobileDocumentReader: Sendable {
    /// Apple's reader configuration: what your server needs to mint a reader token.
    public struct Configuration: Hashable, Sendable {
        /// The `aud` reader tokens must name (`capabilities.mobileDocument.readerToken.readerIdentifier`, else
        /// `capabilities.payment.readerIdentifier`).
        public let readerInstanceIdentifier: String
    }

    /// A reader token from your server (Apple's `MobileDocumentReader.Token`): an ES256 JWT, verified for issuer,
    /// audience and expiry as processor tokens are.
    public struct Token: Hashable, Sendable {
        public let tokenString: String
        public init(_ tokenString: String) { self.tokenString = tokenString }
    }

    /// Readers run on Linux hosts with any supported transport: always `true`.
    public static let isSupported = true

    /// The ID service of the kernel and lane, or why there is none (every call then throws it).
    let service: Result<MobileDocumentService, MobileDocumentReaderError>

    /// A reader on the process-wide default kernel.
    public convenience init() {
        let environment = ProcessInfo.processInfo.environment
        let lane = DefaultMobileDocumentLane.name ?? environment["PROXIMA_ID_LANE"].flatMap { $0.isEmpty ? nil : $0 }
        switch DefaultPaymentKernel.kernel() {
        case .failure(let error):
            self.init(service: .failure(.notAllowed(error.reason)))
        case .success(let kernel):
            let chosen = lane ?? DefaultPaymentKernel.laneName
            self.init(service: Self.service(kernel, lane: chosen.map(LaneID.init(rawValue:))))
        }
    }

    /// A reader on `kernel` (which the caller runs), reading on `lane` (`nil`: the manifest's first lane).
    public convenience init(kernel: Kernel, lane: LaneID? = nil) {
        self.init(service: Self.service(kernel, lane: lane))
    }

    init(service: Result<MobileDocumentService, MobileDocumentReaderError>) { self.service = service }

    static func service(_ kernel: Kernel, lane: LaneID?) -> Result<MobileDocumentService, MobileDocumentReaderError> {
        let payment = try? PaymentSettings(manifest: kernel.manifest)
        return Result { () throws(MobileDocumentReaderError) in
            do throws(MobileDocumentServiceError) {
                return try MobileDocumentService(
                    kernel: kernel,
                    lane: lane,
                    paymentTokenCheck: payment.map { ($0.tokenCheck, $0.readerIdentifier) }
                )
            } catch {
                throw MobileDocumentErrorMapping.serviceError(error)
            }
        }
    }

    /// The kernel, unless the configuration could not be used.
    public var kernel: Kernel? { try? service.get().kernel }
    /// The lane documents are read on.
    public var lane: LaneID? { try? service.get().lane }

    /// The configuration your server mints reader tokens for (Apple's `configuration`).
    /// - Throws: ``MobileDocumentReaderError/notAllowed(_:)`` without valid settings or token rules.
    public var configuration: Configuration {
        get async throws {
            let service = try self.service.get()
            guard let identifier = service.readerIdentifier else {
                throw MobileDocumentReaderError.notAllowed(
                    "no reader identifier: add capabilities.mobileDocument.readerToken or capabilities.payment"
                )
            }
            return Configuration(readerInstanceIdentifier: identifier)
        }
    }

    /// A prepared session (Apple's `prepare(using:)`): the token verified, a reader of the lane ready.
    ///
    /// Apple's token is optional (branding only); here it authorises the reader, so `nil` throws
    /// ``MobileDocumentReaderError/invalidToken(_:)``.
    /// - Throws: ``MobileDocumentReaderError`` — `notAllowed`, `invalidToken`, `sessionExpired`,
    ///   `serviceUnavailable` (no reader of the lane became ready).
    public func prepare(using token: Token? = nil) async throws -> MobileDocumentReaderSession {
        guard let token else {
            throw MobileDocumentReaderError.invalidToken("prepare(using:) needs a reader token from your server")
        }
        let session = try await MobileDocumentReaderSession(reader: self, readerToken: token)
        try await session.prepare()
        return session
    }
}

/// The lane `MobileDocumentReader()` uses when set in code (the `Testing` SPI), before `PROXIMA_ID_LANE`.
enum DefaultMobileDocumentLane {
    private static let lane = Mutex<String?>(nil)
    static var name: String? { lane.withLock { $0 } }
    static func set(_ name: String?) { lane.withLock { $0 = name } }
}

extension MobileDocumentReader {
    /// Sets the lane of `MobileDocumentReader()` in code instead of `PROXIMA_ID_LANE`, for tests and hosts that
    /// must not change the process environment.
    @_spi(Testing)
    public static func setDefaultLane(_ lane: String?) { DefaultMobileDocumentLane.set(lane) }
}

/// One reader's document session (Apple's `MobileDocumentReaderSession`): one read at a time; every read checks
/// the token again (so an expired token ends the session with ``MobileDocumentReaderError/sessionExpired(_:)``).
public final class MobileDocumentReaderSession: Sendable {
    public let reader: MobileDocumentReader
    let token: MobileDocumentReader.Token
    /// How long ``prepare()`` waits for a reader of the lane.
    public let prepareTimeout: Duration
    /// How long one read may take, waiting for a reader and the holder included.
    public let readTimeout: Duration?
    private let reading = Mutex(false)

    /// A session for `reader`, its token verified now.
    /// - Throws: ``MobileDocumentReaderError`` — `notAllowed`, `invalidToken`, `sessionExpired`.
    public init(
        reader: MobileDocumentReader,
        readerToken: MobileDocumentReader.Token,
        prepareTimeout: Duration = .seconds(30),
        readTimeout: Duration? = .seconds(60)
    ) async throws {
        self.reader = reader
        self.token = readerToken
        self.prepareTimeout = prepareTimeout
        self.readTimeout = readTimeout
        try Self.mapped { try reader.service.get().verify(readerToken.tokenString) }
    }

    /// Checks the token again and waits until a reader of the lane is present (Apple's `prepare()`).
    /// - Throws: ``MobileDocumentReaderError`` — token errors, `serviceUnavailable` when no reader became ready in
    ///   ``prepareTimeout``.
    public func prepare() async throws {
        let service = try reader.service.get()
        try Self.mapped { try service.verify(token.tokenString) }
        guard await service.waitUntilReady(pinnedReader: nil, timeout: prepareTimeout) else {
            throw MobileDocumentReaderError.serviceUnavailable(
                "no reader of lane \"\(service.lane)\" became ready within \(prepareTimeout)"
            )
        }
    }

    /// Runs `request` on the lane (Apple's `requestDocument(_:)`): a tap, the ISO/IEC 18013-5 read and its
    /// verification against the manifest's IACAs.
    ///
    /// - Returns: The request's response: the outcome only for a display request (the elements went to the lane's
    ///   attendant display), the verified elements for a data request, the bytes for a raw request.
    /// - Throws: ``MobileDocumentReaderError`` — `invalidRequest`, `invalidToken`, `sessionExpired`,
    ///   `systemBusy` (a read is in progress), `invalidResponse(check:_:)` (the check that failed),
    ///   `serviceUnavailable`, `cancelled`, `notSupported`.
    public func requestDocument<Request: MobileDocumentRequest>(_ request: Request) async throws -> Request.Response {
        guard let mapping = request as? any DocumentRequestMapping else {
            throw MobileDocumentReaderError.invalidRequest("\(Request.self) is not a request type this build reads")
        }
        let service = try reader.service.get()
        let requests = try mapping.documentRequests
        let busy = reading.withLock { reading in
            defer { reading = true }
            return reading
        }
        guard !busy else { throw MobileDocumentReaderError.systemBusy("another document read of this session runs") }
        defer { reading.withLock { $0 = false } }
        let outcome: DocumentReadOutcome
        do {
            outcome = try await service.read(
                requests,
                token: token.tokenString,
                delivery: mapping.delivery,
                options: DocumentReadOptions(timeout: readTimeout)
            )
        } catch {
            throw MobileDocumentErrorMapping.readerError(error)
        }
        guard let response = try mapping.response(outcome) as? Request.Response else {
            throw MobileDocumentReaderError.unknown("the response does not match \(Request.self)")
        }
        return response
    }

    /// The usage sketch's name for ``requestDocument(_:)``.
    @discardableResult
    public func readDocument<Request: MobileDocumentRequest>(_ request: Request) async throws -> Request.Response {
        try await requestDocument(request)
    }

    @discardableResult
    private static func mapped<T>(_ body: () throws -> T) throws(MobileDocumentReaderError) -> T {
        do {
            return try body()
        } catch {
            throw MobileDocumentErrorMapping.readerError(error)
        }
    }
}

extension MobileDocumentReader {
    /// The ID service behind this reader, for the CLI and hosts inside the package (the check names and the
    /// attendant display); `nil` when the configuration cannot be used.
    package var documentService: MobileDocumentService? { try? service.get() }
}
