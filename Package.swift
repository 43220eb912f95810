// swift-tools-version:6.1
// clawback: finds Apple in-app purchases refunded or revoked after the goods were granted, and claws them back.
import PackageDescription

/// Applied to every Swift target: Swift 6 language mode is the default for tools 6.x; these make the
/// concurrency story explicit and keep imports honest.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "clawback",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "clawback", targets: ["clawback"]),
        .executable(name: "store-simulator", targets: ["store-simulator"]),
        // store-simulator's name until 1.2, kept for one release.
        .executable(name: "appstore-simulator", targets: ["appstore-simulator"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.0.0"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.10.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.60.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "5.0.0"),
        // The ZIP container of the reports' .xlsx workbook (the SpreadsheetML inside is written by Reports).
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.19"),
    ],
    targets: [
        // C libraries, each behind one narrow module. Nothing outside Postgres/HTTP imports these.
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        // A value behind a pthread mutex, for state shared across threads (ThreadSanitizer sees it, where it
        // does not see Synchronization.Mutex's futex on Linux).
        .target(name: "Locking", swiftSettings: strictSettings),

        // Child processes started with posix_spawn, not Foundation's Process, whose run() can crash the
        // process that calls it (swift-corelibs-foundation#5472).
        .target(name: "Spawning", swiftSettings: strictSettings),

        // Safe Swift layers over the C libraries.
        .target(
            name: "Postgres",
            dependencies: ["CLibPQ", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings),
        .target(
            name: "HTTP",
            dependencies: ["CCurl", "Locking", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings),

        // Apple's protocol: JWT auth, Server API endpoints, errors, retries, rate limits, JWS verification,
        // receipts and verifyReceipt.
        .target(
            name: "AppStore",
            dependencies: [
                "HTTP", "Reconciliation", "Locking",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings),

        // Google Play's protocol: service-account tokens (an RS256 assertion for an OAuth access token) and the
        // Orders API, read fail closed.
        .target(
            name: "GooglePlay",
            dependencies: ["HTTP", "Locking", .product(name: "_CryptoExtras", package: "swift-crypto")],
            swiftSettings: strictSettings),

        // Stripe's protocol, for a web shop's payments: its restricted key, lists read whole, what a payment
        // states (charges, refunds, disputes) read fail closed.
        .target(name: "Stripe", dependencies: ["HTTP", "Locking"], swiftSettings: strictSettings),

        // Stripe as a store: its identity, settings, driver and gateway, registered by the executable.
        .target(
            name: "StripeDriver",
            dependencies: [
                "Job", "Stripe", "HTTP", "Reconciliation", "Storage", "Reports", "Locking", "CrashPoints",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings + [.enableUpcomingFeature("MemberImportVisibility")]),

        // The App Store as a store: its driver and gateways, its refund requests (CONSUMPTION_REQUEST answers),
        // `inspect` of its signed data and receipts, and its `config check` lines; registered by the executable.
        .target(
            name: "AppStoreDriver",
            dependencies: [
                "Job", "AppStore", "HTTP", "Reconciliation", "Storage", "Reports", "Locking", "CrashPoints",
                .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings + [.enableUpcomingFeature("MemberImportVisibility")]),

        // Google Play as a store: its driver and gateways, the void sweep, the notifications job (chargeback
        // reviews answered) and its `config check` lines; registered by the executable.
        .target(
            name: "GooglePlayDriver",
            dependencies: [
                "Job", "GooglePlay", "HTTP", "Reconciliation", "Storage", "Reports", "Locking", "CrashPoints",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings + [.enableUpcomingFeature("MemberImportVisibility")]),

        // The local stand-in for Apple (and for Google Play): its signing chain, world, HTTP server; and its executable.
        .target(
            name: "AppStoreSimulator",
            dependencies: [
                "AppStore", "GooglePlay", "Locking",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings),
        // The simulator's command line, one library for its two names.
        .target(
            name: "SimulatorCommand",
            dependencies: [
                "AppStoreSimulator", "AppStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings),
        .executableTarget(name: "store-simulator", dependencies: ["SimulatorCommand"], swiftSettings: strictSettings),
        .executableTarget(name: "appstore-simulator", dependencies: ["SimulatorCommand"], swiftSettings: strictSettings),

        // Named points where the fault suite kills the process on purpose (armed only by CLAWBACK_CRASH_AT, and
        // compiled only into debug builds: a release binary carries none).
        .target(
            name: "CrashPoints", swiftSettings: strictSettings + [.define("CLAWBACK_CRASH_POINTS", .when(configuration: .debug))]),

        // The pure core: window, verdict rules, clawback and reversal decisions, money math. No I/O.
        .target(name: "Reconciliation", dependencies: ["Locking"], swiftSettings: strictSettings),

        // The SQL of this product: migrations (embedded from Migrations/ at build time), grants, runs, ledger.
        .target(
            name: "Storage",
            dependencies: [
                "Postgres", "Reconciliation", "CrashPoints",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings,
            plugins: ["EmbedMigrations"]),

        // Finance's reports (detail and summary CSV, HTML summary), rendered from what Storage reads: no SQL here;
        // Postgres is not among its dependencies (Jobs/local/lib/check-imports.py refuses an import of it).
        .target(
            name: "Reports",
            dependencies: ["Reconciliation", "Storage", "CrashPoints", "Spawning", .product(name: "ZIPFoundation", package: "ZIPFoundation")],
            swiftSettings: strictSettings),

        // What every job shares, naming no store: the pipeline of a run (stream grants, verify concurrently,
        // decide, write batches), the store driver seam (`StoreDriver`), configuration, progress and metrics. Postgres is not among its dependencies: it reaches the database through
        // Storage's connections, sessions, locks and named operations (Jobs/local/lib/check-imports.py holds it,
        // and MemberImportVisibility keeps the members of a module it does not import, Postgres's among them,
        // out of its reach).
        .target(
            name: "Job",
            dependencies: [
                "HTTP", "Reconciliation", "Storage", "Reports", "CrashPoints", "Locking",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings + [.enableUpcomingFeature("MemberImportVisibility")]),

        // The command line: it only parses. Every command is one operation of Job (request in, outcome out).
        // Postgres, Storage and Reports are not among its dependencies: Jobs/local/lib/check-imports.py refuses an
        // import of them, and MemberImportVisibility keeps their types' members out of reach through Job.
        .executableTarget(
            name: "clawback",
            dependencies: [
                "Job", "AppStoreDriver", "GooglePlayDriver", "StripeDriver", "Reconciliation", "CrashPoints",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings + [.enableUpcomingFeature("MemberImportVisibility")]),

        // B5 of the benchmark: the database side of a run (streaming grants, writing checks and ledger entries).
        .executableTarget(
            name: "clawback-db-bench", dependencies: ["Postgres", "Storage", "Reconciliation", "Locking", "Spawning"], swiftSettings: strictSettings),

        // Fuzz targets over the parsers of untrusted input, and the libFuzzer harness (Jobs/local/fuzz.sh).
        .target(name: "FuzzTargets", dependencies: ["AppStore", "Reports"], swiftSettings: strictSettings),
        .executableTarget(name: "clawback-fuzz", dependencies: ["FuzzTargets"], swiftSettings: strictSettings),

        // Build-time tool + plugin that turn Migrations/*.sql into Swift string literals, so the shipped
        // binary carries its schema and cannot run against a different copy of the files.
        .executableTarget(name: "EmbedMigrationsTool", path: "Sources/EmbedMigrationsTool"),
        .plugin(name: "EmbedMigrations", capability: .buildTool(), dependencies: ["EmbedMigrationsTool"]),

        // Tests: shared helpers, then one target per module.
        .target(
            name: "TestSupport",
            dependencies: [
                "Postgres", "Storage", "Reconciliation", "HTTP", "AppStoreSimulator", "GooglePlay", "Spawning",
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ], path: "Tests/TestSupport",
            swiftSettings: strictSettings),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "AppStoreTests",
            dependencies: [
                "AppStore", "AppStoreSimulator", "HTTP", "TestSupport", "Locking", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "AppStoreSimulatorTests",
            dependencies: ["AppStoreSimulator", "AppStore", "TestSupport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strictSettings),
        .testTarget(
            name: "GooglePlayTests",
            dependencies: [
                "GooglePlay", "AppStoreSimulator", "HTTP", "TestSupport", .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings),
        .testTarget(name: "ReconciliationTests", dependencies: ["Reconciliation"], swiftSettings: strictSettings),
        .testTarget(name: "SpawningTests", dependencies: ["Spawning"], swiftSettings: strictSettings),
        .testTarget(
            name: "JobTests",
            dependencies: [
                "Job", "Storage", "Postgres", "AppStore", "AppStoreSimulator", "GooglePlay", "Reconciliation", "Reports", "HTTP", "TestSupport",
                "Locking", "Stripe", "StripeDriver", "AppStoreDriver", "GooglePlayDriver",
                .product(name: "Yams", package: "Yams"), .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReportsTests", dependencies: ["Reports", "Postgres", "Storage", "Reconciliation", "AppStoreSimulator", "TestSupport"],
            swiftSettings: strictSettings),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "StorageTests", dependencies: ["Storage", "Postgres", "Reconciliation", "TestSupport", "Locking"], swiftSettings: strictSettings),
        .testTarget(name: "FuzzTests", dependencies: ["FuzzTargets", "TestSupport"], swiftSettings: strictSettings),
        // Runs the built `clawback` binary end to end; depends on it only so that it is built first.
        .testTarget(
            name: "CLITests",
            dependencies: [
                "clawback", "Postgres", "Storage", "Reconciliation", "Reports", "AppStoreSimulator", "GooglePlay", "HTTP", "TestSupport",
                "Job", "AppStoreDriver", "GooglePlayDriver", "StripeDriver", .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings),
    ]
)
