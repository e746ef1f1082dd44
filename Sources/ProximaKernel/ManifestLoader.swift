import ProximaCore

/// Collects diagnostics while the decoder walks the manifest.
///
/// A reference type so that the decoder's closures, which mutate the `StrictObject` they read, can record
/// diagnostics without overlapping access to the decoder. Used by one decode call on one task only.
final class ManifestDiagnosticSink {
    private(set) var diagnostics: [ManifestDiagnostic] = []

    var errorCount: Int { diagnostics.count(where: { $0.severity == .error }) }

    func error(_ path: String, _ message: String) {
        diagnostics.append(ManifestDiagnostic(path: path, message: message, severity: .error))
    }

    func warning(_ path: String, _ message: String) {
        diagnostics.append(ManifestDiagnostic(path: path, message: message, severity: .warning))
    }

    /// Records a thrown error: a `ProximaError` at its own ``ProximaCore/ProximaError/jsonPath`` (as `StrictObject`,
    /// plugin factories and capability validators set it), or at `path` when it names none.
    func record(_ error: any Error, at path: String) {
        switch error {
        case let manifestError as ManifestError:
            diagnostics.append(contentsOf: manifestError.diagnostics)
        case let proximaError as ProximaError:
            let reason = proximaError.reason.isEmpty ? "\(proximaError.code)" : proximaError.reason
            self.error(proximaError.jsonPath ?? path, reason)
        default:
            self.error(path, "\(error)")
        }
    }
}

/// Walks one manifest document, reporting every problem to its sink and returning what could be decoded.
struct ManifestDecoder {
    let registry: PluginRegistry
    /// Absolute.
    let baseDirectory: String
    let clock: KernelClock
    let sink = ManifestDiagnosticSink()

    private static let annotationKeys: Set<String> = ["comment", "$comment"]
    private static let defaultMaxWaitMilliseconds: Int64 = 30_000
    private static let maxWaitRange: ClosedRange<Int64> = 1...3_600_000

    /// Runs `body`; a thrown error becomes a diagnostic at (or under) `path` and the result is `nil`.
    func attempt<T>(_ path: String, _ body: () throws -> T) -> T? {
        do {
            return try body()
        } catch {
            sink.record(error, at: path)
            return nil
        }
    }

    // MARK: Document

    func decode(_ bytes: [UInt8]) -> Manifest? {
        let document: JSONValue
        do {
            document = try JSONValue.parse(bytes)
        } catch let error as ProximaError {
            // The parser says "JSON line 3, column 5: …".
            let reason = error.reason.hasPrefix("JSON ") ? "at " + error.reason.dropFirst(5) : error.reason
            sink.error("", "invalid JSON \(reason)")
            return nil
        } catch {
            sink.error("", "invalid JSON: \(error)")
            return nil
        }
        guard case .object = document, var root = try? StrictObject(document, at: "") else {
            sink.error("", "expected a JSON object at the top level, found \(document.typeName)")
            return nil
        }

        guard let schemaVersion = decodeSchemaVersion(&root) else { return nil }
        rejectUnknownMembers(
            of: root,
            known: ["schemaVersion", "$schema", "dataDirectory", "plugins", "lanes", "capabilities"]
        )
        _ = attempt("") { try root.optionalString("$schema") }
        let dataDirectoryName = attempt("") { try root.optionalString("dataDirectory") } ?? nil
        if let name = dataDirectoryName, name.contains("\0") {
            sink.error(root.path(of: "dataDirectory"), "the path contains a NUL character")
        }
        let dataDirectory = ManifestPaths.normalize(
            PathResolution.resolve(dataDirectoryName ?? "var", against: baseDirectory)
        )

        let plugins = decodePlugins(&root, dataDirectory: dataDirectory)
        let lanes = decodeLanes(&root)
        let capabilities = decodeCapabilities(&root)

        if let plugins, let lanes {
            warnAboutUndeclaredReaders(lanes: lanes, transports: plugins)
        }
        return Manifest(
            schemaVersion: schemaVersion,
            baseDirectory: baseDirectory,
            dataDirectory: dataDirectory,
            plugins: plugins?.entries ?? [],
            lanes: lanes?.map(\.configuration) ?? [],
            capabilities: capabilities,
            declaredReaders: plugins?.declaredReaders ?? []
        )
    }

