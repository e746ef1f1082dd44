internal import CCIDTransport
internal import ExternalTransport
internal import LibNFCTransport
internal import LoyaltyCapability
internal import MobileDocumentCapability
internal import PCSCTransport
internal import PaymentCapability
internal import ProximaCore
public import ProximaKernel
internal import RemoteTransport
internal import SimulatorTransport
internal import StoreAndForwardCapability

/// The plugin types compiled into Proxima, registered in code: the manifest's `type` picks one.
///
/// A new built-in transport or capability adds one `register` line here. Third-party drivers do not link in;
/// they run out of process (the `External` transport).
public enum BuiltinPlugins {
    /// Every built-in transport and capability type.
    public static let registry: PluginRegistry = {
        var registry = PluginRegistry()
        registry.register(
            TransportType(name: "simulator", summary: "in-process virtual readers and cards") { context in
                let configuration = try SimulatorConfiguration(
                    json: context.configuration,
                    path: context.configurationPath,
                    baseDirectory: context.baseDirectory
                )
                let clock = context.clock
                let time = SimulatorTime(now: { clock.now }, sleepUntil: { try await clock.sleep(until: $0) })
                return SimulatorTransport(
                    id: context.id,
                    configuration: configuration,
                    time: time,
                    reportsCardPresence: context.reportsCardPresence
                )
            }
        )
        registry.register(
            TransportType(name: "pcsc", summary: "PC/SC readers through pcsc-lite (pcscd)") { context in
                PCSCTransport(
                    id: context.id,
                    configuration: try PCSCConfiguration(json: context.configuration, path: context.configurationPath)
                )
            }
        )
        registry.register(
            TransportType(
                name: "external",
                summary: "readers of a driver in a supervised child process (length-prefixed JSON on stdio)",
                load: .process
            ) { context in
                ExternalTransport(
                    id: context.id,
                    configuration: try ExternalConfiguration(
                        json: context.configuration,
                        path: context.configurationPath,
                        baseDirectory: context.baseDirectory
                    )
                )
            }
        )
        registry.register(
            TransportType(
                name: "remote",
                summary: "readers of lane-PC agents (proxima agent) over TLS 1.3 with mutual authentication"
            ) { context in
                RemoteTransport(
                    id: context.id,
                    configuration: try RemoteConfiguration(
                        json: context.configuration,
                        path: context.configurationPath,
                        baseDirectory: context.baseDirectory
                    )
                )
            }
        )
        registry.register(
            TransportType(name: "libnfc", summary: "NFC devices through libnfc (PN532 on a UART, PN533, ACR122U)") {
                context in
                LibNFCTransport(
                    id: context.id,
                    configuration: try LibNFCConfiguration(
                        json: context.configuration,
                        path: context.configurationPath
                    )
                )
            }
        )
        registry.register(
            TransportType(name: "ccid", summary: "USB CCID readers through libusb, without pcscd") { context in
                CCIDTransport(
                    id: context.id,
                    configuration: try CCIDConfiguration(json: context.configuration, path: context.configurationPath)
                )
            }
        )
        registry.register(
            CapabilityType(id: "identity", summary: "card identity: technology, UID length, PPSE applications") {
                settings,
                path,
                _ in
                // No settings yet; an empty object keeps the key explicit so a typo is still caught.
                try StrictObject(settings, at: path).finish()
            }
        )
        registry.register(PaymentSettings.capabilityType)
        registry.register(LoyaltySettings.capabilityType)
        registry.register(MobileDocumentSettings.capabilityType)
        registry.register(StoreAndForwardSettings.capabilityType)
        return registry
    }()
}
