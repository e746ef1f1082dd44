public import ProximaCore

/// The `config` object of an External transport plugin (`"type": "external", "load": "process"`):
///
/// ```json
/// {
///   "command": "../Examples/Drivers/python/vpcd_reader_driver.py",
///   "args": ["--port", "35990"],
///   "env": { "PYTHONUNBUFFERED": "1" },
///   "workingDirectory": "..",
///   "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
///   "readerIDPrefix": "vpcd/",
///   "callTimeoutMs": 5000,
///   "handshakeTimeoutMs": 5000,
///   "maxFrameBytes": 1048576,
///   "maxEventsPerSecond": 100,
///   "stderrLinesPerSecond": 20,
///   "restart": { "initialDelayMs": 100, "maxDelayMs": 10000 },
///   "breaker": { "failures": 5, "windowMs": 60000, "openMs": 60000 }
/// }
/// ```
///
/// - `command` (required): the driver executable. A name without `/` is looked up in the kernel's `PATH` when the
///   driver starts; a relative path resolves against the manifest's folder. `args`: its arguments.
/// - `env`: variables added to (or replacing those of) the kernel's environment for the driver.
/// - `workingDirectory`: the driver's current directory, resolved against the manifest's folder (default: that
///   folder).
/// - `sha256`: the SHA-256 of the executable (64 hex digits). When set, a driver whose file hashes differently is not
///   started. Whether set or not, an executable that is group- or world-writable is not started.
/// - `readerIDPrefix`: kernel reader ids are this prefix and the driver's reader id; default: the plugin id and `/`.
/// - `callTimeoutMs` (1…600 000, default 5 000): how long a `connect`, `transmit`, `disconnect` or `control` may
///   take. The driver is told it (`timeoutMs`) and gets 250 ms more; a call still unanswered then means the driver
///   hangs: it is killed and restarted.
/// - `handshakeTimeoutMs` (default 5 000): how long the driver may take to send its `hello`.
/// - `maxFrameBytes` (64…16 777 216, default 1 MiB): the largest frame payload accepted from the driver.
/// - `maxEventsPerSecond` (1…100 000, default 100): sustained rate of events (`readers`, `cardPresent`, …); bursts
///   of up to twice as many (at least 64) pass. A driver above it floods and is restarted.
/// - `stderrLinesPerSecond` (1…10 000, default 20): lines of the driver's standard error logged per second.
/// - `restart`: waits between restarts, doubling from `initialDelayMs` (default 100) up to `maxDelayMs` (default
///   10 000); a session that ran for `maxDelayMs` starts the doubling over.
/// - `breaker`: after `failures` (default 5) failures within `windowMs` (default 60 000) the driver stays stopped for
///   `openMs` (default 60 000) and its readers are reported faulted; then it is tried again.
public struct ExternalConfiguration: Hashable, Sendable {
    public var command: String
    public var arguments: [String]
    /// `env`: variables added to, or replacing those of, the kernel's environment.
    public var environment: [String: String]
    /// Absolute.
    public var workingDirectory: String
    /// The manifest's folder, against which a relative `command` resolves.
    public var baseDirectory: String
    /// The pinned digest of the executable, 32 bytes.
    public var sha256: [UInt8]?
    public var readerIDPrefix: String?
    public var callTimeout: Duration
    public var handshakeTimeout: Duration
    public var maximumFrameBytes: Int
    public var maximumEventsPerSecond: Int
    public var stderrLinesPerSecond: Int
    public var restartInitialDelay: Duration
    public var restartMaximumDelay: Duration
    public var breakerFailures: Int
    public var breakerWindow: Duration
    public var breakerOpen: Duration

    /// The margin a driver gets past a call's `timeoutMs` before the kernel declares it hung.
    public static let timeoutGrace = Duration.milliseconds(250)

    public init(
        command: String,
        arguments: [String] = [],
        environment: [String: String] = [:],
        workingDirectory: String = ".",
        baseDirectory: String = ".",
        sha256: [UInt8]? = nil,
        readerIDPrefix: String? = nil,
        callTimeout: Duration = .seconds(5),
        handshakeTimeout: Duration = .seconds(5),
        maximumFrameBytes: Int = DriverFrame.defaultMaximumPayload,
        maximumEventsPerSecond: Int = 100,
        stderrLinesPerSecond: Int = 20,
        restartInitialDelay: Duration = .milliseconds(100),
        restartMaximumDelay: Duration = .seconds(10),
        breakerFailures: Int = 5,
        breakerWindow: Duration = .seconds(60),
        breakerOpen: Duration = .seconds(60)
    ) {
        self.command = command
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.baseDirectory = baseDirectory
        self.sha256 = sha256
        self.readerIDPrefix = readerIDPrefix
        self.callTimeout = callTimeout
        self.handshakeTimeout = handshakeTimeout
        self.maximumFrameBytes = maximumFrameBytes
        self.maximumEventsPerSecond = maximumEventsPerSecond
        self.stderrLinesPerSecond = stderrLinesPerSecond
        self.restartInitialDelay = restartInitialDelay
        self.restartMaximumDelay = restartMaximumDelay
        self.breakerFailures = breakerFailures
        self.breakerWindow = breakerWindow
        self.breakerOpen = breakerOpen
    }