    /// The schema version; `nil` (stop here) when the document is of a version this build does not read,
    /// because the rest would then be judged by the wrong rules.
    private func decodeSchemaVersion(_ root: inout StrictObject) -> Int? {
        let supported = Manifest.supportedSchemaVersions.map(String.init).joined(separator: ", ")
        guard let value = root.value("schemaVersion") else {
            sink.error("", "missing required member \"schemaVersion\" (the manifest format version: \(supported))")
            return 1
        }
        let path = root.path(of: "schemaVersion")
        switch value {
        case .integer(let version) where Manifest.supportedSchemaVersions.contains(Int(clamping: version)):
            return Int(version)
        case .integer(let version):
            sink.error(path, "schemaVersion \(version) is not supported; this build reads schemaVersion \(supported)")
        default:
            sink.error(path, "expected an integer (supported: \(supported)), found \(value.typeName)")
        }
        return nil
    }

    // MARK: Plugins

    struct DecodedPlugins {
        var entries: [PluginEntry] = []
        var declaredReaders: [ReaderInfo] = []
        /// Whether an enabled transport discovers its readers at run time (PC/SC), so any reader may appear.
        var hasDiscoveringTransport = false
        /// Whether every enabled transport could be built, so the declared readers are the whole static set.
        var allEnabledBuilt = true
    }

    private func decodePlugins(_ root: inout StrictObject, dataDirectory: String) -> DecodedPlugins? {
        guard let value = root.value("plugins") else {
            sink.error("", "missing required member \"plugins\" (an array of transport plugins)")
            return nil
        }
        let path = root.path(of: "plugins")
        guard case .array(let elements) = value else {
            sink.error(path, "expected an array of plugin entries, found \(value.typeName)")
            return nil
        }
        var result = DecodedPlugins()
        var firstIndexOfID: [String: Int] = [:]
        var readerOwners: [ReaderID: PluginEntry] = [:]
        var enabledCount = 0
        for (index, element) in elements.enumerated() {
            let entryPath = "\(path)[\(index)]"
            guard let decoded = decodePlugin(element, at: entryPath, dataDirectory: dataDirectory) else {
                result.allEnabledBuilt = false
                enabledCount += 1  // unknown: do not also claim that nothing is enabled
                continue
            }
            if decoded.enabled { enabledCount += 1 }
            if let id = decoded.id {
                if let first = firstIndexOfID[id] {
                    sink.error("\(entryPath).id", "duplicate plugin id \"\(id)\" (already used by \(path)[\(first)])")
                } else {
                    firstIndexOfID[id] = index
                }
            }
            // Only a fully valid entry is kept; any error anywhere fails the whole manifest anyway.
            if let entry = decoded.entry { result.entries.append(entry) }
            guard decoded.enabled else { continue }
            guard let transport = decoded.transport else {
                result.allEnabledBuilt = false
                continue
            }
            guard let declared = transport.declaredReaders else {
                result.hasDiscoveringTransport = true
                continue
            }
            for reader in declared {
                if let owner = readerOwners[reader.id] {
                    sink.error(
                        entryPath,
                        "reader \"\(reader.id)\" is already declared by plugin \"\(owner.id)\" (\(owner.path)); "
                            + "reader ids must be unique across transports"
                    )
                } else if let entry = decoded.entry {
                    readerOwners[reader.id] = entry
                }
                result.declaredReaders.append(reader)
            }
        }
        if enabledCount == 0 {
            sink.error(path, "no enabled plugin: at least one transport plugin must be enabled")
        }
        return result
    }

    private struct DecodedPlugin {
        var id: String?
        var enabled: Bool
        /// Set when the entry is valid.
        var entry: PluginEntry?
        /// Set when the factory built it (enabled or not).
        var transport: (any Transport)?
    }

