import Foundation
public import ProximaCore

/// The integrator's JSON manifest, validated: which transport plugins run with which configuration, which
/// readers serve which lane, and the capabilities' settings.
///
/// Load it with ``load(contentsOf:registry:clock:)``. Validation checks the whole document against the
/// ``PluginRegistry`` of this build, calls every plugin's factory (which must not start I/O) to validate its
/// `config`, and reports every problem it can find at once as a ``ManifestError`` whose diagnostics name JSON
/// paths (`plugins[0].config.readers[1].card`). Problems that do not stop the kernel, such as a lane naming a
/// reader no transport declares, come back as ``warnings``.
///
/// Format (schemaVersion 1), described for editors by `Config/schema/manifest.schema.json`:
/// - `schemaVersion` (required, `1`), `$schema` (optional string), `comment` / `$comment` (ignored, allowed in
///   every object).
/// - `dataDirectory` (optional string, default `"var"`), resolved against the manifest's folder.
/// - `plugins` (required array with at least one enabled plugin): `id` (unique, `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`),
///   `type` (a registered transport type), `enabled` (default `true`), `load` (`"builtin"` or `"process"`;
///   it must match the type — `"process"` for the External transport's child-process drivers — and defaults to it), `config` (object for the
///   type's factory). Disabled plugins are validated too, factory included, so enabling one later cannot
///   surface a new configuration error; they are only not started, and their readers are not declared.
/// - `lanes` (required array, at least one lane): `id` (unique, same rule as plugin ids), `readers` (reader
///   ids), `readerNames` (glob patterns on reader names), `overflowToShared` (default `false`), `queue`
///   (`policy` `"wait"` (default) or `"failFast"`; `maxWaitMs` 1…3 600 000, default 30 000, only with
///   `"wait"`). A lane must name a reader or overflow to the shared pool.
/// - `capabilities` (optional object): each key a registered capability id, each value an object checked by
///   that capability's `validateSettings`.
public struct Manifest: Sendable {
    /// The schema versions this build reads.
    public static let supportedSchemaVersions: [Int] = [1]

    public var schemaVersion: Int
    /// The file the manifest was loaded from, as given to ``load(contentsOf:registry:clock:)``; `nil` when
    /// parsed from bytes without a name.
    public var sourcePath: String?
    /// The manifest's folder (absolute); relative paths in the manifest resolve against it.
    public var baseDirectory: String
    /// Where the kernel keeps state (absolute), from `dataDirectory`.
    public var dataDirectory: String
    /// Every plugin entry in manifest order, enabled or not.
    public var plugins: [PluginEntry]
    public var lanes: [LaneConfiguration]
    /// Settings per capability, as validated by the capability's `validateSettings`.
    public var capabilities: [CapabilityID: JSONValue]
    /// Findings that do not stop the kernel (severity `.warning`), with their JSON paths.
    public var warnings: [ManifestDiagnostic]
    /// Readers the enabled transports declare from their configuration (static transports such as the
    /// simulator); discovering transports (PC/SC) add theirs at run time.
    public var declaredReaders: [ReaderInfo]

    public init(
        schemaVersion: Int = 1,
        sourcePath: String? = nil,
        baseDirectory: String,
        dataDirectory: String,
        plugins: [PluginEntry],
        lanes: [LaneConfiguration],
        capabilities: [CapabilityID: JSONValue] = [:],
        warnings: [ManifestDiagnostic] = [],
        declaredReaders: [ReaderInfo] = []
    ) {
        self.schemaVersion = schemaVersion
        self.sourcePath = sourcePath
        self.baseDirectory = baseDirectory
        self.dataDirectory = dataDirectory
        self.plugins = plugins
        self.lanes = lanes
        self.capabilities = capabilities
        self.warnings = warnings
        self.declaredReaders = declaredReaders
    }

    /// The plugins to start, in manifest order.
    public var enabledPlugins: [PluginEntry] { plugins.filter(\.enabled) }

