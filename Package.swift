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
        .library(name: "ProximaCardEmulator", targets: ["ProximaCardEmulator"]),
        .library(name: "ProximaCrypto", targets: ["ProximaCrypto"]),
        .executable(name: "proxima", targets: ["proxima"]),
        .executable(name: "FuzzBERTLV", targets: ["FuzzBERTLV"]),
        .executable(name: "FuzzAPDU", targets: ["FuzzAPDU"]),
        .executable(name: "FuzzManifest", targets: ["FuzzManifest"]),
        .executable(name: "FuzzEMV", targets: ["FuzzEMV"]),
        .executable(name: "FuzzCBOR", targets: ["FuzzCBOR"]),
        .executable(name: "FuzzCOSE", targets: ["FuzzCOSE"]),
        .executable(name: "FuzzMdocEngagement", targets: ["FuzzMdocEngagement"]),
        .executable(name: "FuzzDeviceResponse", targets: ["FuzzDeviceResponse"]),
        .executable(name: "SchedulerBenchmark", targets: ["SchedulerBenchmark"]),
        .executable(name: "ExchangeBenchmark", targets: ["ExchangeBenchmark"]),
        .executable(name: "PCSCBenchmark", targets: ["PCSCBenchmark"]),
        .executable(name: "PaymentBenchmark", targets: ["PaymentBenchmark"]),
        .executable(name: "MDLBenchmark", targets: ["MDLBenchmark"]),
    ],
    targets: [
        // C libraries, each behind a system-library target (module.modulemap + shim.h only).
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CPCSCLite", pkgConfig: "libpcsclite", providers: [.apt(["libpcsclite-dev"])]),
        .systemLibrary(name: "CNFC", pkgConfig: "libnfc", providers: [.apt(["libnfc-dev", "libusb-dev"])]),
        .systemLibrary(name: "CLibUSB", pkgConfig: "libusb-1.0", providers: [.apt(["libusb-1.0-0-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),

        .target(name: "ProximaCore", swiftSettings: strict),
        .target(name: "ProximaKernel", dependencies: ["ProximaCore"], swiftSettings: strict),
        .target(name: "ProximaCrypto", dependencies: ["ProximaCore", "COpenSSL"], swiftSettings: strict),
        .target(name: "ProximaCardEmulator", dependencies: ["ProximaCore", "ProximaCrypto"], swiftSettings: strict),
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
        .target(
            name: "PaymentCapability",
            dependencies: ["ProximaCore"],
            path: "Plugins/Capabilities/Payment",
            swiftSettings: strict
        ),
        .target(
            name: "MobileDocumentCapability",
            dependencies: ["ProximaCore", "ProximaCrypto"],
            path: "Plugins/Capabilities/MobileDocument",
            swiftSettings: strict
        ),
        .target(
            name: "IdentityCapability",
            dependencies: ["ProximaCore", "PaymentCapability"],
            path: "Plugins/Capabilities/Identity",
            swiftSettings: strict
        ),
        .target(
            name: "Proxima",
            dependencies: [
                "ProximaCore", "ProximaKernel", "SimulatorTransport", "PCSCTransport", "ProximaCardEmulator",
                "IdentityCapability", "PaymentCapability", "ProximaCrypto",
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "proxima",
            dependencies: [
                "Proxima", "ProximaKernel", "ProximaCore", "ProximaCardEmulator", "IdentityCapability",
                "PaymentCapability",
            ],
            swiftSettings: strict
        ),

        // libFuzzer entry points: `swift build --product FuzzX --sanitize fuzzer --sanitize address`.
        .executableTarget(name: "FuzzBERTLV", dependencies: ["ProximaCore"], path: "Fuzz/FuzzBERTLV"),
        .target(name: "FuzzSupport", dependencies: ["ProximaCore"], path: "Fuzz/FuzzSupport"),
        .executableTarget(name: "FuzzAPDU", dependencies: ["ProximaCore", "FuzzSupport"], path: "Fuzz/FuzzAPDU"),
        .executableTarget(
            name: "FuzzEMV",
            dependencies: ["ProximaCore", "FuzzSupport", "PaymentCapability"],
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
            name: "FuzzManifest",
            dependencies: ["ProximaCore", "ProximaKernel", "Proxima"],
            path: "Fuzz/FuzzManifest"
        ),

        .executableTarget(name: "TapToPayExample", dependencies: ["Proxima"], path: "Examples/TapToPayExample"),

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
                "CPCSCLite",
            ],
            path: "Benchmarks/PCSCBenchmark",
            swiftSettings: strict
        ),

        .executableTarget(
            name: "PaymentBenchmark",
            dependencies: [
                "Proxima", "ProximaCore", "ProximaKernel", "PaymentCapability", "ProximaCardEmulator",
                "SimulatorTransport", "ProximaCrypto",
            ],
            path: "Benchmarks/PaymentBenchmark",
            swiftSettings: strict
        ),

        .executableTarget(
            name: "MDLBenchmark",
            dependencies: ["ProximaCore", "ProximaCrypto", "MobileDocumentCapability"],
            path: "Benchmarks/MDLBenchmark",
            swiftSettings: strict
        ),

        // Helpers shared by test targets: the Python peer runner and the live-pcscd lock.
        .target(
            name: "ProximaTestSupport",
            dependencies: ["ProximaCore"],
            path: "Tests/Support",
            swiftSettings: strict
        ),

        .testTarget(name: "ProximaCoreTests", dependencies: ["ProximaCore"], swiftSettings: strict),
        .testTarget(
            name: "ProximaKernelTests",
            dependencies: ["ProximaCore", "ProximaKernel", "Proxima"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ProximaCardEmulatorTests",
            dependencies: ["ProximaCore", "ProximaCardEmulator"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SimulatorTests",
            dependencies: [
                "ProximaCore", "ProximaKernel", "SimulatorTransport", "ProximaCardEmulator", "Proxima",
                "IdentityCapability", "PaymentCapability",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PaymentCapabilityTests",
            dependencies: ["ProximaCore", "PaymentCapability", "ProximaCardEmulator", "ProximaCrypto"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ProximaTests",
            dependencies: [
                "Proxima", "ProximaCore", "ProximaKernel", "ProximaCrypto", "PaymentCapability", "ProximaTestSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "IdentityCapabilityTests",
            dependencies: ["ProximaCore", "IdentityCapability", "PaymentCapability"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ProximaCryptoTests",
            dependencies: ["ProximaCore", "ProximaCrypto", "ProximaTestSupport"],
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
                "ProximaTestSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "CLITests", dependencies: ["proxima"], swiftSettings: strict),
        .testTarget(
            name: "SystemLibraryTests",
            dependencies: ["COpenSSL", "CPCSCLite", "CNFC", "CLibUSB", "CSQLite"],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
