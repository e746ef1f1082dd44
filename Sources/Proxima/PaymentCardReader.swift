import Foundation
internal import PaymentCapability
public import ProximaCore
public import ProximaKernel

/// A payment card reader bound to a kernel and a lane (Apple's `PaymentCardReader`): link the merchant account,
/// prepare a session, and read cards on the lane's readers.
///
/// ```swift
/// let reader = PaymentCardReader()
/// let token = PaymentCardReader.Token(rawValue: pspProvidedJWT)
/// if try await !reader.isAccountLinked(using: token) {
///     try await reader.linkAccount(using: token)
/// }
/// let session = try await reader.prepare(using: token)
/// let result = try await session.readPaymentCard(
///     PaymentCardTransactionRequest(amount: Decimal(string: "29.99")!, currencyCode: "USD", type: .purchase)
/// )
/// // Send result.paymentCardData to the processor.
/// ```
///
/// ``init(options:)`` uses a process-wide kernel configured by `PROXIMA_CONFIG` (else `Config/proxima.json`) on
/// the lane `PROXIMA_LANE` (else the manifest's first lane), so code written for iOS compiles and runs unchanged.
/// ``init(kernel:lane:options:)`` binds a kernel the caller runs.
///
/// The manifest's `capabilities.payment` block holds the processor key, the token issuer
/// and this kernel's reader identifier; without it every call throws ``PaymentCardReaderError/notAllowed(_:)``.
///
/// One read at a time per reader: a second concurrent read throws ``PaymentCardReaderError/readerBusy(_:)``. Keep
/// one `PaymentCardReader` per concurrent customer (each sees only its own read's events).
public final class PaymentCardReader: Sendable {
    /// Options of a reader (Apple's `PaymentCardReader.Options`, plus Proxima's time limits).
    public struct Options: Hashable, Sendable {
        /// When `true`, a read whose card declined or had no usable application returns a result with outcome
        /// ``PaymentCardReadResult/ReadOutcome/cardDeclined`` or ``PaymentCardReadResult/ReadOutcome/failure``
        /// (and the card data it got) instead of throwing.
        public var includeErrorInReadResult: Bool
        /// Kept for source compatibility: there is no system sheet whose animation a result could skip.
        public var returnReadResultImmediately: Bool
        /// How long one read may take, waiting for a reader and a card included; `nil` waits as long as the lane
        /// lets a request wait for a reader, then for the card until the read is cancelled.
        public var readTimeout: Duration?
        /// How long ``PaymentCardReaderSession/prepare()`` waits for a reader of the lane to be present.
        public var prepareTimeout: Duration
        /// Read only on this reader (by kernel reader id), whatever lane it belongs to: for lane wiring checks and
        /// support. `nil` lets the kernel route the read to any free reader of the lane.
        public var pinnedReader: ReaderID?

        public init(
            includeErrorInReadResult: Bool = false,
            returnReadResultImmediately: Bool = false,
            readTimeout: Duration? = .seconds(60),
            prepareTimeout: Duration = .seconds(30),
            pinnedReader: ReaderID? = nil
        ) {
            self.includeErrorInReadResult = includeErrorInReadResult
            self.returnReadResultImmediately = returnReadResultImmediately
            self.readTimeout = readTimeout
            self.prepareTimeout = prepareTimeout
            self.pinnedReader = pinnedReader
        }
    }

    /// What the reader reports while preparing and reading (Apple's `PaymentCardReader.Event`).
    public enum Event: Hashable, Sendable, CustomStringConvertible {
        /// A reader of the lane is waiting for the card: ask the customer to tap.
        case readyForTap
        /// A card is in the field.
        case cardDetected
        /// The card is no longer needed: the customer may take it away.
        case removeCard
        /// The card was read (also when it declined).
        case readCompleted
        /// The card asks to be presented again (e.g. after unlocking a phone).
        case readRetry
        /// The read ended without card data: card removed too early, unreadable, not supported, no reader.
        case readNotCompleted
        /// The read was cancelled.
        case readCancelled
        /// The card asks for online PIN: capture it for the authorisation.
        case pinEntryRequested
        /// The reader is not ready: no reader of the lane is present, or the kernel is stopping.
        case notReady
        /// Progress of ``PaymentCardReaderSession/prepare()``, 1–100.
        case updateProgress(Int)