    /// The context to build `entry`'s transport with: its configuration and path, this manifest's folders, and
    /// `clock`.
    public func pluginContext(for entry: PluginEntry, clock: KernelClock) -> PluginContext {
        PluginContext(
            id: entry.id,
            configuration: entry.configuration,
            configurationPath: entry.configurationPath,
            baseDirectory: baseDirectory,
            dataDirectory: dataDirectory,
            clock: clock
        )
    }

    /// Reads and validates the manifest at `path`.
    ///
    /// - Parameters:
    ///   - path: The manifest file; a relative path resolves against the current directory. Its folder becomes
    ///     ``baseDirectory``.
    ///   - registry: The plugin types of this build.
    ///   - clock: Passed to the plugin factories that validate each `config`.
    /// - Throws: ``ManifestError`` listing every error (and the warnings found so far), also when the file
    ///   cannot be read or is not valid JSON.
    public static func load(
        contentsOf path: String,
        registry: PluginRegistry,
        clock: KernelClock = .continuous
    ) throws -> Manifest {
        let absolute = ManifestPaths.absolute(path)
        let bytes: [UInt8]
        do {
            bytes = try ManifestPaths.readFile(absolute, limit: JSONValue.Limits().maxBytes)
        } catch {
            throw ManifestError(
                file: path,
                diagnostics: [ManifestDiagnostic(path: "", message: "cannot read \(absolute): \(error.message)")]
            )
        }
        return try parse(
            bytes,
            baseDirectory: ManifestPaths.directory(of: absolute),
            registry: registry,
            sourcePath: path,
            clock: clock
        )
    }

    /// Validates a manifest held in memory.
    ///
    /// - Parameters:
    ///   - bytes: The JSON text (UTF-8).
    ///   - baseDirectory: The folder relative paths resolve against; made absolute against the current
    ///     directory when relative.
    ///   - registry: The plugin types of this build.
    ///   - sourcePath: A name for messages, usually the file the bytes came from.
    ///   - clock: Passed to the plugin factories that validate each `config`.
    /// - Throws: ``ManifestError`` listing every error found, with the warnings found so far.
    public static func parse(
        _ bytes: [UInt8],
        baseDirectory: String,
        registry: PluginRegistry,
        sourcePath: String? = nil,
        clock: KernelClock = .continuous
    ) throws -> Manifest {
        let decoder = ManifestDecoder(
            registry: registry,
            baseDirectory: ManifestPaths.absolute(baseDirectory),
            clock: clock
        )
        let decoded = decoder.decode(bytes)
        let diagnostics = decoder.sink.diagnostics
        guard var manifest = decoded, !diagnostics.contains(where: { $0.severity == .error }) else {
            throw ManifestError(file: sourcePath, diagnostics: diagnostics)
        }
        manifest.sourcePath = sourcePath
        manifest.warnings = diagnostics
        return manifest
    }
}

/// One plugin entry of the manifest's `plugins` array.
public struct PluginEntry: Hashable, Sendable {
    /// How the plugin's code is loaded.
    public enum Load: String, Hashable, Sendable {
        /// Linked into this build and selected by `type`.
        case builtin
        /// A driver in a supervised child process (the External transport).
        case process
    }

    /// The manifest `id`, unique among plugins.
    public var id: String
    /// The registered transport type (`simulator`, `pcsc`, …).
    public var type: String
    /// Disabled plugins are validated but not started.
    public var enabled: Bool
    public var load: Load
    /// The entry's `config` object (an empty object when absent).
    public var configuration: JSONValue
    /// JSON path of the entry (`plugins[0]`).
    public var path: String

    public init(
        id: String,
        type: String,
        enabled: Bool = true,
        load: Load = .builtin,
        configuration: JSONValue = .object([]),
        path: String
    ) {
        self.id = id
        self.type = type
        self.enabled = enabled
        self.load = load
        self.configuration = configuration
        self.path = path
    }

    /// JSON path of ``configuration`` (`plugins[0].config`).
    public var configurationPath: String { "\(path).config" }
}