    private func decodePlugin(_ value: JSONValue, at path: String, dataDirectory: String) -> DecodedPlugin? {
        guard var object = attempt(path, { try StrictObject(value, at: path) }) else { return nil }
        let errorsBefore = sink.errorCount

        let id = decodeID(&object, what: "plugin")
        let typeName = attempt(path) { try object.string("type") }
        var transportType: TransportType?
        if let typeName {
            transportType = registry.transportTypes[typeName]
            if transportType == nil {
                let known = registry.transportTypeNames.map { "\"\($0)\"" }.joined(separator: ", ")
                sink.error(
                    object.path(of: "type"),
                    "unknown transport type \"\(typeName)\"; "
                        + (known.isEmpty ? "this build registers no transport types" : "known types: \(known)")
                )
            }
        }
        let enabled = attempt(path) { try object.bool("enabled", default: true) }
        let loadName = attempt(path) { try object.optionalChoice("load", ["builtin", "process"]) } ?? nil
        let load = loadName.flatMap(PluginEntry.Load.init(rawValue:)) ?? transportType?.load ?? .builtin
        if let transportType, let typeName, load != transportType.load {
            sink.error(
                object.path(of: "load"),
                transportType.load == .builtin
                    ? "type \"\(typeName)\" is built in: \"process\" is only for out-of-process transports "
                        + "(\"external\"); use \"builtin\" or omit \"load\""
                    : "type \"\(typeName)\" runs its driver as a child process: use \"process\" or omit \"load\""
            )
        }
        var configuration = JSONValue.object([])
        if let config = object.value("config") {
            if case .object = config {
                configuration = config
            } else {
                sink.error(
                    object.path(of: "config"),
                    "expected an object (the plugin's configuration), found \(config.typeName)"
                )
            }
        }
        rejectUnknownMembers(of: object, known: ["id", "type", "enabled", "load", "config"])

        var result = DecodedPlugin(id: id, enabled: enabled ?? true)
        guard sink.errorCount == errorsBefore, let id, let typeName, let transportType, let enabled else {
            return result
        }
        let entry = PluginEntry(
            id: id,
            type: typeName,
            enabled: enabled,
            load: load,
            configuration: configuration,
            path: path
        )
        let context = PluginContext(
            id: id,
            configuration: configuration,
            configurationPath: entry.configurationPath,
            baseDirectory: baseDirectory,
            dataDirectory: dataDirectory,
            clock: clock
        )
        // Disabled plugins are built too: their configuration must be valid before anyone enables them.
        result.transport = attempt(entry.configurationPath) { try transportType.make(context) }
        if result.transport != nil { result.entry = entry }
        return result
    }

    // MARK: Lanes

    struct DecodedLane {
        var configuration: LaneConfiguration
        /// Each entry of `readers` with its JSON path.
        var readers: [(value: String, path: String)]
        /// Each entry of `readerNames` with its JSON path.
        var readerNames: [(value: String, path: String)]
    }

    private func decodeLanes(_ root: inout StrictObject) -> [DecodedLane]? {
        guard let value = root.value("lanes") else {
            sink.error("", "missing required member \"lanes\" (an array of lanes)")
            return nil
        }
        let path = root.path(of: "lanes")
        guard case .array(let elements) = value else {
            sink.error(path, "expected an array of lanes, found \(value.typeName)")
            return nil
        }
        if elements.isEmpty {
            sink.error(path, "no lane: declare at least one lane and the readers that serve it")
        }
        var lanes: [DecodedLane] = []
        var firstIndexOfID: [String: Int] = [:]
        for (index, element) in elements.enumerated() {
            let lanePath = "\(path)[\(index)]"
            let (id, lane) = decodeLane(element, at: lanePath)
            if let id {
                if let first = firstIndexOfID[id] {
                    sink.error("\(lanePath).id", "duplicate lane id \"\(id)\" (already used by \(path)[\(first)])")
                } else {
                    firstIndexOfID[id] = index
                }
            }
            if let lane { lanes.append(lane) }
        }
        return lanes
    }