        /// The case name (Apple's `name`).
        public var name: String {
            switch self {
            case .readyForTap: "readyForTap"
            case .cardDetected: "cardDetected"
            case .removeCard: "removeCard"
            case .readCompleted: "readCompleted"
            case .readRetry: "readRetry"
            case .readNotCompleted: "readNotCompleted"
            case .readCancelled: "readCancelled"
            case .pinEntryRequested: "pinEntryRequested"
            case .notReady: "notReady"
            case .updateProgress: "updateProgress"
            }
        }

        public var description: String {
            if case .updateProgress(let percent) = self { return "updateProgress(\(percent))" }
            return name
        }
    }

    /// Readers run on Linux hosts with any supported transport: always `true` (Apple's checks the device model).
    public static let isSupported = true

    public let options: Options
    /// Reader events (Apple's `events`): prepare progress and the lifecycle of each read of this reader, in order
    /// (`readyForTap`, `cardDetected`, `removeCard`, `pinEntryRequested`, then `readCompleted`,
    /// `readNotCompleted`, `readCancelled` or `readRetry`). It keeps the newest 256 undelivered events; it finishes
    /// when the reader is released. Iterate it from one task, as any `AsyncStream`.
    public let events: AsyncStream<Event>

    /// The payment service of the kernel and lane, or why there is none (every call then throws it).
    let service: Result<PaymentService, PaymentCardReaderError>
    /// One read at a time on this reader, and `cancelRead()`.
    let readSlot = PaymentReadSlot()
    /// The loyalty service of the same kernel and lane, made (and its keys loaded) on first use.
    let loyalty = LoyaltyServiceCache()
    /// The store-and-forward service (made on first use) and the merchant of the last online prepare.
    let storeAndForward = StoreAndForwardState()
    private let eventContinuation: AsyncStream<Event>.Continuation

    /// A reader on the process-wide default kernel (Apple's `init(options:)`).
    ///
    /// The kernel comes from the manifest at `PROXIMA_CONFIG` (else `Config/proxima.json`, relative to the current
    /// directory); it is started by the first reader and runs until the process exits (see
    /// `DefaultPaymentKernel`). The lane is `PROXIMA_LANE`, else the manifest's first lane. When the manifest
    /// cannot be loaded the reader still exists, and every call throws ``PaymentCardReaderError/notAllowed(_:)``
    /// with the manifest's errors.
    public convenience init(options: Options = Options()) {
        self.init(service: DefaultPaymentKernel.service(), options: options)
    }

    /// A reader on `kernel`, for `lane`. The caller runs the kernel (`kernel.run()` in its task group).
    ///
    /// - Parameters:
    ///   - kernel: A kernel whose manifest has a `capabilities.payment` block.
    ///   - lane: The lane whose readers serve this reader's reads; `nil` uses the manifest's first lane.
    ///   - options: Read and prepare options.
    public convenience init(kernel: Kernel, lane: LaneID? = nil, options: Options = Options()) {
        self.init(service: Self.service(kernel, lane: lane), options: options)
    }

    init(service: Result<PaymentService, PaymentCardReaderError>, options: Options) {
        self.service = service
        self.options = options
        (events, eventContinuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(256))
    }

    deinit { eventContinuation.finish() }

    static func service(_ kernel: Kernel, lane: LaneID?) -> Result<PaymentService, PaymentCardReaderError> {
        Result { () throws(PaymentCardReaderError) in
            do throws(PaymentServiceError) {
                return try PaymentService(kernel: kernel, lane: lane)
            } catch {
                throw PaymentErrorMapping.readerError(error)
            }
        }
    }

    /// The kernel, unless the default configuration could not be loaded.
    public var kernel: Kernel? { try? service.get().kernel }
    /// The lane reads run on, unless the default configuration could not be loaded.
    public var lane: LaneID? { try? service.get().lane }

