import Foundation
import XCTest

/// The repository's Dockerfile and compose/docker-compose.yml, checked against each other and
/// against the code by `DeploymentValidator`; broken copies prove that each rule can fail.
/// Files are only read: nothing is built or started (there is no Docker engine to ask).
final class DeploymentTests: XCTestCase {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    var files: DeploymentFiles!
    var code: CodeFacts!

    override func setUpWithError() throws {
        files = try DeploymentFiles.read(repository: Self.repository)
        code = try CodeFacts.scan(repository: Self.repository)
    }

    func problems(compose: String? = nil, dockerfile: String? = nil, dockerignore: String? = nil) -> [DeploymentProblem] {
        var variant = files!
        if let compose { variant.compose = compose }
        if let dockerfile { variant.dockerfile = dockerfile }
        if let dockerignore { variant.dockerignore = dockerignore }
        return DeploymentValidator.problems(in: variant, code: code)
    }

    // MARK: the real files

    func testRepositoryDeploymentFilesHaveNoProblems() {
        let found = problems()
        XCTAssertEqual(found, [], "\n" + found.map(\.description).joined(separator: "\n"))
    }

    func testCodeScanFindsWhatEachServiceReadsAndServes() {
        let ingest = code.variables[.ingest] ?? [], processor = code.variables[.processor] ?? [], sender = code.variables[.sender] ?? []
        XCTAssertTrue(ingest.isSuperset(of: ["PUSHLINE_ADMIN_TOKEN", "PUSHLINE_INGEST_PORT", "PUSHLINE_KAFKA_BROKERS", "PUSHLINE_LOG_LEVEL"]), "\(ingest.sorted())")
        XCTAssertTrue(processor.isSuperset(of: ["PUSHLINE_GROUP_ID", "PUSHLINE_PROCESSOR_PORT", "PUSHLINE_STORE", "PUSHLINE_LOG_LEVEL"]), "\(processor.sorted())")
        XCTAssertFalse(ingest.contains("PUSHLINE_GROUP_ID"), "the ingest binary does not join a consumer group")
        XCTAssertFalse(processor.contains("PUSHLINE_ADMIN_TOKEN"))
        XCTAssertTrue(sender.isSuperset(of: ["PUSHLINE_SENDER_GROUP_ID", "PUSHLINE_SENDER_PORT", "PUSHLINE_SECRETS_KEY", "PUSHLINE_STORE"]), "\(sender.sorted())")
        XCTAssertFalse(sender.contains("PUSHLINE_GROUP_ID"), "the sender has a consumer group of its own")
        // Prose such as "(PUSHLINE_STORE, default …)" in help texts is not a read.
        XCTAssertEqual(CodeFacts.variableNames(in: #"help: "Port (PUSHLINE_X_PORT)." env["PUSHLINE_Y"]"#), ["PUSHLINE_Y"])
        for service in CodeFacts.Service.allCases {
            XCTAssertTrue(code.getRoutes[service]?.isSuperset(of: ["/health", "/metrics"]) == true, "\(service)")
            for variable in DeploymentValidator.requiredVariables[service] ?? [] {
                XCTAssertTrue(code.variables[service]?.contains(variable) == true, "the validator requires \(variable), which \(service) no longer reads")
            }
        }
    }

    // MARK: broken copies of compose/docker-compose.yml

    func testComposeSettingAVariableNoServiceReadsIsRejectedForExactlyThat() throws {
        let broken = try replacing(in: files.compose, service: "ingest", #"PUSHLINE_AUTH_CACHE_MS: "1000""#,
                                   with: "PUSHLINE_AUTH_CACHE_MS: \"1000\"\n      PUSHLINE_AUTH_CACHE_TTL: \"5\"")
        XCTAssertEqual(problems(compose: broken),
                       [DeploymentProblem(rule: .unknownVariable, detail: "ingest sets PUSHLINE_AUTH_CACHE_TTL, which no service reads")])
    }

    func testComposeWithoutAProcessorHealthcheckIsRejectedForExactlyThat() throws {
        let broken = try replacing(in: files.compose, service: "processor",
                                   #"test: ["CMD", "curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:8081/health"]"#, with: "disable: true")
        XCTAssertEqual(problems(compose: broken), [DeploymentProblem(rule: .missingHealthcheck, detail: "processor has no healthcheck")])
    }

    /// One broken copy per rule: each must be reported under the rule it breaks.
    func testEveryBrokenComposeVariantIsCaughtByItsRule() throws {
        typealias Variant = (service: String?, find: String, replace: String, rule: DeploymentProblem.Rule)
        let variants: [Variant] = [
            (nil, "  postgres:\n    image: postgres:15", "  database:\n    image: postgres:15", .missingService),
            ("postgres", "    healthcheck:\n", "    x-no-healthcheck:\n", .missingHealthcheck),
            ("ingest", "      postgres:\n        condition: service_healthy", "      postgres:\n        condition: service_started", .dependencyNotHealthy),
            ("processor", "    depends_on:\n      kafka:\n        condition: service_healthy\n", "    depends_on:\n", .dependencyNotHealthy),
            ("kafka", "image: apache/kafka:4.0.0", "image: bitnami/kafka:3.7", .kafkaImage),
            ("kafka", "KAFKA_PROCESS_ROLES: broker,controller", "KAFKA_PROCESS_ROLES: broker", .notKRaft),
            ("kafka", "KAFKA_NODE_ID: 1\n", "KAFKA_ZOOKEEPER_CONNECT: zookeeper:2181\n      KAFKA_NODE_ID: 1\n", .notKRaft),
            ("kafka", "CLUSTER_ID: WLi4uWTIQZugfwRVw4_ieg", "CLUSTER_ID: pushline-dev", .kafkaClusterId),
            ("kafka", "KAFKA_CONTROLLER_QUORUM_VOTERS: 1@kafka:9093", "KAFKA_CONTROLLER_QUORUM_VOTERS: 1@kafka:9094", .kafkaListeners),
            ("kafka", "HOST://127.0.0.1:29092\n", "HOST://127.0.0.1:29092,CONTROLLER://kafka:9093\n", .kafkaListeners),
            ("kafka", "KAFKA_INTER_BROKER_LISTENER_NAME: INTERNAL", "KAFKA_INTER_BROKER_LISTENER_NAME: BROKER", .kafkaListeners),
            ("kafka", ",CONTROLLER:PLAINTEXT", "", .kafkaListeners),
            ("kafka", "--bootstrap-server kafka:19092", "--bootstrap-server kafka:9093", .kafkaListeners),
            ("kafka", "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: 1", "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: 3", .kafkaReplication),
            ("kafka", "KAFKA_MIN_INSYNC_REPLICAS: 1", "KAFKA_MIN_INSYNC_REPLICAS: 2", .kafkaReplication),
            ("kafka", "KAFKA_LOG_RETENTION_MS: -1", "KAFKA_LOG_RETENTION_MS: 604800000", .commandLogRetention),
            ("processor", "PUSHLINE_MAX_BATCH:", "PUSHLINE_BATCH_SIZE:", .unknownVariable),
            ("ingest", "PUSHLINE_PRODUCE_TIMEOUT_MS:", "PUSHLINE_MAX_BATCH:", .variableNotReadByService),
            ("processor", "      PUSHLINE_GROUP_ID: pushline-processor\n", "", .missingVariable),
            (nil, "  PUSHLINE_KAFKA_BROKERS: kafka:19092\n", "", .missingVariable),
            ("processor", "PUSHLINE_GROUP_ID: pushline-processor", "PUSHLINE_GROUP_ID: pushline-processor\n      PUSHLINE_PARTITIONS: \"6\"", .sharedSettingDiffers),
            ("ingest", "PUSHLINE_ADMIN_TOKEN: ${PUSHLINE_ADMIN_TOKEN:?", "PUSHLINE_ADMIN_TOKEN: s3cret\n      X: ${PUSHLINE_ADMIN_TOKEN:?", .secretInFile),
            (nil, "PUSHLINE_KAFKA_BROKERS: kafka:19092", "PUSHLINE_KAFKA_BROKERS: 127.0.0.1:29092", .brokersNotInternalListener),
            (nil, "PUSHLINE_KAFKA_BROKERS: kafka:19092", "PUSHLINE_KAFKA_BROKERS: kafka:9092", .brokersNotInternalListener),
            (nil, "@postgres:5432/pushline", "@db:5432/pushline", .projectionStore),
            ("postgres", "POSTGRES_DB: pushline", "POSTGRES_DB: projections", .projectionStore),
            ("postgres", "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-pushline}", "POSTGRES_PASSWORD: other", .projectionStore),
            (nil, "PUSHLINE_STORE: postgres://pushline:${POSTGRES_PASSWORD:-pushline}@postgres:5432/pushline",
             "PUSHLINE_STORE: sqlite:./var/pushline.sqlite", .projectionStore),
            ("postgres", "image: postgres:15", "image: postgres:16", .postgresSetup),
            ("postgres", "      - postgres-data:/var/lib/postgresql/data\n", "      - postgres-data:/data\n", .postgresSetup),
            ("ingest", "PUSHLINE_INGEST_HOST: 0.0.0.0", "PUSHLINE_INGEST_HOST: 127.0.0.1", .loopbackBind),
            ("ingest", #"PUSHLINE_INGEST_PORT: "8080""#, #"PUSHLINE_INGEST_PORT: "9090""#, .portMismatch),
            ("processor", "      - \"8081\"\n", "      - \"9091\"\n", .portMismatch),
            ("ingest", "http://127.0.0.1:8080/health", "http://127.0.0.1:8080/ready", .healthcheckRoute),
            ("processor", "http://127.0.0.1:8081/health", "http://kafka:8081/health", .healthcheckRoute),
            ("ingest", "      - \"8080\"\n", "      - \"8080:8080\"\n", .fixedHostPort),
            ("processor", "replicas: 3", "replicas: 13", .replicas),
            ("processor", "replicas: 3", "replicas: 1", .replicas),
            ("processor", #"entrypoint: ["pushline-processor"]"#, #"entrypoint: ["pushline-ingest"]"#, .wrongBinary),
            ("processor", #"command: ["serve"]"#, #"command: ["rebuild"]"#, .wrongBinary),
            (nil, "  context: ..\n", "  context: .\n", .buildContext),
            ("ingest", #"test: ["CMD", "curl", "-fsS", "-o", "/dev/null","#, #"test: ["CMD", "wget", "-q", "-O", "/dev/null","#, .healthcheckToolMissing),
            (nil, "\n  sender:\n", "\n  delivery:\n", .missingService),
            ("sender", "      postgres:\n        condition: service_healthy", "      postgres:\n        condition: service_started", .dependencyNotHealthy),
            ("sender", "      PUSHLINE_SENDER_GROUP_ID: pushline-sender\n", "", .missingVariable),
            ("sender", "PUSHLINE_SENDER_WINDOW:", "PUSHLINE_MAX_BATCH:", .variableNotReadByService),
            ("sender", "PUSHLINE_SECRETS_KEY: ${PUSHLINE_SECRETS_KEY:?", "PUSHLINE_SECRETS_KEY: c2VjcmV0\n      X: ${PUSHLINE_SECRETS_KEY:?", .secretInFile),
            ("sender", "PUSHLINE_SENDER_HOST: 0.0.0.0", "PUSHLINE_SENDER_HOST: 127.0.0.1", .loopbackBind),
            ("sender", "http://127.0.0.1:8082/health", "http://127.0.0.1:8081/health", .portMismatch),
            ("sender", #"entrypoint: ["pushline-sender"]"#, #"entrypoint: ["pushline-processor"]"#, .wrongBinary),
        ]
        for variant in variants {
            let broken = try replacing(in: files.compose, service: variant.service, variant.find, with: variant.replace)
            let found = problems(compose: broken)
            XCTAssertTrue(found.contains { $0.rule == variant.rule },
                          "replacing \(variant.find.debugDescription) in \(variant.service ?? "the file") should break \(variant.rule): \(found)")
        }
        XCTAssertEqual(problems(compose: "services: [").map(\.rule), [.composeUnreadable])
    }

    // MARK: broken copies of the Dockerfile and .dockerignore

    func testEveryBrokenDockerfileVariantIsCaughtByItsRule() throws {
        let variants: [(find: String, replace: String, rule: DeploymentProblem.Rule)] = [
            ("-c release", "-c debug", .releaseBuild),
            (" --static-swift-stdlib", "", .releaseBuild),
            ("ARG SWIFT_IMAGE=swift:6.3-bookworm", "ARG SWIFT_IMAGE=swift:5.10-bookworm", .buildImage),
            ("ARG RUNTIME_IMAGE=debian:bookworm-slim", "ARG RUNTIME_IMAGE=swift:6.3-bookworm", .runtimeImage),
            ("COPY --from=build /out/pushline-ingest /out/pushline-processor /usr/local/bin/",
             "COPY --from=build /out/pushline-ingest /usr/local/bin/", .binaryNotCopied),
            ("COPY --from=build /out/pushline-ingest /out/pushline-processor /usr/local/bin/",
             "COPY --from=build /out/pushline-ingest /out/pushline-processor /opt/pushline/", .binaryNotCopied),
            ("COPY --from=build /out/pushline /usr/local/bin/\n", "\n", .binaryNotCopied),
            ("COPY --from=build /out/pushline-sender /usr/local/bin/\n", "\n", .binaryNotCopied),
            ("USER 10001:10001", "USER root", .runsAsRoot),
            ("USER 10001:10001\n", "\n", .runsAsRoot),
            ("ca-certificates curl tzdata", "ca-certificates tzdata", .healthcheckToolMissing),
            ("ca-certificates curl tzdata", "curl tzdata", .runtimeLibraries),
            ("COPY --from=librdkafka /usr/local/lib/librdkafka.so.1 /usr/local/lib/\n", "", .runtimeLibraries),
            ("ENV PUSHLINE_INGEST_HOST=0.0.0.0", "ENV PUSHLINE_HOST=0.0.0.0", .unknownVariable),
            ("PUSHLINE_SENDER_HOST=0.0.0.0", "PUSHLINE_SENDER_ADDRESS=0.0.0.0", .unknownVariable),
        ]
        for variant in variants {
            let broken = try replacing(in: files.dockerfile, service: nil, variant.find, with: variant.replace)
            let found = problems(dockerfile: broken)
            XCTAssertTrue(found.contains { $0.rule == variant.rule },
                          "replacing \(variant.find.debugDescription) in the Dockerfile should break \(variant.rule): \(found)")
        }
        // Where compose leaves the command to the image, the image's CMD decides the binary.
        let composeUsingImageCommand = try replacing(in: files.compose, service: "ingest", "    entrypoint: [\"pushline-ingest\"]\n", with: "")
        XCTAssertEqual(problems(compose: composeUsingImageCommand), [])
        let processorByDefault = try replacing(in: files.dockerfile, service: nil, #"CMD ["pushline-ingest"]"#, with: #"CMD ["pushline-processor"]"#)
        XCTAssertEqual(problems(compose: composeUsingImageCommand, dockerfile: processorByDefault).map(\.rule), [.wrongBinary])
        let singleStage = "FROM swift:6.3-bookworm\nRUN swift build -c release --static-swift-stdlib\nUSER 1000\n"
        XCTAssertTrue(problems(dockerfile: singleStage).map(\.rule).contains(.notMultiStage))
        XCTAssertTrue(problems(dockerignore: ".git\nvar\n").contains(DeploymentProblem(rule: .dockerignore, detail: ".dockerignore does not leave out .build")))
    }

    // MARK: the readers the validator relies on

    func testComposeInterpolationReadsValuesAsDockerComposeWould() {
        var interpolation = ComposeInterpolation(environment: ["SET": "value", "EMPTY": ""])
        XCTAssertEqual(interpolation.resolve("a ${SET} $SET $$SET ${UNSET:-x} ${EMPTY:-x} ${EMPTY-x} ${UNSET:-${SET}}"),
                       "a value value $SET x x  value")
        XCTAssertEqual(interpolation.resolve("${SET:+alt} ${UNSET:+alt}|${SET:?no}"), "alt |value")
        XCTAssertEqual(interpolation.resolve("${TOKEN:?set TOKEN}"), "<TOKEN>")
        XCTAssertEqual(interpolation.required, ["TOKEN"])
    }

    func testDockerfileModelSplitsStagesAndJoinsContinuedLines() {
        let model = DockerfileModel(text: """
            # syntax=docker/dockerfile:1
            ARG BASE=debian:bookworm-slim
            FROM swift:6.3-bookworm AS build
            RUN apt-get install -y \\
            # a comment inside the continued line
                  libssl-dev=3.0 curl; rm -rf /x
            FROM build AS test
            FROM ${BASE}
            COPY --from=build /a/one /a/two /usr/local/bin/
            USER app
            """)
        XCTAssertEqual(model.stages.map(\.name), ["build", "test", nil])
        XCTAssertEqual(model.stages[0].instructions, [.init(keyword: "RUN", arguments: "apt-get install -y libssl-dev=3.0 curl; rm -rf /x")])
        XCTAssertEqual(model.installedPackages(in: model.stages[0]), ["libssl-dev", "curl"])
        XCTAssertEqual(model.rootImage(of: model.stages[1]), "swift:6.3-bookworm")
        XCTAssertEqual(model.rootImage(of: model.stages[2]), "debian:bookworm-slim")
        XCTAssertEqual(model.copies(in: model.stages[2]).first?.sources, ["/a/one", "/a/two"])
    }

    // MARK: helpers

    struct MissingText: Error, CustomStringConvertible {
        var description: String
    }

    /// `text` with `find` replaced (every occurrence) inside one compose service's block, or
    /// anywhere when `service` is nil. Throws when `find` is not there, so a variant can never
    /// pass by no longer matching the file it breaks.
    func replacing(in text: String, service: String?, _ find: String, with replacement: String) throws -> String {
        var range = text.startIndex..<text.endIndex
        if let service {
            guard let start = text.range(of: "\n  \(service):\n") else { throw MissingText(description: "no service \(service)") }
            let end = text[start.upperBound...].firstMatch(of: #/\n(  )?[^ \n#]/#)?.range.lowerBound ?? text.endIndex
            range = start.upperBound..<end
        }
        guard text[range].contains(find) else {
            throw MissingText(description: "\(find.debugDescription) is not in \(service ?? "the file")")
        }
        return text.replacingCharacters(in: range, with: text[range].replacingOccurrences(of: find, with: replacement))
    }
}
