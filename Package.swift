// swift-tools-version: 6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

let package = Package(
    name: "backupctl",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "backupctl", targets: ["AdminREPL"]),
        .executable(name: "backupctl-bench", targets: ["BackupctlBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        // Hummingbird's HTTP part types (NIOHTTPTypes), for the server's connection guard.
        .package(url: "https://github.com/apple/swift-nio-extras.git", exact: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
    ],
    targets: [
        // System libraries (Debian: libsecp256k1-dev, libssl-dev, libreadline-dev).
        .systemLibrary(
            name: "CSecp256k1", pkgConfig: "libsecp256k1",
            providers: [.apt(["libsecp256k1-dev"])]),
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        // Linked by name: pkgConfig "readline" makes SwiftPM warn about prohibited flags.
        .systemLibrary(name: "CReadline", providers: [.apt(["libreadline-dev"])]),

        .target(name: "BackupModel", swiftSettings: strict),
        .target(
            name: "BackupCrypto",
            dependencies: ["BackupModel", "CSecp256k1", "COpenSSL"],
            swiftSettings: strict),
        // The store protocols, records and the rules every backend shares (over a small SQL driver).
        .target(
            name: "ConsoleStore",
            dependencies: [
                "BackupModel", "BackupCrypto",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The SQLite store: GRDB, its migrations, the driver and the raw-cursor hot paths.
        .target(
            name: "SQLiteStore",
            dependencies: [
                "BackupModel", "ConsoleStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            swiftSettings: strict),
        // The PostgreSQL store: connection configuration, the client pool and its schema migrations.
        .target(
            name: "PostgresStore",
            dependencies: [
                "BackupModel", "BackupCrypto", "ConsoleStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // The pool's own error (its circuit breaker), which PostgresClient throws as it is.
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict),
        .target(
            name: "Access",
            dependencies: ["BackupModel", "BackupCrypto", "ConsoleStore"],
            swiftSettings: strict),
        .target(
            name: "Turnkey",
            dependencies: [
                "BackupModel", "BackupCrypto",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .target(
            name: "BackupService",
            dependencies: [
                "BackupModel", "BackupCrypto",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            swiftSettings: strict),
        // The loopback Hummingbird server both emulators run on.
        .target(
            name: "SandboxHTTP",
            dependencies: [
                "BackupModel",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The stand-ins both emulators and the simulator share: ES256 JWS, the sandbox OIDC
        // issuers, WebAuthn, attestation-gateway tokens, multipart forms.
        .target(name: "SandboxIdentity", dependencies: ["BackupModel", "BackupCrypto"], swiftSettings: strict),
        .target(
            name: "BackupServiceSandbox",
            dependencies: [
                "BackupModel", "BackupCrypto", "ConsoleStore", "BackupService", "SandboxHTTP", "SandboxIdentity",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .target(
            name: "TurnkeySandbox",
            dependencies: [
                "BackupModel", "BackupCrypto", "ConsoleStore", "Turnkey", "SandboxHTTP", "SandboxIdentity",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The population simulator: users living through BF-1…BF-8 against the sandboxes, and
        // the ground truth of what they left behind.
        .target(
            name: "Simulation",
            dependencies: [
                "BackupModel", "BackupCrypto", "BackupServiceSandbox", "TurnkeySandbox", "Turnkey", "SandboxIdentity",
                "Access", "ConsoleStore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict),
        .target(
            name: "Cleanup",
            dependencies: [
                "BackupModel", "BackupCrypto", "ConsoleStore", "Access", "Turnkey", "BackupService",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .target(
            name: "Inspect",
            dependencies: ["BackupModel", "BackupCrypto", "ConsoleStore", "Access", "ConsoleWire", "Turnkey"],
            swiftSettings: strict),
        .target(
            name: "Recovery",
            dependencies: ["BackupModel", "BackupCrypto", "ConsoleStore", "Access", "Turnkey", "BackupService"],
            swiftSettings: strict),
        // The API's wire format (errors, frames, progress) and the JSON Schemas read from its
        // types: light (Foundation and BackupModel only), for any client.
        .target(name: "ConsoleWire", dependencies: ["BackupModel"], swiftSettings: strict),
        // The service layer: one protocol, the in-process implementation and every operation.
        // The service layer's interface: ConsoleAPI, every operation's Codable types and how it
        // runs against an OperationContext. What a client links: no database driver, no HTTP server.
        .target(
            name: "ConsoleInterface",
            dependencies: [
                "BackupModel", "BackupCrypto", "ConsoleStore", "Access", "Inspect", "Recovery", "Turnkey", "Cleanup",
                "BackupService", "ConsoleWire",
            ],
            swiftSettings: strict),
        .target(
            name: "ConsoleService",
            dependencies: [
                "ConsoleInterface",
                "BackupModel", "BackupCrypto", "ConsoleStore", "Access", "Inspect", "Recovery", "Turnkey",
                "TurnkeySandbox", "Cleanup", "BackupService", "BackupServiceSandbox", "PostgresStore", "SQLiteStore",
                "ConsoleWire", "Simulation",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The service layer over HTTP, against `backupctl serve`.
        .target(
            name: "ConsoleClient",
            dependencies: [
                "BackupModel", "ConsoleInterface", "ConsoleWire",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict),
        // `backupctl serve`: the service layer over HTTP (Hummingbird), the only process that opens the store.
        .target(
            name: "ConsoleServer",
            dependencies: [
                "BackupModel", "ConsoleService", "ConsoleStore", "Access", "ConsoleWire",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict),
        .executableTarget(
            name: "AdminREPL",
            dependencies: [
                "BackupModel", "BackupCrypto", "ConsoleStore", "Access", "Inspect", "Recovery", "Turnkey",
                "TurnkeySandbox", "Cleanup", "CReadline", "BackupService", "BackupServiceSandbox",
                "ConsoleService", "ConsoleClient", "ConsoleServer", "SandboxHTTP", "PostgresStore", "Simulation",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict),

        .executableTarget(
            name: "BackupctlBench",
            dependencies: [
                "BackupModel", "BackupCrypto", "ConsoleStore", "Access", "Inspect", "Recovery", "Turnkey",
                "TurnkeySandbox", "Cleanup", "CSecp256k1", "COpenSSL", "BackupService", "BackupServiceSandbox",
                "ConsoleService", "ConsoleClient", "PostgresStore", "SQLiteStore", "BackupctlTestSupport", "Simulation",
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Benchmarks/BackupctlBench",
            swiftSettings: strict),

        // Shared by the tests that run the real binary as a process (not a test target itself).
        // Also the private PostgreSQL database each PostgreSQL test makes (PostgresTestDatabase),
        // and the walkers over the store's keyset pages (StorePages).
        .target(
            name: "BackupctlTestSupport",
            dependencies: [
                "SQLiteStore",
                "BackupModel", "ConsoleStore", "PostgresStore", .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tests/BackupctlTestSupport", swiftSettings: strict),

        // Run by the reaper test as a stand-in test process that is then SIGKILLed.
        .executableTarget(
            name: "ChildReaperProbe", dependencies: ["BackupctlTestSupport"], path: "Tests/ChildReaperProbe",
            swiftSettings: strict),
        .testTarget(name: "BackupctlTestSupportTests", dependencies: ["BackupctlTestSupport"]),

        .testTarget(name: "BackupModelTests", dependencies: ["BackupModel"]),
        .testTarget(name: "ConsoleWireTests", dependencies: ["ConsoleWire", "BackupModel", "BackupCrypto"]),
        .testTarget(
            name: "BackupCryptoTests", dependencies: ["BackupCrypto", "BackupModel"],
            resources: [.copy("Vectors")]),
        .testTarget(
            name: "ConsoleStoreTests",
            dependencies: [
                "SQLiteStore",
                "ConsoleStore", "BackupCrypto", "BackupModel", "BackupctlTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        .testTarget(
            name: "PostgresStoreTests",
            dependencies: [
                "SQLiteStore",
                "PostgresStore", "BackupModel", "BackupctlTestSupport", "ConsoleStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        .testTarget(
            name: "AccessTests",
            dependencies: [
                "SQLiteStore",
                "Access", "ConsoleStore", "BackupCrypto", "BackupModel", "BackupctlTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        .testTarget(
            name: "TurnkeyTests", dependencies: ["Turnkey", "BackupCrypto", "BackupModel", "BackupctlTestSupport"]),
        .testTarget(
            name: "TurnkeySandboxTests",
            dependencies: [
                "TurnkeySandbox", "Turnkey", "ConsoleStore", "BackupCrypto", "BackupModel", "BackupctlTestSupport",
                "SandboxIdentity", .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]),
        .testTarget(
            name: "BackupServiceTests",
            dependencies: [
                "BackupService", "BackupServiceSandbox", "ConsoleStore", "BackupCrypto", "BackupModel",
                "SandboxIdentity", "BackupctlTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        .testTarget(
            name: "CleanupTests",
            dependencies: [
                "SQLiteStore",
                "Cleanup", "TurnkeySandbox", "Turnkey", "Access", "ConsoleStore", "BackupCrypto", "BackupModel",
                "BackupctlTestSupport", "BackupService", "BackupServiceSandbox",
            ]),
        .testTarget(
            name: "SimulationTests",
            dependencies: [
                "Simulation", "BackupServiceSandbox", "TurnkeySandbox", "Turnkey", "SandboxIdentity", "BackupModel",
                "BackupCrypto", "BackupService", "BackupctlTestSupport", "ConsoleService", "ConsoleStore",
                "SQLiteStore",
                "Access", "Inspect", "Cleanup",
            ]),
        .testTarget(
            name: "InspectTests",
            dependencies: [
                "SQLiteStore", "Inspect", "Access", "ConsoleStore", "BackupCrypto", "BackupModel",
                "BackupctlTestSupport",
            ]),
        .testTarget(
            name: "RecoveryTests",
            dependencies: [
                "PostgresStore", "SQLiteStore",
                "Recovery", "Turnkey", "Access", "ConsoleStore", "BackupCrypto", "BackupModel", "BackupctlTestSupport",
                "BackupService", "BackupServiceSandbox", "Inspect",
            ]),
        .testTarget(
            name: "ConsoleServiceTests",
            dependencies: [
                "SQLiteStore",
                "ConsoleService", "ConsoleClient", "ConsoleStore", "Access", "Inspect", "Cleanup", "Recovery",
                "BackupModel", "BackupCrypto", "BackupctlTestSupport",
            ]),
        .testTarget(
            name: "ConsoleClientTests",
            dependencies: [
                "ConsoleClient", "BackupModel", "ConsoleService",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        .testTarget(
            name: "ConsoleServerTests",
            dependencies: [
                "SQLiteStore",
                "ConsoleServer", "ConsoleService", "ConsoleClient", "ConsoleStore", "Access", "BackupModel",
                "BackupCrypto", "PostgresStore", "ConsoleWire",
                "BackupctlTestSupport", "Inspect",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]),
        .testTarget(
            name: "AdminREPLTests",
            dependencies: [
                "SQLiteStore",
                "AdminREPL", "ConsoleService", "ConsoleStore", "BackupctlTestSupport", "PostgresStore", "ConsoleWire",
                "Inspect",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            // Read from the source tree by path (golden files), not bundled.
            exclude: ["Goldens"]),
    ],
    swiftLanguageModes: [.v6]
)
