// swift-tools-version: 6.2

import PackageDescription

let package = Package(
    name: "logshipd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "logshipd", targets: ["logshipd"]),
        .executable(name: "logctl", targets: ["logctl"]),
        .executable(name: "logshipd-bench", targets: ["logshipd-bench"]),
        .executable(name: "logship-fuzz", targets: ["logship-fuzz"]),
        .library(name: "LogShip", targets: ["LogShip"]),
        // The swift-log backend for services on the same host; depends on swift-log alone.
        .library(name: "LogShipLogging", targets: ["LogShipLogging"]),
        .executable(name: "logship-logging-example", targets: ["logship-logging-example"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // The tests' HTTP client (the daemon posts with its own UploadClient).
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0", traits: ["YAML"]),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/adam-fowler/compress-nio", from: "1.5.0"),
        // The tests' OTLP message types (OTLPProto); logshipd writes and reads the wire format itself.
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
    ],
    targets: [
        .target(name: "CUnixSocket"),
        .target(name: "CSpawn"),
        .systemLibrary(name: "CFuzzerDriver"),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CMalloc"),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        // The record and how bytes (or a journal entry) become one: small and free of I/O, so that the fuzzer builds
        // it alone.
        .target(
            name: "LogShipRecord",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // What logctl needs of the library, on FoundationEssentials: the control socket's client and messages, sizes,
        // rates and durations as text, and the receiver that reads what logshipd uploads. logctl links neither
        // Foundation's OperationQueue nor ICU's data, which the daemon carries.
        .target(
            name: "LogShipClient",
            dependencies: [
                "CUnixSocket",
                "CZstd",
                "LogShipRecord",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CompressNIO", package: "compress-nio"),
            ]
        ),
        .target(
            name: "LogShip",
            dependencies: [
                "CMalloc",
                "CSystemd",
                "CUnixSocket",
                "CZstd",
                "LogShipClient",
                "LogShipRecord",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "CompressNIO", package: "compress-nio"),
            ]
        ),
        .executableTarget(
            name: "logshipd",
            dependencies: [
                "LogShip",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "logctl",
            dependencies: [
                "LogShipClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .executableTarget(
            name: "logshipd-bench",
            dependencies: [
                "LogShip",
                "LogShipTestKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // libFuzzer target over the parsers, the stream framing and the journal entry mapping: `make fuzz` builds it
        // with -sanitize=fuzzer,address; a plain build replays saved inputs.
        .executableTarget(
            name: "logship-fuzz",
            dependencies: [
                "CFuzzerDriver",
                "LogShipRecord",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .target(
            name: "LogShipLogging",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A service that logs through LogShipLogging: the README's example, and the tests' producer.
        .executableTarget(
            name: "logship-logging-example",
            dependencies: [
                "LogShipLogging",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What the tests and the benchmark run logshipd with: an in-process daemon, a loopback receiver that
        // records what arrives, the real binaries as child processes, and waiting with deadlines.
        .target(
            name: "LogShipTestKit",
            dependencies: [
                "CSpawn",
                "CUnixSocket",
                "LogShip",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // OpenTelemetry's OTLP logs messages, generated by scripts/generate-otlp-proto.sh: the tests parse the
        // protobuf bodies with them.
        .target(
            name: "OTLPProto",
            dependencies: [
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "Tests/OTLPProto"
        ),
        .testTarget(
            name: "LogShipTests",
            dependencies: [
                "LogShip",
                "LogShipClient",
                "OTLPProto",
                "LogShipLogging",
                "LogShipRecord",
                "LogShipTestKit",
                // Tests reach into the spool file to inject storage failures, as a failing disk would.
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ]
)
