import Proxima
import ProximaCore
import ProximaKernel

/// libFuzzer entry: the JSON parser and the manifest loader must never trap. Whatever parses must write back
/// to text that parses to the same value, and the loader must either return a manifest or throw a
/// `ManifestError` that holds at least one error.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))

    if let value = try? JSONValue.parse(bytes) {
        let text = value.jsonText
        guard let again = try? JSONValue.parse(text), again == value else {
            fatalError("JSON round trip failed: \(text)")
        }
    }
    // A shallow limit reaches the depth check with small inputs.
    _ = try? JSONValue.parse(bytes, limits: JSONValue.Limits(maxDepth: 3))

    do {
        // Run from the package root, so that the card profiles the seed manifests name are found and loaded.
        let manifest = try Manifest.parse(bytes, baseDirectory: "Config", registry: FuzzRegistry.registry)
        guard Set(manifest.lanes.map(\.id)).count == manifest.lanes.count,
            Set(manifest.plugins.map(\.id)).count == manifest.plugins.count,
            !manifest.enabledPlugins.isEmpty, !manifest.lanes.isEmpty,
            manifest.dataDirectory.hasPrefix("/"),
            manifest.warnings.allSatisfy({ $0.severity == .warning })
        else { fatalError("accepted an inconsistent manifest: \(String(decoding: bytes, as: UTF8.self))") }
        for entry in manifest.plugins {
            _ = manifest.pluginContext(for: entry, clock: .continuous)
        }
    } catch let error as ManifestError {
        guard !error.errors.isEmpty else { fatalError("ManifestError without an error: \(error)") }
        _ = error.description
    } catch {
        fatalError("Manifest.parse threw \(error), not a ManifestError")
    }
    return 0
}

/// The built-in plugin types, plus a discovering "pcsc" stand-in when the build has no such type, so that
/// both kinds of transport are reached.
///
/// A static property, not a global of this file: libFuzzer's `main` never runs the top-level code.
enum FuzzRegistry {
    static let registry: PluginRegistry = {
        var registry = BuiltinPlugins.registry
        if registry.transportTypes["pcsc"] == nil {
            registry.register(
                TransportType(name: "pcsc", summary: "fuzz stand-in") { context in
                    try StrictObject(context.configuration, at: context.configurationPath).finish()
                    return FuzzTransport(id: context.id, declaredReaders: nil)
                }
            )
        }
        return registry
    }()
}

struct FuzzTransport: Transport {
    let id: String
    let declaredReaders: [ReaderInfo]?
    var events: AsyncStream<ReaderEvent> { AsyncStream { $0.finish() } }
    func run() async throws {}
    func connect(to reader: ReaderID, options: ConnectOptions) async throws -> any CardChannel {
        throw ProximaError(.unsupported, "fuzz transport")
    }
}
