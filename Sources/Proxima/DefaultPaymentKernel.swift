import Foundation
internal import PaymentCapability
internal import ProximaCore
package import ProximaKernel
internal import Synchronization

/// The process-wide kernel behind `PaymentCardReader()` (no arguments), as Apple's reader needs no setup.
///
/// The manifest is `PROXIMA_CONFIG`, else `Config/proxima.json` relative to the current directory; the lane is
/// `PROXIMA_LANE`, else the manifest's first lane (a test can set both in code first, through the `Testing` SPI
/// `PaymentCardReader.setDefaultConfiguration(manifestPath:lane:)`). The kernel is built and started by the first reader and runs
/// until the process exits.
///
/// It runs in one unstructured `Task`, the single exception to Proxima's structured-concurrency rule: Apple's API
/// offers no run loop, lifecycle or `run()` hook where the kernel could run inside the caller's task tree, and
/// `PaymentCardReader()` must work from any synchronous or asynchronous code. The task is created once, holds no
/// reference to any reader, and lives exactly as long as the process. Code that owns its lifecycle (servers, tests,
/// the CLI) uses `PaymentCardReader(kernel:lane:)` and runs `kernel.run()` in its own task group instead.
enum DefaultPaymentKernel {
    /// The environment variable naming the manifest.
    static let configurationVariable = "PROXIMA_CONFIG"
    /// The environment variable naming the lane.
    static let laneVariable = "PROXIMA_LANE"
    /// The manifest used when `PROXIMA_CONFIG` is not set.
    static let defaultConfigurationPath = "Config/proxima.json"

    /// A configuration set in code, which wins over the environment (see
    /// `PaymentCardReader.setDefaultConfiguration(manifestPath:lane:)`), and whether the kernel was built.
    private struct State: Sendable {
        var manifestPath: String?
        var lane: String?
        var started = false
    }

    private static let state = Mutex(State())

    /// The manifest path: set in code, else `PROXIMA_CONFIG`, else `Config/proxima.json`.
    static var configurationPath: String {
        state.withLock { $0.manifestPath }
            ?? ProcessInfo.processInfo.environment[configurationVariable] ?? defaultConfigurationPath
    }

    /// The lane name: set in code, else `PROXIMA_LANE`; `nil` for the manifest's first lane.
    static var laneName: String? {
        let (inCode, lane) = state.withLock { ($0.manifestPath != nil, $0.lane) }
        let name = inCode ? lane : ProcessInfo.processInfo.environment[laneVariable]
        return name?.isEmpty == true ? nil : name
    }

    /// Sets the configuration in code; `false` when the default kernel was already built.
    static func configure(manifestPath: String, lane: String?) -> Bool {
        state.withLock { state in
            guard !state.started else { return false }
            state.manifestPath = manifestPath
            state.lane = lane
            return true
        }
    }

    /// A started kernel, or why there is none.
    private static let shared: Result<Kernel, PaymentCardReaderError> = {
        state.withLock { $0.started = true }
        let path = configurationPath
        let manifest: Manifest
        do {
            manifest = try Manifest.load(contentsOf: path, registry: BuiltinPlugins.registry)
        } catch let error as ManifestError {
            return .failure(
                .notAllowed("the default kernel's manifest cannot be used (\(configurationVariable)): \(error)")
            )
        } catch {
            return .failure(.notAllowed("the default kernel's manifest \(path) cannot be loaded: \(error)"))
        }
        let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
        Task { await kernel.run() }
        return .success(kernel)
    }()

    /// The default kernel, or why there is none (shared by `PaymentCardReader()` and `MobileDocumentReader()`).
    static func kernel() -> Result<Kernel, PaymentCardReaderError> { shared }

    /// The payment service of the default kernel on the default lane.
    static func service() -> Result<PaymentService, PaymentCardReaderError> {
        switch shared {
        case .failure(let error):
            return .failure(error)
        case .success(let kernel):
            return PaymentCardReader.service(kernel, lane: laneName.map(LaneID.init(rawValue:)))
        }
    }

    /// The manifest of the default kernel configuration, loaded without starting a kernel (for the sandbox).
    static func manifest() throws -> Manifest {
        try Manifest.load(contentsOf: configurationPath, registry: BuiltinPlugins.registry)
    }
}

extension PaymentCardReader {
    /// The manifest `PaymentCardReader()` uses, loaded without starting a kernel (for the processor sandbox).
    package static func defaultManifest() throws -> Manifest { try DefaultPaymentKernel.manifest() }

    /// Sets the manifest and lane of the default kernel in code instead of `PROXIMA_CONFIG` and `PROXIMA_LANE`,
    /// for hosts and tests that must not change the process environment (child processes inherit it).
    ///
    /// Call it before the first `PaymentCardReader()`: the default kernel is built once.
    ///
    /// - Parameters:
    ///   - manifestPath: The manifest file.
    ///   - lane: The lane; `nil` for the manifest's first lane.
    /// - Returns: `false`, changing nothing, when the default kernel was already built.
    @_spi(Testing)
    @discardableResult
    public static func setDefaultConfiguration(manifestPath: String, lane: String?) -> Bool {
        DefaultPaymentKernel.configure(manifestPath: manifestPath, lane: lane)
    }
}
