import Foundation
public import ProximaCore
import ProximaCrypto
public import ProximaKernel
import Synchronization

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
/// The manifest's `capabilities.payment` block (``PaymentSettings``) holds the processor key, the token issuer
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

    /// The kernel and lane a reader works on, and its settings.
    struct Binding: Sendable {
        var kernel: Kernel
        var lane: LaneID
        var settings: Result<PaymentSettings, PaymentCardReaderError>
    }

    /// The read in progress; `owner` is the session that started it.
    struct ActiveRead: Sendable {
        var owner: ObjectIdentifier
        var cancel: AsyncStream<Void>.Continuation
        var cancelRequested = false
    }

    /// Readers run on Linux hosts with any supported transport: always `true` (Apple's checks the device model).
    public static let isSupported = true

    public let options: Options
    /// Reader events (Apple's `events`): prepare progress and the lifecycle of each read of this reader, in order
    /// (`readyForTap`, `cardDetected`, `removeCard`, `pinEntryRequested`, then `readCompleted`,
    /// `readNotCompleted`, `readCancelled` or `readRetry`). It keeps the newest 256 undelivered events; it finishes
    /// when the reader is released. Iterate it from one task, as any `AsyncStream`.
    public let events: AsyncStream<Event>

    let binding: Result<Binding, PaymentCardReaderError>
    let now: @Sendable () -> Date
    private let eventContinuation: AsyncStream<Event>.Continuation
    let activeRead = Mutex<ActiveRead?>(nil)

    /// A reader on the process-wide default kernel (Apple's `init(options:)`).
    ///
    /// The kernel comes from the manifest at `PROXIMA_CONFIG` (else `Config/proxima.json`, relative to the current
    /// directory); it is started by the first reader and runs until the process exits (see
    /// `DefaultPaymentKernel`). The lane is `PROXIMA_LANE`, else the manifest's first lane. When the manifest
    /// cannot be loaded the reader still exists, and every call throws ``PaymentCardReaderError/notAllowed(_:)``
    /// with the manifest's errors.
    public convenience init(options: Options = Options()) {
        self.init(binding: DefaultPaymentKernel.binding(), options: options, now: { Date() })
    }

    /// A reader on `kernel`, for `lane`. The caller runs the kernel (`kernel.run()` in its task group).
    ///
    /// - Parameters:
    ///   - kernel: A kernel whose manifest has a `capabilities.payment` block.
    ///   - lane: The lane whose readers serve this reader's reads; `nil` uses the manifest's first lane.
    ///   - options: Read and prepare options.
    public convenience init(kernel: Kernel, lane: LaneID? = nil, options: Options = Options()) {
        self.init(binding: Self.bind(kernel, lane: lane), options: options, now: { Date() })
    }

    init(binding: Result<Binding, PaymentCardReaderError>, options: Options, now: @escaping @Sendable () -> Date) {
        self.binding = binding
        self.options = options
        self.now = now
        (events, eventContinuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(256))
    }

    deinit { eventContinuation.finish() }

    static func bind(_ kernel: Kernel, lane: LaneID?) -> Result<Binding, PaymentCardReaderError> {
        let lanes = kernel.manifest.lanes.map(\.id)
        guard let chosen = lane ?? lanes.first else {
            return .failure(.unsupported("the manifest has no lanes"))
        }
        guard lanes.contains(chosen) else {
            return .failure(
                .unsupported(
                    "lane \"\(chosen)\" is not in the manifest (lanes: \(lanes.map(\.rawValue).joined(separator: ", ")))"
                )
            )
        }
        let settings = Result { () throws(PaymentCardReaderError) in try PaymentSettings(manifest: kernel.manifest) }
        return .success(Binding(kernel: kernel, lane: chosen, settings: settings))
    }

    /// The kernel, unless the default configuration could not be loaded.
    public var kernel: Kernel? { try? binding.get().kernel }
    /// The lane reads run on, unless the default configuration could not be loaded.
    public var lane: LaneID? { try? binding.get().lane }

    /// This kernel's reader identifier (`capabilities.payment.readerIdentifier`), for the processor and support.
    /// - Throws: ``PaymentCardReaderError/notAllowed(_:)`` without valid payment settings.
    public var readerIdentifier: String {
        get async throws { try settings().readerIdentifier }
    }

    /// Whether the merchant of `token` is linked on this kernel (with the token's processor and this reader
    /// identifier).
    ///
    /// - Throws: ``PaymentCardReaderError`` — `notAllowed`, `emptyReaderToken`, `invalidReaderToken`,
    ///   `tokenExpired`, or `accountLinkingCheckFailed` when the link file is unreadable.
    public func isAccountLinked(using token: Token) async throws -> Bool {
        let settings = try settings()
        let verified = try verify(token, settings: settings)
        return try linkStore().read()?.covers(verified, readerIdentifier: settings.readerIdentifier) ?? false
    }

    /// Links the merchant of `token` on this kernel: verifies the token and records merchant id, processor and
    /// time in `<dataDirectory>/account-link.json` (written atomically). Linking the linked merchant again does
    /// nothing.
    ///
    /// - Throws: ``PaymentCardReaderError`` — token errors as ``isAccountLinked(using:)``; `accountAlreadyLinked`
    ///   when another merchant or processor is linked (use ``relinkAccount(using:)``); `accountLinkingFailed` when
    ///   the file cannot be written.
    public func linkAccount(using token: Token) async throws {
        let settings = try settings()
        let verified = try verify(token, settings: settings)
        let store = try linkStore()
        if let existing = try store.read() {
            if existing.covers(verified, readerIdentifier: settings.readerIdentifier) { return }
            throw PaymentCardReaderError.accountAlreadyLinked(
                "\(store.path) links \(existing); call relinkAccount(using:) to link merchant \(verified.merchantID)"
            )
        }
        try store.write(
            AccountLink(
                merchantID: verified.merchantID,
                processor: verified.issuer,
                readerIdentifier: settings.readerIdentifier,
                linkedAt: now()
            )
        )
    }

    /// Replaces whatever account is linked with the merchant of `token` (Apple's `relinkAccount(using:)`).
    /// - Throws: As ``linkAccount(using:)``, never `accountAlreadyLinked`.
    public func relinkAccount(using token: Token) async throws {
        let settings = try settings()
        let verified = try verify(token, settings: settings)
        try linkStore().write(
            AccountLink(
                merchantID: verified.merchantID,
                processor: verified.issuer,
                readerIdentifier: settings.readerIdentifier,
                linkedAt: now()
            )
        )
    }

    /// The linked account, if any (for support tools and `proxima pay`).
    public func linkedAccount() async throws -> AccountLink? { try linkStore().read() }

    /// A prepared session (Apple's `prepare(using:)`): ``PaymentCardReaderSession/init(reader:token:)`` then
    /// ``PaymentCardReaderSession/prepare()``.
    public func prepare(using token: Token) async throws -> PaymentCardReaderSession {
        let session = try await PaymentCardReaderSession(reader: self, token: token)
        try await session.prepare()
        return session
    }

    // MARK: Internals

    func resolvedBinding() throws(PaymentCardReaderError) -> Binding { try binding.get() }

    func settings() throws(PaymentCardReaderError) -> PaymentSettings { try resolvedBinding().settings.get() }

    func verify(_ token: Token, settings: PaymentSettings) throws(PaymentCardReaderError) -> VerifiedReaderToken {
        try ReaderTokenVerifier(settings: settings, now: now).verify(token)
    }

    func linkStore() throws(PaymentCardReaderError) -> AccountLinkStore {
        AccountLinkStore(directory: try resolvedBinding().kernel.manifest.dataDirectory)
    }

    func emit(_ event: Event) { eventContinuation.yield(event) }

    /// Waits until a reader that may serve the lane is present and healthy, for at most `timeout`.
    func waitForLaneReader(_ binding: Binding, timeout: Duration) async -> Bool {
        let kernel = binding.kernel
        guard let lane = kernel.manifest.lanes.first(where: { $0.id == binding.lane }) else { return false }
        let pinned = options.pinnedReader
        func ready(_ snapshot: PoolSnapshot) -> Bool {
            snapshot.readers.contains { reader in
                let serves =
                    pinned.map { reader.info.id == $0 }
                    ?? (reader.lanes.contains(lane.id) || (reader.isShared && lane.overflowToShared))
                return serves && (reader.state == .idle || reader.state == .leased)
            }
        }
        let changes = kernel.events.subscribe(bufferSize: 64)
        if ready(await kernel.snapshot()) { return true }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await event in changes where event.kind == .readerAppeared || event.kind == .readerRecovered {
                    if ready(await kernel.snapshot()) { return true }
                }
                return false
            }
            group.addTask {
                try? await kernel.clock.sleep(until: kernel.clock.now + timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
