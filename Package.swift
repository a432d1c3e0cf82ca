// swift-tools-version:6.1
import PackageDescription

// The products most targets depend on, named once.
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")
let metrics: Target.Dependency = .product(name: "Metrics", package: "swift-metrics")
let prometheus: Target.Dependency = .product(name: "Prometheus", package: "swift-prometheus")
let serviceLifecycle: Target.Dependency = .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")
let hummingbird: Target.Dependency = .product(name: "Hummingbird", package: "hummingbird")
let asyncHTTPClient: Target.Dependency = .product(name: "AsyncHTTPClient", package: "async-http-client")
let postgresNIO: Target.Dependency = .product(name: "PostgresNIO", package: "postgres-nio")
let nioCore: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
let nioPosix: Target.Dependency = .product(name: "NIOPosix", package: "swift-nio")
let yams: Target.Dependency = .product(name: "Yams", package: "Yams")

let package = Package(
    name: "Pushline",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "pushline-ingest", targets: ["IngestMain"]),
        .executable(name: "pushline-processor", targets: ["ProcessorMain"]),
        // Pushes the outbound records to APNs and FCM and reports each outcome.
        .executable(name: "pushline-sender", targets: ["SenderMain"]),
        // The operators' command line: apps and tokens (admin API), offsets and lag, rebuild.
        .executable(name: "pushline", targets: ["PushlineCLI"]),
        // The mixed command stream of the benchmarks and scale-out tests, written straight to Kafka.
        .executable(name: "pushline-loadgen", targets: ["LoadGen"]),
        // The tests' mock APNs and FCM servers as a process, for local runs and scripts/bench-sender.
        .executable(name: "pushline-mocks", targets: ["PushMocksMain"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.20.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.21.0"),
        // 4.x: jwt-kit 5 needs it.
        .package(url: "https://github.com/apple/swift-crypto", from: "4.1.0"),
        // The sender's provider tokens: ES256 for APNs, RS256 assertions for FCM's OAuth.
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        // Test-only: the mock APNs and FCM servers serve HTTP/2 over TLS with a CA made for the run.
        .package(url: "https://github.com/apple/swift-certificates", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        // TLS: the sender's extra CAs, the mock servers' certificates.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.27.0"),
        // The sender's push transport: HTTP/2 frames on one connection per provider host.
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.30.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.4.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.0.0"),
        // Test-only: DeploymentTests reads compose/docker-compose.yml, IngestTests the OpenAPI document.
        .package(url: "https://github.com/jpsim/Yams", from: "5.0.1"),
    ],
    targets: [
        // librdkafka from the system (>= 2.8 for Tansu; scripts/setup installs it).
        .systemLibrary(name: "CRdKafka", path: "Shared/CRdKafka", pkgConfig: "rdkafka"),
        .target(
            name: "Kafka",
            dependencies: ["CRdKafka", logging, serviceLifecycle],
            path: "Shared/Kafka"
        ),
        // Pushline's JSON as bytes: the coder setup, RFC 3339 dates, lower-case UUIDs, and the
        // hand-written writer and reader of the hottest shapes. No shape of its own.
        .target(name: "WireCodec", path: "Shared/WireCodec"),
        // The wire shapes: commands, HTTP bodies, topics, record headers, the outbound record; the
        // hot ones with their hand-written reader and writer beside them.
        .target(
            name: "Contracts",
            dependencies: ["WireCodec", .product(name: "Crypto", package: "swift-crypto")],
            path: "Shared/Contracts"
        ),
        // What the processor writes for devices and apps: push payloads, outbound records rendered
        // per device, message ids, app callback bodies.
        .target(
            name: "OutboundRendering",
            dependencies: [
                "Contracts", "WireCodec",
                // Message ids: a per-delivery seed from SHA-256.
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Shared/OutboundRendering"
        ),
        // The settings every executable reads, through one reader (docs/CONFIGURATION.md).
        .target(
            name: "Settings",
            dependencies: [
                "Contracts", "Kafka",
                .product(name: "Configuration", package: "swift-configuration"),
                logging,
            ],
            path: "Shared/Settings"
        ),
        // The /health and /metrics routes every service serves.
        .target(
            name: "Operations",
            dependencies: ["Contracts", "WireCodec", hummingbird, prometheus],
            path: "Shared/Operations"
        ),
        // The projection model: rows, keys, mutations, state queries, the write plan, the dump
        // format and the stores' interfaces. Pure values: it links no database driver.
        .target(
            name: "Projections",
            dependencies: ["Contracts", "WireCodec"],
            path: "Shared/Projections/Model"
        ),
        // The changelog's byte format and the restore's external merge sort.
        .target(
            name: "ProjectionChangelog",
            dependencies: ["Projections", "Contracts", "WireCodec"],
            path: "Shared/Projections/Changelog"
        ),
        // The SQLite store: connections, transactions, its schema and its own reads.
        .target(
            name: "SQLiteProjections",
            dependencies: [
                "Projections", "ProjectionChangelog", "Contracts", "WireCodec",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                logging,
            ],
            path: "Shared/Projections/SQLite"
        ),
        // The PostgreSQL store: connections, transactions, its schema and its own reads.
        .target(
            name: "PostgresProjections",
            dependencies: [
                "Projections", "ProjectionChangelog", "Contracts", "WireCodec",
                // A restore computes the SHA-256 keys of device tokens itself (PostgresCopyText).
                .product(name: "Crypto", package: "swift-crypto"),
                postgresNIO,
                logging,
            ],
            path: "Shared/Projections/Postgres"
        ),
        // Opens the store a location names (a SQLite path or a postgres:// URL), as a Service.
        .target(
            name: "ProjectionStores",
            dependencies: ["Projections", "SQLiteProjections", "PostgresProjections", "Settings", logging, serviceLifecycle],
            path: "Shared/Projections/Stores"
        ),
        .target(
            name: "Ingest",
            dependencies: [
                "Contracts", "Kafka", "Operations", "Projections", "Settings", "WireCodec",
                // A send's payloads are rendered once to check their size (PushPayload, MessageId).
                "OutboundRendering",
                // Push credentials: P-256 (Crypto) and RSA (_CryptoExtras) keys are checked before they are sealed.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                hummingbird,
                logging,
                metrics,
                prometheus,
            ],
            path: "Services/Ingest",
            // Served at GET /openapi.yaml; compiled into the binary, so there is no bundle to ship.
            resources: [.embedInCode("Ops/openapi.yaml")]
        ),
        // The command handlers: what each command decides, from the state it loaded, as mutations
        // and outputs. Pure: the projection model and the wire shapes, no driver, no broker.
        .target(
            name: "Handlers",
            dependencies: ["Contracts", "OutboundRendering", "Projections", "WireCodec"],
            path: "Services/Processor/Handlers"
        ),
        // The processor's core: consumer loop, rebuild, dead letters, its configuration and
        // options — everything the `pushline` CLI needs too, without an HTTP stack.
        .target(
            name: "Processor",
            dependencies: [
                "Contracts", "Handlers", "Kafka", "OutboundRendering", "Projections", "ProjectionChangelog", "ProjectionStores", "Settings",
                "WireCodec",
                logging,
                metrics,
                serviceLifecycle,
                // The commands `pushline-processor` and `pushline` share (ProcessorOptions, RebuildCommand).
                argumentParser,
            ],
            path: "Services/Processor",
            exclude: ["Handlers"]
        ),
        // The long-running processor service: the core plus the webhook dispatcher and the
        // /health and /metrics server.
        .target(
            name: "ProcessorServer",
            dependencies: [
                "Contracts", "Kafka", "Operations", "Processor", "Projections", "ProjectionStores", "WireCodec",
                hummingbird,
                asyncHTTPClient,
                logging,
                metrics,
                prometheus,
                serviceLifecycle,
            ],
            path: "Services/ProcessorServer"
        ),
        // The sender's core: provider tokens, APNs and FCM requests, what their answers mean.
        .target(
            name: "Sender",
            dependencies: [
                "Contracts", "Kafka", "Settings", "WireCodec",
                metrics,
                serviceLifecycle,
                .product(name: "JWTKit", package: "jwt-kit"),
                asyncHTTPClient,
                nioCore,
                // Extra CAs to trust (PUSHLINE_SENDER_CA_FILE).
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // HTTP2Connection: the pushes' own HTTP/2 client, frames without a child channel per stream.
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                // ALPN: the connection checks that TLS agreed on h2.
                .product(name: "NIOTLS", package: "swift-nio"),
                nioPosix,
                logging,
            ],
            path: "Services/Sender"
        ),
        // The long-running ingest service: the HTTP application over the producer and the store it opens.
        .target(
            name: "IngestServer",
            dependencies: ["Ingest", "Kafka", "Projections", "ProjectionStores", "Settings", logging, prometheus, serviceLifecycle],
            path: "Services/IngestServer"
        ),
        .executableTarget(
            name: "IngestMain",
            // Every module it imports, named: the build recompiles it when one of them changes.
            dependencies: ["Ingest", "IngestServer", "Settings", logging, metrics, prometheus, argumentParser, nioCore, nioPosix],
            path: "Services/IngestMain"
        ),
        .executableTarget(
            name: "ProcessorMain",
            dependencies: ["Processor", "ProcessorServer", logging, metrics, prometheus, argumentParser],
            path: "Services/ProcessorMain"
        ),
        // The long-running sender service: the core plus the credentials read from the store, the
        // producer of outcomes and the /health and /metrics server.
        .target(
            name: "SenderServer",
            dependencies: ["Sender", "Kafka", "Operations", "Projections", "ProjectionStores", "Settings", hummingbird, logging, prometheus,
                           serviceLifecycle],
            path: "Services/SenderServer"
        ),
        .executableTarget(
            name: "SenderMain",
            dependencies: ["Sender", "SenderServer", "Settings", logging, metrics, prometheus, argumentParser],
            path: "Services/SenderMain"
        ),
        .executableTarget(
            name: "PushlineCLI",
            dependencies: ["Processor", "Contracts", "Projections", "Settings", "WireCodec",
                           argumentParser,
                           asyncHTTPClient],
            path: "Services/PushlineCLI"
        ),
        .target(
            name: "TestSupport",
            dependencies: ["Kafka", "Contracts", "OutboundRendering", "Settings", "WireCodec", asyncHTTPClient,
                           hummingbird,
                           postgresNIO,
                           logging,
                           // Test push credentials (TestPushKeys).
                           .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "_CryptoExtras", package: "swift-crypto"),
                           // The mock APNs and FCM servers (PushMocks): HTTP/2 over TLS, a CA made for the run.
                           .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                           .product(name: "HummingbirdTLS", package: "hummingbird"),
                           .product(name: "NIOSSL", package: "swift-nio-ssl"),
                           .product(name: "X509", package: "swift-certificates"),
                           .product(name: "SwiftASN1", package: "swift-asn1")],
            path: "Tests/TestSupport"
        ),
        // `outbound` (scripts/bench-sender) seals the mocks' credentials into a store: Projections, Settings, the keys' types.
        .executableTarget(name: "LoadGen",
                          dependencies: ["TestSupport", "Contracts", "Kafka", "OutboundRendering", "Projections", "ProjectionStores", "Settings",
                                         "WireCodec", logging,
                                         .product(name: "Crypto", package: "swift-crypto"),
                                         .product(name: "_CryptoExtras", package: "swift-crypto")],
                          path: "Tests/LoadGen"),
        .executableTarget(name: "PushMocksMain",
                          dependencies: ["TestSupport", "Contracts", argumentParser, serviceLifecycle, logging,
                                         .product(name: "Crypto", package: "swift-crypto")],
                          path: "Tests/PushMocksMain"),
        .testTarget(name: "KafkaTests", dependencies: ["Kafka", "Contracts", "TestSupport"]),
        .testTarget(name: "SenderTests", dependencies: ["Sender", "Contracts", "Kafka", "TestSupport", "WireCodec",
                                                      // The requests are built from records the processor's rendering writes.
                                                      "OutboundRendering",
                                                      .product(name: "Crypto", package: "swift-crypto"),
                                                      .product(name: "_CryptoExtras", package: "swift-crypto"),
                                                      // ScriptedHTTP2Server: GOAWAY, RST_STREAM and cut connections on cue.
                                                      nioCore, nioPosix,
                                                      .product(name: "NIOSSL", package: "swift-nio-ssl"),
                                                      .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                                                      .product(name: "NIOHPACK", package: "swift-nio-http2")]),
        .testTarget(name: "WireCodecTests", dependencies: ["WireCodec"]),
        .testTarget(name: "ContractsTests", dependencies: ["Contracts", "WireCodec", .product(name: "Crypto", package: "swift-crypto")]),
        // The sender's reading of outbound records (Contracts) is checked against the records rendered here.
        .testTarget(name: "OutboundRenderingTests", dependencies: ["OutboundRendering", "Contracts", "WireCodec"]),
        // Ingest and the processor read the same shared settings.
        .testTarget(name: "SettingsTests", dependencies: ["Settings", "Ingest", "Handlers", "Processor", "Contracts",
                                                        logging]),
        // The admin CLI's pure parts (arguments, messages, tables); AdminCLITests runs the binary.
        .testTarget(name: "PushlineCLITests", dependencies: ["PushlineCLI", "Contracts", "WireCodec"]),
        .testTarget(name: "ProjectionsTests", dependencies: ["Projections", "ProjectionChangelog", "SQLiteProjections", "PostgresProjections",
                                                          "ProjectionStores", "Contracts", "TestSupport", "WireCodec"]),
        .testTarget(
            name: "IngestTests",
            dependencies: ["Ingest", "Contracts", "Kafka", "OutboundRendering", "Projections", "TestSupport", "WireCodec",
                           .product(name: "HummingbirdTesting", package: "hummingbird"),
                           logging,
                           metrics,
                           prometheus,
                           yams]
        ),
        .testTarget(name: "ProcessorTests", dependencies: ["Handlers", "Processor", "ProcessorServer", "Contracts", "OutboundRendering", "Projections",
                                                         "ProjectionChangelog", "ProjectionStores", "Settings", "Kafka", "TestSupport", "WireCodec",
                                                         prometheus]),
        // Checks Dockerfile, compose/ and the docs' tables against the code (variables, defaults,
        // routes, metrics, scripts); it reads files, and the executables' configurations as they
        // read an environment. Nothing is started.
        .testTarget(name: "DeploymentTests", dependencies: [yams, logging, "Settings", "Ingest", "Handlers", "Processor", "Sender", "PushlineCLI"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["Contracts", "Kafka", "OutboundRendering", "Projections", "ProjectionStores", "SQLiteProjections", "PostgresProjections",
                           "Sender", "TestSupport", "WireCodec",
                           asyncHTTPClient,
                           hummingbird]
        ),
    ],
    swiftLanguageModes: [.v6]
)