/// One finding of manifest validation: where (a JSON path) and what.
public struct ManifestDiagnostic: Hashable, Sendable, CustomStringConvertible {
    public enum Severity: String, Hashable, Sendable {
        /// The manifest cannot be used.
        case error
        /// The manifest works, but probably not as meant.
        case warning
    }

    /// JSON path (`lanes[2].readers[0]`); empty for the document as a whole.
    public var path: String
    /// What is wrong and what was expected.
    public var message: String
    public var severity: Severity

    public init(path: String, message: String, severity: Severity = .error) {
        self.path = path
        self.message = message
        self.severity = severity
    }

    /// `path: message`, with `warning: ` before warnings' messages; the document itself is `(document)`.
    public var description: String {
        let location = StrictObject.display(path)
        return severity == .error ? "\(location): \(message)" : "\(location): warning: \(message)"
    }
}

/// A manifest that cannot be used: every error found (and the warnings found on the way), each with its JSON
/// path.
public struct ManifestError: Error, Sendable, CustomStringConvertible {
    /// The manifest file as given, when there was one.
    public var file: String?
    /// Errors and warnings in the order they were found; at least one is an error.
    public var diagnostics: [ManifestDiagnostic]

    public init(file: String?, diagnostics: [ManifestDiagnostic]) {
        self.file = file
        self.diagnostics = diagnostics
    }

    public var code: ProximaError.Code { .invalidManifest }

    public var errors: [ManifestDiagnostic] { diagnostics.filter { $0.severity == .error } }
    public var warnings: [ManifestDiagnostic] { diagnostics.filter { $0.severity == .warning } }

    /// The file name and a count, then one diagnostic per line.
    public var description: String {
        func count(_ n: Int, _ noun: String) -> String { n == 1 ? "1 \(noun)" : "\(n) \(noun)s" }
        var header = "\(file ?? "manifest"): \(count(errors.count, "error"))"
        if !warnings.isEmpty { header += ", \(count(warnings.count, "warning"))" }
        return ([header] + diagnostics.map(\.description)).joined(separator: "\n")
    }

    /// The same failure as a ``ProximaCore/ProximaError``, for callers that handle only that type.
    public var proximaError: ProximaError { ProximaError(code, description) }
}

/// File and path helpers of the manifest loader.
enum ManifestPaths {
    struct ReadFailure: Error {
        var message: String
    }

    /// `path` made absolute against the current directory, with `.`, `..` and repeated slashes removed
    /// lexically (symbolic links are not resolved, as a shell's `cd -L` would not).
    static func absolute(_ path: String) -> String {
        let joined =
            path.hasPrefix("/") ? path : PathResolution.resolve(path, against: FileManager.default.currentDirectoryPath)
        return normalize(joined)
    }

    /// Lexical normalisation of an absolute path; `..` at the root stays at the root.
    static func normalize(_ absolutePath: String) -> String {
        var parts: [Substring] = []
        for part in absolutePath.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": _ = parts.popLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// The folder holding `absolutePath`.
    static func directory(of absolutePath: String) -> String {
        guard let slash = absolutePath.lastIndex(of: "/"), slash != absolutePath.startIndex else { return "/" }
        return String(absolutePath[..<slash])
    }

    static func readFile(_ absolutePath: String, limit: Int) throws(ReadFailure) -> [UInt8] {
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        guard files.fileExists(atPath: absolutePath, isDirectory: &isDirectory) else {
            throw ReadFailure(message: "no such file")
        }
        guard !isDirectory.boolValue else { throw ReadFailure(message: "it is a directory, expected a JSON file") }
        guard files.isReadableFile(atPath: absolutePath) else {
            throw ReadFailure(message: "permission denied")
        }
        if let size = (try? files.attributesOfItem(atPath: absolutePath))?[.size] as? NSNumber,
            size.int64Value > Int64(limit)
        {
            throw ReadFailure(message: "the file has \(size.int64Value) bytes, more than the \(limit)-byte limit")
        }
        guard let data = files.contents(atPath: absolutePath) else {
            throw ReadFailure(message: "the file could not be read")
        }
        return [UInt8](data)
    }
}