    /// This kernel's reader identifier (`capabilities.payment.readerIdentifier`), for the processor and support.
    /// - Throws: ``PaymentCardReaderError/notAllowed(_:)`` without valid payment settings.
    public var readerIdentifier: String {
        get async throws { try resolvedService().settings.readerIdentifier }
    }

    /// Whether the merchant of `token` is linked on this kernel (with the token's processor and this reader
    /// identifier).
    ///
    /// - Throws: ``PaymentCardReaderError`` — `notAllowed`, `emptyReaderToken`, `invalidReaderToken`,
    ///   `tokenExpired`, or `accountLinkingCheckFailed` when the link file is unreadable.
    public func isAccountLinked(using token: Token) async throws -> Bool {
        try mapped { try resolvedService().isLinked(token.rawValue) }
    }

    /// Links the merchant of `token` on this kernel: verifies the token and records merchant id, processor and
    /// time in `<dataDirectory>/account-link.json` (written atomically). Linking the linked merchant again does
    /// nothing.
    ///
    /// - Throws: ``PaymentCardReaderError`` — token errors as ``isAccountLinked(using:)``; `accountAlreadyLinked`
    ///   when another merchant or processor is linked (use ``relinkAccount(using:)``); `accountLinkingFailed` when
    ///   the file cannot be written.
    public func linkAccount(using token: Token) async throws {
        try mapped { try resolvedService().link(token.rawValue, replacing: false) }
    }

    /// Replaces whatever account is linked with the merchant of `token` (Apple's `relinkAccount(using:)`).
    /// - Throws: As ``linkAccount(using:)``, never `accountAlreadyLinked`.
    public func relinkAccount(using token: Token) async throws {
        try mapped { try resolvedService().link(token.rawValue, replacing: true) }
    }

    /// The linked account, if any (for support tools and `proxima pay`).
    public func linkedAccount() async throws -> LinkedAccount? {
        try mapped { try resolvedService().linkedAccount().map(LinkedAccount.init) }
    }

    /// A prepared session (Apple's `prepare(using:)`): ``PaymentCardReaderSession/init(reader:token:)`` then
    /// ``PaymentCardReaderSession/prepare()``.
    public func prepare(using token: Token) async throws -> PaymentCardReaderSession {
        let session = try await PaymentCardReaderSession(reader: self, token: token)
        try await session.prepare()
        return session
    }

    // MARK: Internals

    func resolvedService() throws(PaymentCardReaderError) -> PaymentService { try service.get() }

    /// Runs a service call, mapping its errors to Apple's names.
    func mapped<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw PaymentErrorMapping.apiError(error)
        }
    }

    func emit(_ event: Event) { eventContinuation.yield(event) }
}

extension PaymentCardReader {
    /// A processor-issued reader token (Apple's `PaymentCardReader.Token`): an ES256 JWT signed with the
    /// processor's key, naming the merchant and this kernel's reader identifier.
    ///
    /// Its description and reflection (`dump`) never show the token: it is a bearer credential.
    public struct Token: RawRepresentable, Hashable, Sendable, CustomStringConvertible, CustomReflectable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { "PaymentCardReader.Token(\(rawValue.utf8.count) characters, redacted)" }
        public var customMirror: Mirror { Mirror(self, children: ["rawValue": "redacted"], displayStyle: .struct) }
    }

    /// The merchant account linked on a kernel: which merchant, with which processor, for which reader identifier,
    /// since when.
    public struct LinkedAccount: Hashable, Sendable, CustomStringConvertible {
        public var merchantID: String
        /// The processor: the linking token's `iss`.
        public var processor: String
        public var readerIdentifier: String
        public var linkedAt: Date

        init(_ link: AccountLink) {
            merchantID = link.merchantID
            processor = link.processor
            readerIdentifier = link.readerIdentifier
            linkedAt = link.linkedAt
        }

        public var description: String {
            "merchant \(merchantID) with \(processor) on \(readerIdentifier) since \(AccountLinkStore.format(linkedAt))"
        }
    }
}
