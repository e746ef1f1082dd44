internal import Foundation
public import ProximaCore
internal import ProximaCrypto
internal import Synchronization

/// The External transport: readers served by a driver in a child process, spoken to with length-prefixed JSON frames
/// on its standard input and output (`Docs/driver-protocol.md`).
///
/// **Readers.** ``run()`` starts the driver, sends the kernel's `hello` and waits for the driver's; a different
/// protocol major is refused (a `bye` frame, then the driver is killed). The readers the driver then reports
/// (`readers`, `readerAppeared`, `readerVanished`) become kernel readers whose id is
/// ``ExternalConfiguration/readerIDPrefix`` (default: the plugin id and `/`) followed by the driver's reader id;
/// `cardPresent` and `cardRemoved` are passed on.
///
/// **Connecting** (``connect(to:options:)``) waits until the driver has reported a card on the reader, then sends
/// `connect`; a driver that answers `noCard` or `cardRemoved` (the card left meanwhile) is asked again at the next
/// `cardPresent`. The channel's transmits are `transmit` requests; `close()` sends `disconnect`.
///
/// **Supervision.** The driver fails when it exits or closes its output, when a call or the handshake goes past its
/// timeout, when it sends a malformed or oversized frame, answers a request id that is not waiting, or sends events
/// faster than allowed. Then its process group is killed, every call in flight fails with `readerVanished` and its
/// readers are reported `.vanished` at once, so taps on them end well within their deadline; the kernel goes on
/// serving every other reader. The driver is started again after a backoff (doubling from
/// ``ExternalConfiguration/restartInitialDelay`` to ``ExternalConfiguration/restartMaximumDelay``), and its readers
/// come back when it reports them. After ``ExternalConfiguration/breakerFailures`` failures within
/// ``ExternalConfiguration/breakerWindow`` the circuit breaker opens: every reader the driver ever reported is
/// reported `.fault` with the reason, and the driver stays stopped for ``ExternalConfiguration/breakerOpen`` before
/// one more try. Before each start the executable is checked: it must be a regular executable file, not writable by
/// group or others, and match ``ExternalConfiguration/sha256`` when set.
///
/// **Time.** Deadlines and backoff run on the real (continuous) clock, not the kernel's: they bound a real process.
///
/// **Logs.** The driver's standard error goes to `log`, line by line, rate-limited and with long hex runs masked
/// (``DriverStderrLog``); so do the supervisor's own notes (driver started, failed, breaker open).
public final class ExternalTransport: Transport {
    public let id: String
    public let configuration: ExternalConfiguration
    /// `nil`: the driver reports its readers at run time.
    public var declaredReaders: [ReaderInfo]? { nil }
    public let events: AsyncStream<ReaderEvent>

    /// Events kept for a slow reader of ``events``.
    public static let eventBufferSize = 4096

    private let eventContinuation: AsyncStream<ReaderEvent>.Continuation
    private let log: @Sendable (String) -> Void
    private let state = Mutex(State())
    private let started = Atomic<Bool>(false)

    private let table: DriverReaderTable

    private struct State {
        var diagnostics = ExternalTransportDiagnostics()
    }

    /// - Parameters:
    ///   - id: the plugin id from the manifest (`ReaderInfo.transport`, and the default reader id prefix).
    ///   - configuration: the driver command and the supervision limits.
    ///   - log: where driver standard error and supervisor notes go, one line per call; default: the kernel's standard
    ///     error, prefixed with the plugin id.
    public init(
        id: String,
        configuration: ExternalConfiguration,
        log: (@Sendable (String) -> Void)? = nil
    ) {
        self.id = id
        self.configuration = configuration
        self.log =
            log ?? { line in FileHandle.standardError.write(Data("proxima: external \"\(id)\": \(line)\n".utf8)) }
        (events, eventContinuation) = AsyncStream.makeStream(
            of: ReaderEvent.self,
            bufferingPolicy: .bufferingNewest(Self.eventBufferSize)
        )
        table = DriverReaderTable(
            transportID: id,
            readerIDPrefix: configuration.readerIDPrefix ?? id + "/",
            events: eventContinuation
        )
    }

    /// Sessions, faults, process ids and pipes so far, for diagnostics and tests.
    public var diagnostics: ExternalTransportDiagnostics { state.withLock { $0.diagnostics } }

    /// The kernel id of the driver's reader `driverReaderID`.
    public func readerID(forDriverReader driverReaderID: String) -> ReaderID {
        table.readerID(forDriverReader: driverReaderID)
    }

    // MARK: Supervision

