public import ProximaCore

/// What a plugin factory gets: its manifest entry's configuration, where it sits in the JSON, and the kernel's
/// directories and clock.
public struct PluginContext: Sendable {
    /// The plugin's `id` from the manifest.
    public var id: String
    /// The entry's `config` object (an empty object when the manifest gives none).
    public var configuration: JSONValue
    /// JSON path of `configuration`, for error messages (`plugins[1].config`).
    public var configurationPath: String
    /// The manifest's folder; relative paths in `configuration` resolve against it.
    public var baseDirectory: String
    /// The kernel's data directory (absolute).
    public var dataDirectory: String
    public var clock: KernelClock
    /// Whether whoever reads the transport's events wants `cardPresent`/`cardRemoved`: a remote agent forwards
    /// them; a kernel does not use them (it learns of a card by connecting), so it builds its transports with
    /// `false`, and a transport that makes these events itself (the simulator, per tap) may then skip them: each
    /// one wakes the reading task. Transports that only relay what hardware reports may ignore it.
    public var reportsCardPresence: Bool = true

    public init(
        id: String,
        configuration: JSONValue = .object([]),
        configurationPath: String = "config",
        baseDirectory: String = ".",
        dataDirectory: String = "var",
        clock: KernelClock = .continuous
    ) {
        self.id = id
        self.configuration = configuration
        self.configurationPath = configurationPath
        self.baseDirectory = baseDirectory
        self.dataDirectory = dataDirectory
        self.clock = clock
    }

    /// `path` resolved against the manifest's folder unless it is absolute.
    public func resolve(_ path: String) -> String { PathResolution.resolve(path, against: baseDirectory) }
}

public enum PathResolution {
    /// `path` unchanged when absolute, else joined to `base`.
    public static func resolve(_ path: String, against base: String) -> String {
        if path.hasPrefix("/") || base.isEmpty { return path }
        return base.hasSuffix("/") ? base + path : base + "/" + path
    }
}

/// A built-in transport type, selected by the manifest's `type`.
public struct TransportType: Sendable {
    /// The manifest `type` (`simulator`, `pcsc`, …).
    public var name: String
    /// One line for `--help` and error messages.
    public var summary: String
    /// How plugins of this type run: linked in (`builtin`) or as a supervised child process (`process`, the External
    /// transport). A manifest entry's `load` must match it, and defaults to it.
    public var load: PluginEntry.Load
    /// Validates the configuration and builds the transport. Must not start I/O: `config check` calls it too.
    /// - Throws: `ProximaError.invalidManifest` whose `jsonPath` lies under `context.configurationPath` (the
    ///   manifest loader reports it at that path; an error without one is reported at the configuration itself).
    public var make: @Sendable (PluginContext) throws -> any Transport

    public init(
        name: String,
        summary: String,
        load: PluginEntry.Load = .builtin,
        make: @escaping @Sendable (PluginContext) throws -> any Transport
    ) {
        self.name = name
        self.summary = summary
        self.load = load
        self.make = make
    }
}

/// A capability's settings schema, keyed by its id under the manifest's `capabilities`.
public struct CapabilityType: Sendable {
    public var id: CapabilityID
    public var summary: String
    /// Checks the settings object found at `path`; relative paths resolve against `baseDirectory`.
    public var validateSettings:
        @Sendable (_ settings: JSONValue, _ path: String, _ baseDirectory: String) throws -> Void

    public init(
        id: CapabilityID,
        summary: String,
        validateSettings: @escaping @Sendable (JSONValue, String, String) throws -> Void
    ) {
        self.id = id
        self.summary = summary
        self.validateSettings = validateSettings
    }
}

/// The plugin types this build knows. Built-in plugins are registered in code (see `Proxima.BuiltinPlugins`);
/// no Swift code is loaded at run time.
public struct PluginRegistry: Sendable {
    public private(set) var transportTypes: [String: TransportType] = [:]
    public private(set) var capabilityTypes: [CapabilityID: CapabilityType] = [:]

    public init() {}

    /// Registers a transport type; registering one name twice is a programming error.
    public mutating func register(_ type: TransportType) {
        precondition(transportTypes[type.name] == nil, "transport type \(type.name) registered twice")
        transportTypes[type.name] = type
    }

    public mutating func register(_ type: CapabilityType) {
        precondition(capabilityTypes[type.id] == nil, "capability \(type.id) registered twice")
        capabilityTypes[type.id] = type
    }

    /// Sorted names, for "unknown type" messages.
    public var transportTypeNames: [String] { transportTypes.keys.sorted() }
    public var capabilityIDs: [String] { capabilityTypes.keys.map(\.rawValue).sorted() }
}