    /// Reads the plugin's `config` object; unknown members are errors. Touches no file: `proxima config check` calls
    /// it too, and the executable is checked when the driver starts.
    ///
    /// - Parameters:
    ///   - json: the `config` value.
    ///   - path: its JSON path (`plugins[1].config`).
    ///   - baseDirectory: the manifest's folder.
    /// - Throws: `ProximaError.invalidManifest` naming the JSON path and what was expected.
    public init(json: JSONValue, path: String, baseDirectory: String) throws {
        var object = try StrictObject(json, at: path, errorCode: .invalidManifest)
        let decoder = object
        command = try object.string("command")
        if command.contains("\0") { throw object.fail("command", "the path contains a NUL character") }
        arguments =
            try object.optionalArray("args") { value, elementPath in
                let argument = try decoder.decodeString(value, at: elementPath, nonEmpty: false)
                if argument.contains("\0") {
                    throw ProximaError(.invalidManifest, "\(elementPath): the argument contains a NUL character")
                }
                return argument
            } ?? []
        var environment: [String: String] = [:]
        if let env = object.value("env") {
            var envObject = try StrictObject(env, at: object.path(of: "env"), errorCode: .invalidManifest)
            for key in envObject.keys {
                let keyPath = envObject.path(of: key)
                guard !key.isEmpty, !key.contains("="), !key.contains("\0") else {
                    throw ProximaError(
                        .invalidManifest,
                        "\(keyPath): a variable name must be non-empty, without = or NUL"
                    )
                }
                let value = try envObject.string(key, nonEmpty: false)
                if value.contains("\0") {
                    throw ProximaError(.invalidManifest, "\(keyPath): the value contains a NUL character")
                }
                environment[key] = value
            }
            try envObject.finish(allowing: [])
        }
        self.environment = environment
        self.baseDirectory = baseDirectory
        let directory = try object.optionalString("workingDirectory") ?? "."
        workingDirectory = DriverSystemCalls.resolve(directory, against: baseDirectory)
        if let pin = try object.optionalString("sha256") {
            guard pin.utf8.count == 64, let digest = [UInt8](hex: pin), digest.count == 32 else {
                throw object.fail("sha256", "expected the SHA-256 of the executable as 64 hex digits")
            }
            sha256 = digest
        } else {
            sha256 = nil
        }
        readerIDPrefix = try object.optionalString("readerIDPrefix", nonEmpty: false)
        callTimeout = .milliseconds(try object.optionalInteger("callTimeoutMs", in: 1...600_000) ?? 5_000)
        handshakeTimeout = .milliseconds(try object.optionalInteger("handshakeTimeoutMs", in: 1...600_000) ?? 5_000)
        maximumFrameBytes = Int(
            try object.optionalInteger("maxFrameBytes", in: 64...(16 << 20)) ?? Int64(DriverFrame.defaultMaximumPayload)
        )
        maximumEventsPerSecond = Int(try object.optionalInteger("maxEventsPerSecond", in: 1...100_000) ?? 100)
        stderrLinesPerSecond = Int(try object.optionalInteger("stderrLinesPerSecond", in: 1...10_000) ?? 20)

        var initial: Int64 = 100
        var maximum: Int64 = 10_000
        if let restart = object.value("restart") {
            var restartObject = try StrictObject(restart, at: object.path(of: "restart"), errorCode: .invalidManifest)
            initial = try restartObject.optionalInteger("initialDelayMs", in: 1...3_600_000) ?? initial
            maximum = try restartObject.optionalInteger("maxDelayMs", in: 1...3_600_000) ?? max(maximum, initial)
            guard maximum >= initial else {
                throw restartObject.fail("maxDelayMs", "\(maximum) is below initialDelayMs (\(initial))")
            }
            try restartObject.finish()
        }
        restartInitialDelay = .milliseconds(initial)
        restartMaximumDelay = .milliseconds(maximum)

        var failures: Int64 = 5
        var window: Int64 = 60_000
        var open: Int64 = 60_000
        if let breaker = object.value("breaker") {
            var breakerObject = try StrictObject(breaker, at: object.path(of: "breaker"), errorCode: .invalidManifest)
            failures = try breakerObject.optionalInteger("failures", in: 1...1_000) ?? failures
            window = try breakerObject.optionalInteger("windowMs", in: 1...86_400_000) ?? window
            open = try breakerObject.optionalInteger("openMs", in: 1...86_400_000) ?? open
            try breakerObject.finish()
        }
        breakerFailures = Int(failures)
        breakerWindow = .milliseconds(window)
        breakerOpen = .milliseconds(open)
        try object.finish()
    }

    /// The largest burst of driver events let through.
    var eventBurst: Double { Double(max(64, 2 * maximumEventsPerSecond)) }
}