    /// Runs and supervises the driver until cancelled; finishes ``events`` when it returns.
    ///
    /// - Throws: `ProximaError.pluginFailed` when called a second time.
    public func run() async throws {
        guard started.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
            throw ProximaError(.pluginFailed, "external transport \"\(id)\": run() was called twice")
        }
        defer { eventContinuation.finish() }
        var backoff = RestartBackoff(
            initial: configuration.restartInitialDelay,
            maximum: configuration.restartMaximumDelay
        )
        var breaker = CircuitBreaker(threshold: configuration.breakerFailures, window: configuration.breakerWindow)
        while !Task.isCancelled {
            let startedAt = ContinuousClock.now
            let fault = await runSession()
            if fault.kind == .stopped || Task.isCancelled { return }
            state.withLock { $0.diagnostics.faults.append(fault) }
            if ContinuousClock.now - startedAt >= configuration.restartMaximumDelay { backoff.reset() }
            let wait: Duration
            if breaker.recordFailure(at: .now) {
                let reason =
                    "circuit breaker open: the driver failed \(breaker.recentFailures) times within "
                    + "\(configuration.breakerWindow) (last: \(fault)); next try in \(configuration.breakerOpen)"
                log(reason)
                state.withLock { state in
                    state.diagnostics.breakerOpen = true
                    state.diagnostics.breakerOpenings += 1
                }
                let readers = table.everReported
                for reader in readers { eventContinuation.yield(.fault(reader, reason: reason)) }
                breaker.reset()
                backoff.reset()
                wait = configuration.breakerOpen
            } else {
                wait = backoff.next()
                log("driver failed (\(fault)); restarting in \(wait)")
            }
            do {
                try await Task.sleep(for: wait)
            } catch {
                return
            }
            state.withLock { $0.diagnostics.breakerOpen = false }
        }
    }

    /// One driver process from start to end; returns why it ended.
    private func runSession() async -> DriverFault {
        let executable: String
        switch checkedExecutable() {
        case .success(let path): executable = path
        case .failure(let fault):
            log("driver not started: \(fault.detail)")
            return fault
        }
        let connection: DriverConnection
        do {
            connection = try DriverConnection(
                pluginID: id,
                executable: executable,
                configuration: configuration,
                log: { [log] line in log("driver: \(line)") }
            )
        } catch {
            log("driver not started: \(error.detail)")
            return error
        }
        table.attach(connection)
        state.withLock { state in
            state.diagnostics.sessions += 1
            state.diagnostics.processIDs.append(connection.pid)
            state.diagnostics.pipeInodes += connection.pipeInodes
        }
        var fault: DriverFault?
        await withTaskCancellationHandler {
            for await item in connection.incoming {
                switch item {
                case .failed(let failure):
                    if fault == nil { fault = failure }
                    table.endSession(connection, reason: "\(failure)")
                case .message(.hello(let version, let name, let driverVersion)):
                    guard DriverReaderTable.accept(hello: version, on: connection) else { continue }
                    state.withLock { $0.diagnostics.driver = "\(name) \(driverVersion)" }
                    log("driver \(name) \(driverVersion) started (pid \(connection.pid), protocol \(version))")
                case .message(let message):
                    table.handle(message, from: connection)
                }
            }
        } onCancel: {
            connection.stop()
        }
        connection.stop()
        let status = await connection.waitUntilEnded()
        table.endSession(connection, reason: "the driver stopped")
        var result = fault ?? DriverFault(.stopped, "the kernel stopped the driver")
        if result.kind != .stopped, let status { result.detail += " (the driver \(status))" }
        return result
    }

    /// The executable to start, once checked: a regular executable file, not group- or world-writable, and of the
    /// pinned SHA-256 when there is one.
    private func checkedExecutable() -> Result<String, DriverFault> {
        let command = configuration.command
        var path: String?
        if command.contains("/") {
            path = DriverSystemCalls.resolve(command, against: configuration.baseDirectory)
        } else {
            let search = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
            path = search.split(separator: ":").map { "\($0)/\(command)" }.first(
                where: DriverSystemCalls.isExecutableFile
            )
        }
        guard let path, DriverSystemCalls.isExecutableFile(path) else {
            return .failure(DriverFault(.notStarted, "\"\(command)\" is not an executable file"))
        }
        switch DriverSystemCalls.mode(of: path) {
        case .failure(let error):
            return .failure(DriverFault(.notStarted, "\(error)"))
        case .success(let mode) where mode & 0o022 != 0:
            let octal = String(mode & 0o7777, radix: 8)
            return .failure(
                DriverFault(.notStarted, "\(path) is writable by group or others (mode \(octal)); refusing to start it")
            )
        case .success:
            break
        }
        if let pin = configuration.sha256 {
            do {
                let digest = try SHA256.hash(try DriverSystemCalls.readFile(path, limit: 1 << 30))
                guard digest == pin else {
                    return .failure(
                        DriverFault(
                            .notStarted,
                            "\(path) has SHA-256 \(digest.hexString), not the pinned \(pin.hexString); refusing to start it"
                        )
                    )
                }
            } catch {
                return .failure(DriverFault(.notStarted, "hashing \(path): \(error)"))
            }
        }
        return .success(path)
    }

    // MARK: Connecting

    public func connect(to reader: ReaderID, options: ConnectOptions) async throws -> any CardChannel {
        try await openChannel(to: reader, options: options)
    }

    /// ``connect(to:options:)`` with the concrete channel type.
    ///
    /// - Throws: `ProximaError` `readerVanished` (unknown reader, it left, or the driver failed), `cancelled`, or the
    ///   code the driver answered `connect` with.
    public func openChannel(to reader: ReaderID, options: ConnectOptions) async throws -> ExternalCardChannel {
        try await table.openChannel(to: reader, options: options)
    }
}

/// What an ``ExternalTransport`` has done so far.
public struct ExternalTransportDiagnostics: Hashable, Sendable {
    /// Driver processes started.
    public var sessions = 0
    /// Why each failed session ended, in order (kernel stops not included).
    public var faults: [DriverFault] = []
    /// The pid of every driver process started.
    public var processIDs: [Int32] = []
    /// The inode numbers of every pipe to a driver, so a test can check none is still open.
    public var pipeInodes: [UInt64] = []
    /// Whether the circuit breaker is open now.
    public var breakerOpen = false
    /// How often it opened.
    public var breakerOpenings = 0
    /// The name and version the last driver gave in its hello.
    public var driver: String?

    public init() {}
}