    /// The lane's id when valid, and the lane when entirely valid.
    private func decodeLane(_ value: JSONValue, at path: String) -> (id: String?, lane: DecodedLane?) {
        guard var object = attempt(path, { try StrictObject(value, at: path) }) else { return (nil, nil) }
        let errorsBefore = sink.errorCount

        let id = decodeID(&object, what: "lane")
        let readers = decodeStringList(&object, "readers", what: "a reader id")
        let readerNames = decodeStringList(&object, "readerNames", what: "a reader name pattern")
        let overflow = attempt(path) { try object.bool("overflowToShared", default: false) }
        let queuePolicy = decodeQueuePolicy(&object)
        rejectUnknownMembers(of: object, known: ["id", "readers", "readerNames", "overflowToShared", "queue"])

        if let readers, let readerNames, let overflow, readers.isEmpty, readerNames.isEmpty, !overflow {
            sink.error(
                path,
                "lane serves no reader: list \"readers\" or \"readerNames\", or set \"overflowToShared\": true"
            )
        }
        guard sink.errorCount == errorsBefore, let id, let readers, let readerNames, let overflow, let queuePolicy
        else { return (id, nil) }
        let configuration = LaneConfiguration(
            id: LaneID(id),
            readerIDs: readers.map { ReaderID($0.value) },
            readerNamePatterns: readerNames.map(\.value),
            overflowToShared: overflow,
            queuePolicy: queuePolicy
        )
        return (id, DecodedLane(configuration: configuration, readers: readers, readerNames: readerNames))
    }

    /// An optional array of unique non-empty strings; `[]` when absent, `nil` after an error.
    private func decodeStringList(
        _ object: inout StrictObject,
        _ key: String,
        what: String
    ) -> [(value: String, path: String)]? {
        guard let value = object.value(key) else { return [] }
        let path = object.path(of: key)
        guard case .array(let elements) = value else {
            sink.error(path, "expected an array of strings (each \(what)), found \(value.typeName)")
            return nil
        }
        var result: [(value: String, path: String)] = []
        var firstIndex: [String: Int] = [:]
        var failed = false
        for (index, element) in elements.enumerated() {
            let elementPath = "\(path)[\(index)]"
            guard case .string(let string) = element, !string.isEmpty else {
                let found = element == .string("") ? "an empty string" : element.typeName
                sink.error(elementPath, "expected a non-empty string (\(what)), found \(found)")
                failed = true
                continue
            }
            if let first = firstIndex[string] {
                sink.error(elementPath, "duplicate entry \"\(string)\" (also at \(path)[\(first)])")
                failed = true
                continue
            }
            firstIndex[string] = index
            result.append((string, elementPath))
        }
        return failed ? nil : result
    }

    private func decodeQueuePolicy(_ lane: inout StrictObject) -> QueuePolicy? {
        let defaultPolicy = QueuePolicy.wait(maxWait: .milliseconds(Self.defaultMaxWaitMilliseconds))
        guard let value = lane.value("queue") else { return defaultPolicy }
        let path = lane.path(of: "queue")
        guard var queue = attempt(path, { try StrictObject(value, at: path) }) else { return nil }
        let errorsBefore = sink.errorCount
        let policy = attempt(path) { try queue.optionalChoice("policy", ["wait", "failFast"]) }
        let maxWait = attempt(path) { try queue.optionalInteger("maxWaitMs", in: Self.maxWaitRange) }
        rejectUnknownMembers(of: queue, known: ["policy", "maxWaitMs"])
        if policy == "failFast", queue.has("maxWaitMs") {
            sink.error(
                queue.path(of: "maxWaitMs"),
                "maxWaitMs applies only to the \"wait\" policy; remove it or set \"policy\": \"wait\""
            )
        }
        guard sink.errorCount == errorsBefore, let policy, let maxWait else { return nil }
        if policy == "failFast" { return .failFast }
        return .wait(maxWait: .milliseconds(maxWait ?? Self.defaultMaxWaitMilliseconds))
    }

    // MARK: Capabilities

    private func decodeCapabilities(_ root: inout StrictObject) -> [CapabilityID: JSONValue] {
        guard let value = root.value("capabilities") else { return [:] }
        let path = root.path(of: "capabilities")
        guard var object = attempt(path, { try StrictObject(value, at: path) }) else { return [:] }
        var capabilities: [CapabilityID: JSONValue] = [:]
        for key in object.keys where !Self.annotationKeys.contains(key) {
            let settingsPath = object.path(of: key)
            guard let settings = object.value(key) else { continue }
            guard let type = registry.capabilityTypes[CapabilityID(key)] else {
                let known = registry.capabilityIDs.map { "\"\($0)\"" }.joined(separator: ", ")
                sink.error(
                    settingsPath,
                    "unknown capability \"\(key)\"; "
                        + (known.isEmpty ? "this build registers no capabilities" : "known capabilities: \(known)")
                )
                continue
            }
            guard case .object = settings else {
                sink.error(settingsPath, "expected an object (the capability's settings), found \(settings.typeName)")
                continue
            }
            let valid: Void? = attempt(settingsPath) {
                try type.validateSettings(settings, settingsPath, baseDirectory)
            }
            if valid != nil { capabilities[type.id] = settings }
        }
        return capabilities
    }

