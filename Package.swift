// swift-tools-version:6.0
import PackageDescription

/// Every Swift target is built in Swift 6 language mode with complete strict concurrency.
let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "Proxima",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Proxima", targets: ["Proxima"]),
        .library(name: "ProximaKernel", targets: ["ProximaKernel"]),
        .library(name: "ProximaCore", targets: ["ProximaCore"]),
        .library(name: "ProximaSystem", targets: ["ProximaSystem"]),
        .library(name: "ProximaCardEmulator", targets: ["ProximaCardEmulator"]),
        .library(name: "ProximaCrypto", targets: ["ProximaCrypto"]),
        .library(name: "ProximaProcessorSandbox", targets: ["ProximaProcessorSandbox"]),
        .executable(name: "proxima", targets: ["proxima"]),
        .executable(name: "FuzzBERTLV", targets: ["FuzzBERTLV"]),
        .executable(name: "FuzzAPDU", targets: ["FuzzAPDU"]),
        .executable(name: "FuzzManifest", targets: ["FuzzManifest"]),
        .executable(name: "FuzzEMV", targets: ["FuzzEMV"]),
        .executable(name: "FuzzDriverFrame", targets: ["FuzzDriverFrame"]),
        .executable(name: "FuzzPN532", targets: ["FuzzPN532"]),
        .executable(name: "FuzzCCID", targets: ["FuzzCCID"]),
        .executable(name: "FuzzCBOR", targets: ["FuzzCBOR"]),
        .executable(name: "FuzzCOSE", targets: ["FuzzCOSE"]),
        .executable(name: "FuzzMdocEngagement", targets: ["FuzzMdocEngagement"]),
        .executable(name: "FuzzDeviceResponse", targets: ["FuzzDeviceResponse"]),
        .executable(name: "FuzzVICAL", targets: ["FuzzVICAL"]),
        .executable(name: "FuzzVAS", targets: ["FuzzVAS"]),
        .executable(name: "FuzzSmartTap", targets: ["FuzzSmartTap"]),
        .executable(name: "FuzzStoreBatch", targets: ["FuzzStoreBatch"]),
        .executable(name: "SchedulerBenchmark", targets: ["SchedulerBenchmark"]),
        .executable(name: "ExchangeBenchmark", targets: ["ExchangeBenchmark"]),
        .executable(name: "PCSCBenchmark", targets: ["PCSCBenchmark"]),
        .executable(name: "PaymentBenchmark", targets: ["PaymentBenchmark"]),
        .executable(name: "ODABenchmark", targets: ["ODABenchmark"]),
        .executable(name: "ExternalBenchmark", targets: ["ExternalBenchmark"]),
        .executable(name: "LibNFCBenchmark", targets: ["LibNFCBenchmark"]),
        .executable(name: "CCIDBenchmark", targets: ["CCIDBenchmark"]),
        .executable(name: "MDLBenchmark", targets: ["MDLBenchmark"]),
        .executable(name: "LoyaltyBenchmark", targets: ["LoyaltyBenchmark"]),
        .executable(name: "RemoteBenchmark", targets: ["RemoteBenchmark"]),
        .executable(name: "StoreAndForwardBenchmark", targets: ["StoreAndForwardBenchmark"]),
    ],
    targets: [
        // C libraries, each behind a system-library target (module.modulemap + shim.h only).
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CPCSCLite", pkgConfig: "libpcsclite", providers: [.apt(["libpcsclite-dev"])]),
        .systemLibrary(name: "CNFC", pkgConfig: "libnfc", providers: [.apt(["libnfc-dev", "libusb-dev"])]),
        .systemLibrary(name: "CLibUSB", pkgConfig: "libusb-1.0", providers: [.apt(["libusb-1.0-0-dev"])]),
        .systemLibrary(name: "CUmockdev", pkgConfig: "umockdev-1.0", providers: [.apt(["libumockdev-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // glibc's posix_spawn file actions that Swift's Glibc module leaves out (closefrom, chdir).
        .systemLibrary(name: "CProcessSpawn", path: "Sources/CProcessSpawn"),

        .target(name: "ProximaCore", swiftSettings: strict),
        // Typed system calls (file descriptors, errno, EINTR, atomic private files): the one place that does POSIX I/O.
        .target(name: "ProximaSystem", swiftSettings: strict),
        .target(name: "ProximaKernel", dependencies: ["ProximaCore"], swiftSettings: strict),
        .target(name: "ProximaCrypto", dependencies: ["ProximaCore", "COpenSSL", "CZlib"], swiftSettings: strict),
        .target(
            name: "ProximaCardEmulator",
            dependencies: ["ProximaCore", "ProximaCrypto", "ProximaSystem"],
            swiftSettings: strict
        ),
        .target(
            name: "SimulatorTransport",
            dependencies: ["ProximaCore", "ProximaCardEmulator"],
            path: "Plugins/Transports/Simulator",
            swiftSettings: strict
        ),
        .target(
            name: "PCSCTransport",
            dependencies: ["ProximaCore", "CPCSCLite"],
            path: "Plugins/Transports/PCSC",
            swiftSettings: strict
        ),
        // EMV pieces both payment and identity read: the PPSE directory, FCIs, brands and kernels, card-answer parsing.
        .target(
            name: "EMVCommon",
            dependencies: ["ProximaCore"],
            path: "Plugins/Capabilities/EMV",
            swiftSettings: strict
        ),
        .target(
            name: "ExternalTransport",
            dependencies: ["ProximaCore", "ProximaCrypto", "CProcessSpawn"],
            path: "Plugins/Transports/External",
            swiftSettings: strict
        ),
        // Readers of lane PCs over TLS 1.3 with mutual authentication (libssl), and the agent that offers them; the
        // frames and the session code are the External transport's.
        .target(
            name: "RemoteTransport",
            dependencies: ["ProximaCore", "ExternalTransport", "ProximaCrypto", "ProximaSystem", "COpenSSL"],
            path: "Plugins/Transports/Remote",
            swiftSettings: strict
        ),
        .target(
            name: "LibNFCTransport",
            dependencies: ["ProximaCore", "CNFC"],
            path: "Plugins/Transports/LibNFC",
            swiftSettings: strict
        ),
        .target(
            name: "CCIDTransport",
            dependencies: ["ProximaCore", "ProximaSystem", "CLibUSB"],
            path: "Plugins/Transports/CCID",
            swiftSettings: strict
        ),
        .target(
            name: "PaymentCapability",
            dependencies: ["ProximaCore", "EMVCommon", "ProximaKernel", "ProximaCrypto", "ProximaSystem"],
            path: "Plugins/Capabilities/Payment",
            swiftSettings: strict
        ),
        // Loyalty passes (Apple VAS): protocol steps, settings and the service; runs before payment in a combined tap.
        .target(
            name: "LoyaltyCapability",
            dependencies: ["ProximaCore", "ProximaKernel", "ProximaCrypto", "ProximaSystem", "PaymentCapability"],
            path: "Plugins/Capabilities/Loyalty",
            swiftSettings: strict
        ),
        // Store and forward: offline payment reads in a signed SQLite store (WAL), batches, deletion tokens, limits.
        .target(
            name: "StoreAndForwardCapability",
            dependencies: [
                "ProximaCore", "ProximaKernel", "ProximaCrypto", "ProximaSystem", "PaymentCapability", "CSQLite",
            ],
            path: "Plugins/Capabilities/StoreAndForward",
            swiftSettings: strict
        ),
        .target(
            name: "MobileDocumentCapability",
            dependencies: ["ProximaCore", "ProximaCrypto", "ProximaKernel", "ProximaSystem"],
            path: "Plugins/Capabilities/MobileDocument",
            swiftSettings: strict
        ),
        .target(
            name: "IdentityCapability",
            dependencies: ["ProximaCore", "EMVCommon"],
            path: "Plugins/Capabilities/Identity",
            swiftSettings: strict
        ),
        .target(
            name: "Proxima",
            dependencies: [
                "ProximaCore", "ProximaKernel", "SimulatorTransport", "PCSCTransport", "IdentityCapability",
                "PaymentCapability", "EMVCommon", "ExternalTransport", "LibNFCTransport",
                "CCIDTransport", "LoyaltyCapability", "RemoteTransport", "MobileDocumentCapability",
                "StoreAndForwardCapability",
            ],
            swiftSettings: strict
        ),
        // The processor's side (tokens, envelope opening) for the CLI, the demo and tests; never linked into apps.
        .target(
            name: "ProximaProcessorSandbox",
            dependencies: [
                "Proxima", "PaymentCapability", "ProximaCore", "ProximaCrypto", "ProximaKernel", "ProximaSystem",
                "StoreAndForwardCapability",
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "proxima",
            dependencies: [
                "Proxima", "ProximaKernel", "ProximaCore", "ProximaCardEmulator", "IdentityCapability",
                "PaymentCapability", "ProximaProcessorSandbox", "ProximaCrypto", "ProximaSystem", "RemoteTransport",
                "MobileDocumentCapability",
                "StoreAndForwardCapability",
            ],
            swiftSettings: strict
        ),

        // libFuzzer entry points: `swift build --product FuzzX --sanitize fuzzer --sanitize address`.
        .executableTarget(
            name: "FuzzVAS",
            dependencies: ["ProximaCore", "ProximaCrypto", "FuzzSupport", "LoyaltyCapability"],
            path: "Fuzz/FuzzVAS"
        ),
        .executableTarget(
            name: "FuzzSmartTap",
            dependencies: ["ProximaCore", "ProximaCrypto", "FuzzSupport", "LoyaltyCapability"],
            path: "Fuzz/FuzzSmartTap"
        ),
        .executableTarget(
            name: "FuzzStoreBatch",
            dependencies: ["ProximaCore", "ProximaCrypto", "StoreAndForwardCapability"],
            path: "Fuzz/FuzzStoreBatch"
        ),
        .executableTarget(name: "FuzzBERTLV", dependencies: ["ProximaCore"], path: "Fuzz/FuzzBERTLV"),
        .target(name: "FuzzSupport", dependencies: ["ProximaCore"], path: "Fuzz/FuzzSupport"),
        .executableTarget(name: "FuzzAPDU", dependencies: ["ProximaCore", "FuzzSupport"], path: "Fuzz/FuzzAPDU"),
        .executableTarget(
            name: "FuzzEMV",
            dependencies: ["ProximaCore", "FuzzSupport", "PaymentCapability", "EMVCommon", "ProximaCrypto"],
            path: "Fuzz/FuzzEMV"
        ),
        .executableTarget(name: "FuzzCBOR", dependencies: ["ProximaCore"], path: "Fuzz/FuzzCBOR"),
        .executableTarget(name: "FuzzCOSE", dependencies: ["ProximaCore", "ProximaCrypto"], path: "Fuzz/FuzzCOSE"),
        .executableTarget(
            name: "FuzzMdocEngagement",
            dependencies: ["ProximaCore", "MobileDocumentCapability"],
            path: "Fuzz/FuzzMdocEngagement"
        ),
        .executableTarget(
            name: "FuzzDeviceResponse",
            dependencies: ["ProximaCore", "ProximaCrypto", "MobileDocumentCapability"],
            path: "Fuzz/FuzzDeviceResponse"
        ),
        .executableTarget(
            name: "FuzzVICAL",
            dependencies: ["ProximaCore", "ProximaCrypto", "MobileDocumentCapability"],
            path: "Fuzz/FuzzVICAL"
        ),
        .executableTarget(
            name: "FuzzDriverFrame",
            dependencies: ["ProximaCore", "ExternalTransport", "RemoteTransport"],
            path: "Fuzz/FuzzDriverFrame"
        ),
        .executableTarget(
            name: "FuzzPN532",
            dependencies: ["ProximaCore", "ProximaCardEmulator"],
            path: "Fuzz/FuzzPN532"
        ),
        .executableTarget(name: "FuzzCCID", dependencies: ["ProximaCore", "CCIDTransport"], path: "Fuzz/FuzzCCID"),
        .executableTarget(
            name: "FuzzManifest",
            dependencies: ["ProximaCore", "ProximaKernel", "Proxima", "PaymentCapability"],
            path: "Fuzz/FuzzManifest"
        ),

        .executableTarget(
            name: "TapToPayExample",
            dependencies: ["Proxima", "ProximaProcessorSandbox"],
            path: "Examples/TapToPayExample"
        ),

        .executableTarget(
            name: "SchedulerBenchmark",
            dependencies: ["ProximaCore", "ProximaKernel"],
            path: "Benchmarks/SchedulerBenchmark",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "ExchangeBenchmark",
            dependencies: ["ProximaCore", "ProximaKernel", "Proxima", "SimulatorTransport", "ProximaCardEmulator"],
            path: "Benchmarks/ExchangeBenchmark",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "PCSCBenchmark",
            dependencies: [
                "ProximaCore", "ProximaKernel", "Proxima", "PCSCTransport", "PaymentCapability", "ProximaCardEmulator",
                "CPCSCLite", "ProximaProcessorSandbox", "EMVCommon",
            ],
            path: "Benchmarks/PCSCBenchmark",
            swiftSettings: strict
        ),

        .executableTarget(
            name: "PaymentBenchmark",
            dependencies: [
                "Proxima", "ProximaCore", "ProximaKernel", "PaymentCapability", "ProximaCardEmulator",
                "SimulatorTransport", "ProximaCrypto", "ProximaProcessorSandbox", "EMVCommon",
            ],
            path: "Benchmarks/PaymentBenchmark",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "ODABenchmark",
            dependencies: ["PaymentCapability", "ProximaCardEmulator", "ProximaCore"],
            path: "Benchmarks/ODABenchmark",
            swiftSettings: strict
        ),

        .executableTarget(
            name: "ExternalBenchmark",
            dependencies: [
                "ProximaCore", "ProximaKernel", "Proxima", "ExternalTransport", "PaymentCapability",
                "ProximaCardEmulator",
            ],
            path: "Benchmarks/ExternalBenchmark",
            swiftSettings: strict
        ),

        .executableTarget(
            name: "RemoteBenchmark",
            dependencies: [
                "ProximaCore", "RemoteTransport", "ExternalTransport", "ProximaCardEmulator", "ProximaSystem",
            ],
            path: "Benchmarks/RemoteBenchmark",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "LibNFCBenchmark",
            dependencies: ["ProximaCore", "LibNFCTransport", "ProximaCardEmulator", "CNFC"],
            path: "Benchmarks/LibNFCBenchmark",
            swiftSettings: strict
        ),

        .executableTarget(
            name: "CCIDBenchmark",
            dependencies: ["ProximaCore", "CCIDTransport", "CCIDReaderMock", "ProximaCardEmulator", "CLibUSB"],
            path: "Benchmarks/CCIDBenchmark",
            swiftSettings: strict
        ),

        .executableTarget(
            name: "MDLBenchmark",
            dependencies: ["ProximaCore", "ProximaCrypto", "MobileDocumentCapability", "ProximaTestSupport"],
            path: "Benchmarks/MDLBenchmark",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "LoyaltyBenchmark",
            dependencies: [
                "Proxima", "ProximaKernel", "ProximaCardEmulator", "ProximaCrypto", "ProximaProcessorSandbox",
                "SimulatorTransport",
            ],
            path: "Benchmarks/LoyaltyBenchmark",
            swiftSettings: strict
        ),

        .executableTarget(
            name: "StoreAndForwardBenchmark",
            dependencies: [
                "StoreAndForwardCapability", "Proxima", "ProximaKernel", "ProximaCrypto", "ProximaSystem",
                "PaymentCapability", "ProximaProcessorSandbox", "ProximaCore",
            ],
            path: "Benchmarks/StoreAndForwardBenchmark",
            swiftSettings: strict
        ),

        // Helpers shared by test targets: package files, hex, waits with deadlines, the Python peer runner, live pcscd.
        .target(
            name: "ProximaTestSupport",
            dependencies: ["ProximaCore", "CProcessSpawn"],
            path: "Tests/Support",
            swiftSettings: strict
        ),

        .testTarget(
            name: "ProximaCoreTests",
            dependencies: ["ProximaCore", "ProximaTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ProximaKernelTests",
            dependencies: ["ProximaCore", "ProximaKernel", "Proxima", "PaymentCapability", "ProximaTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ProximaCardEmulatorTests",
            dependencies: ["ProximaCore", "ProximaCardEmulator", "ProximaTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SimulatorTests",
            dependencies: [
                "ProximaCore", "ProximaKernel", "SimulatorTransport", "ProximaCardEmulator", "Proxima",
                "IdentityCapability", "PaymentCapability", "EMVCommon", "ProximaProcessorSandbox", "ProximaTestSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PaymentCapabilityTests",
            dependencies: [
                "ProximaCore", "PaymentCapability", "ProximaCardEmulator", "ProximaCrypto", "EMVCommon",
                "ProximaTestSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ProximaTests",
            dependencies: [
                "Proxima", "ProximaCore", "ProximaKernel", "ProximaCrypto", "PaymentCapability", "ProximaTestSupport",
                "ProximaProcessorSandbox", "EMVCommon", "ProximaSystem",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LoyaltyCapabilityTests",
            dependencies: [
                "ProximaCore", "ProximaKernel", "LoyaltyCapability", "PaymentCapability", "ProximaCardEmulator",
                "ProximaCrypto", "ProximaTestSupport",
            ],
            // The published VAS cryptogram and its demo key, with their source (Vectors/README.md).
            resources: [.copy("Vectors")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "IdentityCapabilityTests",
            dependencies: [
                "ProximaCore", "IdentityCapability", "PaymentCapability", "EMVCommon", "ProximaTestSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ProximaCryptoTests",
            dependencies: ["ProximaCore", "ProximaCrypto", "ProximaTestSupport"],
            // Known-answer vectors copied from their standards, with source and licence (Vectors/README.md).
            resources: [.copy("Vectors")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "MobileDocumentCapabilityTests",
            dependencies: [
                "ProximaCore", "ProximaCrypto", "MobileDocumentCapability", "ProximaCardEmulator", "ProximaTestSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PCSCTransportTests",
            dependencies: ["ProximaCore", "PCSCTransport", "ProximaCardEmulator", "ProximaTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "ProximaCore", "ProximaKernel", "Proxima", "PCSCTransport", "ProximaCardEmulator", "PaymentCapability",
                "ProximaTestSupport", "ProximaProcessorSandbox", "EMVCommon", "LoyaltyCapability", "ProximaCrypto",
            ],
            exclude: ["Holders"],
            swiftSettings: strict
        ),
        .testTarget(name: "ProximaSystemTests", dependencies: ["ProximaSystem"], swiftSettings: strict),
        .testTarget(
            name: "ExternalTransportTests",
            dependencies: [
                "ProximaCore", "ProximaKernel", "Proxima", "ExternalTransport", "ProximaCardEmulator",
                "PaymentCapability", "ProximaCrypto", "ProximaTestSupport",
            ],
            exclude: ["Drivers"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "RemoteTransportTests",
            dependencies: [
                "ProximaCore", "ProximaKernel", "Proxima", "RemoteTransport", "ExternalTransport",
                "ProximaCardEmulator", "PaymentCapability", "ProximaSystem",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LibNFCTransportTests",
            dependencies: [
                "ProximaCore", "ProximaKernel", "Proxima", "LibNFCTransport", "ProximaCardEmulator",
                "PaymentCapability",
            ],
            swiftSettings: strict
        ),
        // A CCID reader emulated under umockdev (usbdevfs ioctls answered in-process), for the libusb tests.
        .target(name: "CCIDReaderMock", dependencies: ["CUmockdev"], path: "Tests/CCIDReaderMock"),
        .testTarget(
            name: "CCIDTransportTests",
            dependencies: [
                "ProximaCore", "CCIDTransport", "CCIDReaderMock", "ProximaCardEmulator", "ProximaKernel", "Proxima",
                "PaymentCapability",
            ],
            swiftSettings: strict
        ),
        // The child process the store-and-forward crash tests kill with SIGKILL (and scripts/store-soak.sh).
        .executableTarget(
            name: "StoreCrashWriter",
            dependencies: ["StoreAndForwardCapability", "ProximaCrypto"],
            path: "Tests/StoreCrashWriter",
            swiftSettings: strict
        ),
        .testTarget(
            name: "StoreAndForwardTests",
            dependencies: [
                "StoreAndForwardCapability", "StoreCrashWriter", "Proxima", "ProximaCore", "ProximaKernel",
                "ProximaCrypto", "PaymentCapability", "ProximaProcessorSandbox", "ProximaTestSupport", "ProximaSystem",
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "CLITests", dependencies: ["proxima", "ProximaTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "SystemLibraryTests",
            dependencies: ["COpenSSL", "CPCSCLite", "CNFC", "CLibUSB", "CSQLite"],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