    // MARK: Cross-checks

    /// Warns about lane readers and patterns that no enabled transport declares. Skipped when a discovering
    /// transport is enabled (any reader may appear at run time) or when a transport failed to build (its
    /// readers are unknown, and errors are reported anyway).
    private func warnAboutUndeclaredReaders(lanes: [DecodedLane], transports: DecodedPlugins) {
        guard !transports.hasDiscoveringTransport, transports.allEnabledBuilt else { return }
        let declaredIDs = Set(transports.declaredReaders.map(\.id))
        let listed = Self.list(transports.declaredReaders.map(\.id.rawValue))
        for lane in lanes {
            for reader in lane.readers where !declaredIDs.contains(ReaderID(reader.value)) {
                sink.warning(
                    reader.path,
                    "no enabled transport declares reader \"\(reader.value)\" and none discovers readers, "
                        + "so the lane can never use it (declared: \(listed))"
                )
            }
            for pattern in lane.readerNames
            where !transports.declaredReaders.contains(where: { GlobPattern.matches(pattern.value, $0.name) }) {
                sink.warning(
                    pattern.path,
                    "pattern \"\(pattern.value)\" matches no reader name an enabled transport declares, "
                        + "and none discovers readers (declared: \(Self.list(transports.declaredReaders.map(\.name))))"
                )
            }
        }
    }

    // MARK: Shared rules

    /// `id` under `object`, checked against the id rule; `nil` after an error.
    private func decodeID(_ object: inout StrictObject, what: String) -> String? {
        let path = object.path
        guard let id = attempt(path, { try object.string("id") }) else { return nil }
        guard Self.isValidID(id) else {
            sink.error(
                object.path(of: "id"),
                "\"\(id)\" is not a valid \(what) id: use 1 to 64 letters, digits, '.', '_' or '-', "
                    + "starting with a letter or digit"
            )
            return nil
        }
        return id
    }

    /// `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`
    static func isValidID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard (1...64).contains(bytes.count) else { return false }
        func isAlphanumeric(_ b: UInt8) -> Bool {
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(b) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
        }
        guard isAlphanumeric(bytes[0]) else { return false }
        return bytes.dropFirst().allSatisfy {
            isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
        }
    }

    /// Reports every member of `object` that is neither in `known` nor a comment, suggesting a near miss.
    private func rejectUnknownMembers(of object: StrictObject, known: [String]) {
        for key in object.keys where !known.contains(key) && !Self.annotationKeys.contains(key) {
            let suggestion = known.first { Self.editDistance($0.lowercased(), key.lowercased(), limit: 2) <= 2 }
            let hint = suggestion.map { "did you mean \"\($0)\"? " } ?? ""
            sink.error(
                object.path(of: key),
                "unknown member \"\(key)\"; \(hint)expected one of: \(known.joined(separator: ", "))"
            )
        }
    }

    /// Levenshtein distance, giving up (returning `limit + 1`) when the lengths alone exceed `limit`.
    static func editDistance(_ a: String, _ b: String, limit: Int) -> Int {
        let a = Array(a.unicodeScalars)
        let b = Array(b.unicodeScalars)
        guard abs(a.count - b.count) <= limit else { return limit + 1 }
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            previous = current
        }
        return previous[b.count]
    }

    /// Up to ten quoted names for a message; "none" when empty.
    static func list(_ names: [String]) -> String {
        guard !names.isEmpty else { return "none" }
        let shown = names.prefix(10).map { "\"\($0)\"" }.joined(separator: ", ")
        return names.count > 10 ? "\(shown), … (\(names.count) in all)" : shown
    }
}
