import Foundation

/// One thing wrong with the deployment files: the rule it breaks and, in words, where.
struct DeploymentProblem: Equatable, CustomStringConvertible {
    enum Rule: String, CaseIterable {
        // compose/docker-compose.yml
        case composeUnreadable, missingService, missingHealthcheck, dependencyNotHealthy
        case kafkaImage, notKRaft, kafkaClusterId, kafkaListeners, kafkaReplication, commandLogRetention
        case unknownVariable, variableNotReadByService, missingVariable, sharedSettingDiffers, secretInFile
        case brokersNotInternalListener, projectionStore, postgresSetup
        case loopbackBind, portMismatch, fixedHostPort, healthcheckRoute, replicas, wrongBinary, buildContext
        // Dockerfile, .dockerignore, and what compose expects of the image
        case notMultiStage, buildImage, releaseBuild, runtimeImage, binaryNotCopied, runsAsRoot
        case healthcheckToolMissing, runtimeLibraries, dockerignore
    }

    var rule: Rule
    var detail: String

    var description: String { "\(rule.rawValue): \(detail)" }
}

/// The deployment files as text, and where they sit (compose build contexts are relative).
struct DeploymentFiles {
    var compose: String
    var dockerfile: String
    var dockerignore: String
    /// The folder of the compose file, which its relative paths start from.
    var composeDirectory: URL
    /// The folder of the Dockerfile the services must be built from.
    var dockerfileDirectory: URL
    /// The shell environment compose would interpolate from (empty: the file's defaults).
    var environment: [String: String] = [:]

    static func read(repository: URL) throws -> DeploymentFiles {
        func text(_ path: String) throws -> String { try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8) }
        return DeploymentFiles(compose: try text("compose/docker-compose.yml"), dockerfile: try text("Dockerfile"),
                               dockerignore: try text(".dockerignore"),
                               composeDirectory: repository.appendingPathComponent("compose"), dockerfileDirectory: repository)
    }
}

/// Checks the Dockerfile and the compose deployment against each other and against the code,
/// returning every problem found (none for a good set of files).
enum DeploymentValidator {
    typealias Rule = DeploymentProblem.Rule
    typealias Service = CodeFacts.Service

    static let binaries: [Service: String] = [.ingest: "pushline-ingest", .processor: "pushline-processor", .sender: "pushline-sender"]
    /// Every executable the image must carry on its PATH: the services' and the admin CLI.
    static let shippedBinaries = binaries.values.sorted() + ["pushline"]

    /// Variables each service must be given in compose: without them it would talk to a broker
    /// or store on its own loopback, listen on loopback only, or (ingest, sender) refuse to start.
    static let requiredVariables: [Service: [String]] = [
        .ingest: ["PUSHLINE_KAFKA_BROKERS", "PUSHLINE_STORE", "PUSHLINE_ADMIN_TOKEN", "PUSHLINE_PARTITIONS",
                  "PUSHLINE_INGEST_HOST", "PUSHLINE_INGEST_PORT"],
        .processor: ["PUSHLINE_KAFKA_BROKERS", "PUSHLINE_STORE", "PUSHLINE_GROUP_ID", "PUSHLINE_PARTITIONS",
                     "PUSHLINE_PROCESSOR_HOST", "PUSHLINE_PROCESSOR_PORT"],
        .sender: ["PUSHLINE_KAFKA_BROKERS", "PUSHLINE_STORE", "PUSHLINE_SECRETS_KEY", "PUSHLINE_PARTITIONS",
                  "PUSHLINE_SENDER_GROUP_ID", "PUSHLINE_SENDER_HOST", "PUSHLINE_SENDER_PORT"],
    ]

    /// The port variable of each service: its health/metrics (and, for ingest, API) port.
    static let portVariable: [Service: String] = [.ingest: "PUSHLINE_INGEST_PORT", .processor: "PUSHLINE_PROCESSOR_PORT",
                                                  .sender: "PUSHLINE_SENDER_PORT"]
    static let hostVariable: [Service: String] = [.ingest: "PUSHLINE_INGEST_HOST", .processor: "PUSHLINE_PROCESSOR_HOST",
                                                  .sender: "PUSHLINE_SENDER_HOST"]
    /// Secrets a service must take from the environment, never from the file.
    static let secrets = ["PUSHLINE_ADMIN_TOKEN", "PUSHLINE_SECRETS_KEY"]

    /// Settings every service must agree on with the processor: one cluster, one set of topics, one store.
    static let sharedSettings = ["PUSHLINE_KAFKA_BROKERS", "PUSHLINE_TOPIC_PREFIX", "PUSHLINE_PARTITIONS",
                                 "PUSHLINE_STORE", "PUSHLINE_KAFKA_PROPERTIES"]


    static func problems(in files: DeploymentFiles, code: CodeFacts) -> [DeploymentProblem] {
        let check = Checker(code: code, dockerfile: DockerfileModel(text: files.dockerfile))
        check.dockerfile()
        check.dockerignore(files.dockerignore)
        do {
            check.compose(try ComposeFile(text: files.compose, environment: files.environment), files: files)
        } catch {
            check.fail(.composeUnreadable, "\(error)")
        }
        return check.problems
    }
}

/// Collects problems; one method per file or service. A class, so that problem details may read
/// the files while a problem is being recorded.
private final class Checker {
    typealias Rule = DeploymentProblem.Rule
    typealias Service = CodeFacts.Service

    let code: CodeFacts
    let image: DockerfileModel
    private(set) var problems: [DeploymentProblem] = []

    init(code: CodeFacts, dockerfile: DockerfileModel) {
        self.code = code
        self.image = dockerfile
    }

    func fail(_ rule: Rule, _ detail: String) {
        problems.append(DeploymentProblem(rule: rule, detail: detail))
    }

    func expect(_ condition: Bool, _ rule: Rule, _ detail: @autoclosure () -> String) {
        if !condition { fail(rule, detail()) }
    }

    // MARK: Dockerfile

    func dockerfile() {
        expect(image.stages.count >= 2, .notMultiStage, "the Dockerfile has \(image.stages.count) stage(s); build and runtime must be separate")
        guard let final = image.finalStage else { return }
        let builds = image.stages.filter { stage in stage.all("RUN").contains { $0.arguments.contains("swift build") } }
        if builds.isEmpty { fail(.releaseBuild, "no stage runs `swift build`") }
        for build in builds {
            let runs = build.all("RUN").map(\.arguments).filter { $0.contains("swift build") }
            expect(runs.contains { $0.contains("-c release") || $0.contains("--configuration release") }, .releaseBuild,
                   "stage \(build.name ?? "\(build.index)") does not build with `-c release`")
            expect(runs.contains { $0.contains("--static-swift-stdlib") }, .releaseBuild,
                   "stage \(build.name ?? "\(build.index)") does not link the Swift runtime statically (--static-swift-stdlib)")
            let root = image.rootImage(of: build)
            expect(root.contains(#/(^|/)swift:6(\.|-|$)/#), .buildImage, "stage \(build.name ?? "\(build.index)") builds on \(root), not an official Swift 6 image")
            expect(build.index != final.index, .runtimeImage, "the final stage is the build stage: the toolchain would ship")
        }
        let runtimeRoot = image.rootImage(of: final)
        expect(runtimeRoot.contains("slim") && !runtimeRoot.contains(#/(^|/)swift:/#), .runtimeImage,
               "the runtime stage starts from \(runtimeRoot), not a slim Debian image")

        let pathDirectories: Set<String> = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        for binary in DeploymentValidator.shippedBinaries {
            let copied = image.copies(in: final).contains { copy in
                guard let from = copy.from, let source = image.stage(from), source.index < final.index else { return false }
                let destination = copy.destination.hasSuffix("/") ? String(copy.destination.dropLast()) : copy.destination
                let intoPath = pathDirectories.contains(destination)
                    || (pathDirectories.contains((destination as NSString).deletingLastPathComponent)
                        && (destination as NSString).lastPathComponent == binary && copy.sources.count == 1)
                return intoPath && copy.sources.contains { ($0 as NSString).lastPathComponent == binary }
            }
            expect(copied, .binaryNotCopied, "the runtime stage does not copy \(binary) from the build into a PATH directory")
        }

        if let user = final.all("USER").last?.arguments {
            let name = user.split(separator: ":").first.map(String.init) ?? user
            expect(name != "root" && name != "0", .runsAsRoot, "the runtime stage runs as \(user)")
        } else {
            fail(.runsAsRoot, "the runtime stage sets no USER, so it runs as root")
        }

        let installed = image.installedPackages(in: final)
        expect(installed.contains("ca-certificates"), .runtimeLibraries, "the runtime stage does not install ca-certificates")
        let hasRdKafka = installed.contains("librdkafka1")
            || image.copies(in: final).contains { $0.sources.contains { $0.contains("librdkafka.so") } }
        expect(hasRdKafka, .runtimeLibraries, "the runtime stage neither copies nor installs librdkafka")

        for stage in image.stages {
            for name in image.environmentNames(in: stage) where name.hasPrefix("PUSHLINE_") {
                expect(code.allVariables.contains(name), .unknownVariable, "the Dockerfile sets \(name), which no service reads")
            }
        }
    }

    func dockerignore(_ text: String) {
        let entries = Set(text.split(separator: "\n").map {
            $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        })
        for needed in [".build", ".git", "var"] {
            expect(entries.contains(needed), .dockerignore, ".dockerignore does not leave out \(needed)")
        }
    }

    // MARK: compose

    func compose(_ compose: ComposeFile, files: DeploymentFiles) {
        for name in ["kafka", "postgres", "ingest", "processor", "sender"] where compose.services[name] == nil {
            fail(.missingService, "compose has no \(name) service")
        }
        for service in compose.services.values.sorted(by: { $0.name < $1.name }) {
            expect(service.healthcheck != nil, .missingHealthcheck, "\(service.name) has no healthcheck")
            let describes = (service.name + " " + (service.image ?? "")).lowercased()
            expect(!describes.contains("zookeeper"), .notKRaft, "\(service.name) is a ZooKeeper; KRaft needs none")
        }
        let kafka = compose.services["kafka"]
        if let kafka { self.kafka(kafka, in: compose) }
        if let postgres = compose.services["postgres"] { self.postgres(postgres) }
        for service in Service.allCases {
            guard let app = compose.services[service.rawValue] else { continue }
            application(app, as: service, kafka: kafka, postgres: compose.services["postgres"], files: files)
        }
        if let processor = compose.services["processor"] {
            for other in ["ingest", "sender"] {
                guard let app = compose.services[other] else { continue }
                for name in DeploymentValidator.sharedSettings where app.environment[name] != processor.environment[name] {
                    fail(.sharedSettingDiffers, "\(name) is \(app.environment[name] ?? "unset") for \(other) but \(processor.environment[name] ?? "unset") for processor")
                }
            }
        }
        if let processor = compose.services["processor"] {
            let replicas = processor.replicas ?? 1
            // Each applies its shards; one shard is one partition of every command topic
            // (docs/ARCHITECTURE.md#scale-out).
            let shards = processor.environment["PUSHLINE_PARTITIONS"].flatMap { Int($0) } ?? 12
            expect(replicas >= 2, .replicas, "processor runs \(replicas) replica(s); the deployment needs a second to take its shards over")
            expect(replicas <= shards, .replicas,
                   "processor runs \(replicas) replicas for \(shards) shards (PUSHLINE_PARTITIONS): the ones past \(shards) get no shard and only stand by")
        }
    }

    private func kafka(_ kafka: ComposeFile.Service, in compose: ComposeFile) {
        let env = kafka.environment
        expect(kafka.image?.hasPrefix("apache/kafka:") == true, .kafkaImage, "kafka runs \(kafka.image ?? "no image"), not apache/kafka")

        let roles = Set(list(env["KAFKA_PROCESS_ROLES"]))
        expect(roles == ["broker", "controller"], .notKRaft, "KAFKA_PROCESS_ROLES is \(env["KAFKA_PROCESS_ROLES"] ?? "unset"), not broker,controller")
        let nodeId = env["KAFKA_NODE_ID"].flatMap { Int($0) }
        expect(nodeId != nil, .notKRaft, "KAFKA_NODE_ID is not set to a number")
        expect(env["KAFKA_CONTROLLER_QUORUM_VOTERS"] != nil, .notKRaft, "KAFKA_CONTROLLER_QUORUM_VOTERS is not set")
        for key in env.keys.sorted() where key.contains("ZOOKEEPER") {
            fail(.notKRaft, "kafka sets \(key); KRaft needs no ZooKeeper")
        }

        let clusterId = env["CLUSTER_ID"] ?? ""
        expect(clusterId.count == 22 && Self.base64URL(clusterId)?.count == 16, .kafkaClusterId,
               "CLUSTER_ID \"\(clusterId)\" is not a base64 UUID (22 characters; kafka-storage.sh random-uuid makes one)")

        let listeners = Self.listeners(env["KAFKA_LISTENERS"])
        let advertised = Self.listeners(env["KAFKA_ADVERTISED_LISTENERS"])
        let controllerNames = Set(list(env["KAFKA_CONTROLLER_LISTENER_NAMES"]))
        let protocols = Dictionary(list(env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]).compactMap { entry -> (String, String)? in
            let parts = entry.split(separator: ":").map(String.init)
            return parts.count == 2 ? (parts[0], parts[1]) : nil
        }, uniquingKeysWith: { first, _ in first })
        let listenerNames = Set(listeners.map(\.name))
        expect(!controllerNames.isEmpty && controllerNames.isSubset(of: listenerNames), .kafkaListeners,
               "KAFKA_CONTROLLER_LISTENER_NAMES (\(controllerNames.sorted())) must name listeners of KAFKA_LISTENERS (\(listenerNames.sorted()))")
        for name in listenerNames.sorted() where protocols[name] == nil {
            fail(.kafkaListeners, "listener \(name) has no entry in KAFKA_LISTENER_SECURITY_PROTOCOL_MAP")
        }
        for listener in advertised {
            expect(listenerNames.contains(listener.name), .kafkaListeners, "advertised listener \(listener.name) is not in KAFKA_LISTENERS")
            expect(!controllerNames.contains(listener.name), .kafkaListeners,
                   "the controller listener \(listener.name) is advertised; a broker must not advertise it")
        }
        let interBroker = env["KAFKA_INTER_BROKER_LISTENER_NAME"] ?? ""
        expect(advertised.contains { $0.name == interBroker }, .kafkaListeners,
               "KAFKA_INTER_BROKER_LISTENER_NAME (\(interBroker)) is not an advertised listener")
        let controllerPorts = Set(listeners.filter { controllerNames.contains($0.name) }.map(\.port))
        let names = Set([kafka.name, kafka.hostname].compactMap { $0 })
        let ownVoter = list(env["KAFKA_CONTROLLER_QUORUM_VOTERS"]).first { $0.hasPrefix("\(nodeId ?? -1)@") }
        let voterAddress = ownVoter.map { Self.hostPort(String($0.drop { $0 != "@" }.dropFirst())) }
        expect(voterAddress.map { names.contains($0.host) && controllerPorts.contains($0.port) } == true, .kafkaListeners,
               "KAFKA_CONTROLLER_QUORUM_VOTERS has no entry \(nodeId ?? -1)@\(kafka.name):<controller port \(controllerPorts.sorted())>")
        if let healthcheck = kafka.healthcheck?.joined(separator: " "),
           let bootstrap = healthcheck.firstMatch(of: #/--bootstrap-server[ =]([^ ]+)/#) {
            let address = Self.hostPort(String(bootstrap.output.1))
            let brokerPorts = Set(listeners.filter { !controllerNames.contains($0.name) }.map(\.port))
            expect(brokerPorts.contains(address.port), .kafkaListeners,
                   "the kafka healthcheck asks \(bootstrap.output.1), which is no broker listener")
        }

        let brokerCount = compose.services.values.filter { Set(list($0.environment["KAFKA_PROCESS_ROLES"])).contains("broker") }.count
        // Unset, these default to 3, 3 and 2; more replicas than brokers stalls the consumer group.
        let offsetsRF = Int(env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] ?? "3") ?? 3
        let transactionRF = Int(env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] ?? "3") ?? 3
        let transactionISR = Int(env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"] ?? "2") ?? 2
        let minISR = Int(env["KAFKA_MIN_INSYNC_REPLICAS"] ?? "1") ?? 1
        expect(offsetsRF <= brokerCount, .kafkaReplication, "offsets topic replication factor \(offsetsRF) > \(brokerCount) broker(s)")
        expect(transactionRF <= brokerCount, .kafkaReplication, "transaction log replication factor \(transactionRF) > \(brokerCount) broker(s)")
        expect(transactionISR <= transactionRF, .kafkaReplication, "transaction log min ISR \(transactionISR) > its replication factor")
        expect(minISR <= brokerCount, .kafkaReplication, "min.insync.replicas \(minISR) > \(brokerCount) broker(s): acks=all produces would all fail")

        // The services create their topics without topic configs, so the broker's default
        // retention applies to the command log that rebuild replays from offset 0.
        expect(env["KAFKA_LOG_RETENTION_MS"] == "-1", .commandLogRetention,
               "KAFKA_LOG_RETENTION_MS is \(env["KAFKA_LOG_RETENTION_MS"] ?? "unset (7 days)"), not -1: the command log would be deleted")
    }

    private func postgres(_ postgres: ComposeFile.Service) {
        expect(postgres.image?.hasPrefix("postgres:15") == true, .postgresSetup, "postgres runs \(postgres.image ?? "no image"), not postgres:15")
        expect(postgres.volumeTargets.contains("/var/lib/postgresql/data"), .postgresSetup, "postgres keeps its data in no volume")
        expect(postgres.healthcheck?.joined(separator: " ").contains("pg_isready") == true, .postgresSetup,
               "the postgres healthcheck does not use pg_isready")
    }

    private func application(_ app: ComposeFile.Service, as service: Service, kafka: ComposeFile.Service?,
                                      postgres: ComposeFile.Service?, files: DeploymentFiles) {
        let name = app.name
        let env = app.environment
        for dependency in ["kafka", "postgres"] {
            expect(app.dependsOn[dependency] == "service_healthy", .dependencyNotHealthy,
                   "\(name) depends on \(dependency) with \(app.dependsOn[dependency] ?? "nothing"), not condition: service_healthy")
        }

        for variable in app.rawEnvironment.keys.sorted() where variable.hasPrefix("PUSHLINE_") {
            if !code.allVariables.contains(variable) {
                fail(.unknownVariable, "\(name) sets \(variable), which no service reads")
            } else if code.variables[service]?.contains(variable) != true {
                fail(.variableNotReadByService, "\(name) sets \(variable), which only another service reads")
            }
        }
        for variable in DeploymentValidator.requiredVariables[service] ?? [] where (env[variable] ?? "").isEmpty {
            fail(.missingVariable, "\(name) does not set \(variable)")
        }
        for secret in DeploymentValidator.secrets {
            guard let value = app.rawEnvironment[secret] else { continue }
            expect(value.contains("${"), .secretInFile, "\(name) has its \(secret) written in the file; take it from the environment")
        }
        if let hostVariable = DeploymentValidator.hostVariable[service], let host = env[hostVariable] {
            expect(!["127.0.0.1", "localhost", "::1"].contains(host), .loopbackBind,
                   "\(name) listens on \(host) (\(hostVariable)): unreachable from other containers")
        }

        // The healthcheck: a GET of a route the service serves, on the port it listens on, with a tool the image has.
        let port = DeploymentValidator.portVariable[service].flatMap { env[$0] } ?? ""
        if let test = app.healthcheck {
            let words = test.first == "CMD-SHELL" ? test.dropFirst().joined(separator: " ").split(separator: " ").map(String.init)
                                                  : Array(test.dropFirst())
            if let tool = words.first.map({ ($0 as NSString).lastPathComponent }) {
                expect(image.finalStage.map { image.installedPackages(in: $0).contains(tool) } == true, .healthcheckToolMissing,
                       "\(name)'s healthcheck runs \(tool), which the Dockerfile's runtime stage does not install")
            }
            if let url = test.joined(separator: " ").firstMatch(of: #/https?://([^/:\s"']+)(?::([0-9]+))?(/[^\s"'?]*)?/#) {
                let host = String(url.output.1), path = url.output.3.map(String.init) ?? "/"
                expect(["127.0.0.1", "localhost"].contains(host), .healthcheckRoute, "\(name)'s healthcheck asks \(host), not the container itself")
                expect(code.getRoutes[service]?.contains(path) == true, .healthcheckRoute,
                       "\(name)'s healthcheck asks \(path), which \(service.rawValue) does not serve (GET routes: \((code.getRoutes[service] ?? []).sorted()))")
                expect(url.output.2.map(String.init) == port, .portMismatch,
                       "\(name)'s healthcheck asks port \(url.output.2 ?? "80"), but it listens on \(port)")
            } else {
                fail(.healthcheckRoute, "\(name)'s healthcheck asks no HTTP route")
            }
        }
        for mapping in app.ports {
            expect(mapping.container == port, .portMismatch, "\(name) publishes container port \(mapping.container), but listens on \(port)")
            if let count = mapping.publishedCount, count < (app.replicas ?? 1) {
                fail(.fixedHostPort, "\(name) has \(app.replicas ?? 1) replicas but publishes host port(s) \(mapping.published ?? ""): they would collide")
            }
        }
        for exposed in app.expose {
            expect(exposed == port, .portMismatch, "\(name) exposes \(exposed), but listens on \(port)")
        }
        if service == .ingest {
            expect(!app.ports.isEmpty, .portMismatch, "ingest publishes no port")
        }

        // The binary: compose's entrypoint/command over the image's ENTRYPOINT/CMD.
        let final = image.finalStage
        let entrypoint = app.entrypoint ?? final.flatMap { image.lastCommand("ENTRYPOINT", in: $0) } ?? []
        let arguments = app.command ?? (app.entrypoint == nil ? final.flatMap { image.lastCommand("CMD", in: $0) } ?? [] : [])
        let command = entrypoint + arguments
        let binary = DeploymentValidator.binaries[service] ?? ""
        expect(command.first.map { ($0 as NSString).lastPathComponent } == binary, .wrongBinary,
               "\(name) runs \(command.joined(separator: " ")), not \(binary)")
        if service == .processor, command.count > 1, !command[1].hasPrefix("-") {
            expect(command[1] == "serve", .wrongBinary, "processor runs the \(command[1]) subcommand, not serve")
        }

        let context = app.buildContext.map { files.composeDirectory.appendingPathComponent($0).standardizedFileURL.path }
        let dockerfilePath = files.dockerfileDirectory.standardizedFileURL.path
        expect(context == dockerfilePath && (app.buildDockerfile ?? "Dockerfile") == "Dockerfile", .buildContext,
               "\(name) is not built from the repository's Dockerfile (context \(app.buildContext ?? "none"), dockerfile \(app.buildDockerfile ?? "Dockerfile"))")

        if let kafka { brokers(of: app, kafka: kafka) }
        if let postgres { store(of: app, postgres: postgres) }
    }

    /// Every bootstrap server is the kafka service's address on a listener advertised to containers.
    private func brokers(of app: ComposeFile.Service, kafka: ComposeFile.Service) {
        let names = Set([kafka.name, kafka.hostname].compactMap { $0 })
        let controllerNames = Set(list(kafka.environment["KAFKA_CONTROLLER_LISTENER_NAMES"]))
        let listeners = Self.listeners(kafka.environment["KAFKA_LISTENERS"])
        // Advertised to containers under the service's name, on a port a listener of that name binds.
        let reachable = Self.listeners(kafka.environment["KAFKA_ADVERTISED_LISTENERS"]).filter { advertised in
            names.contains(advertised.host) && !controllerNames.contains(advertised.name)
                && listeners.contains { $0.name == advertised.name && $0.port == advertised.port }
        }
        for broker in list(app.environment["PUSHLINE_KAFKA_BROKERS"]) {
            let address = Self.hostPort(broker)
            expect(reachable.contains { $0.host == address.host && $0.port == address.port }, .brokersNotInternalListener,
                   "\(app.name) bootstraps from \(broker), which is not kafka's internal listener (\(reachable.map { "\($0.host):\($0.port)" }))")
        }
    }

    /// PUSHLINE_STORE is the postgres service's database, with its user and password.
    private func store(of app: ComposeFile.Service, postgres: ComposeFile.Service) {
        guard let store = app.environment["PUSHLINE_STORE"] else { return }
        guard let url = URLComponents(string: store), ["postgres", "postgresql"].contains(url.scheme ?? "") else {
            fail(.projectionStore, "\(app.name)'s PUSHLINE_STORE (\(store)) is not a postgres:// URL")
            return
        }
        let env = postgres.environment
        let user = env["POSTGRES_USER"] ?? "postgres"
        let database = env["POSTGRES_DB"] ?? user
        expect(url.host == postgres.name || url.host == postgres.hostname, .projectionStore,
               "\(app.name)'s store is on host \(url.host ?? "none"), not the \(postgres.name) service")
        expect(url.port == nil || url.port == 5432, .projectionStore, "\(app.name)'s store uses port \(url.port ?? 0), not 5432")
        expect(url.user == user, .projectionStore, "\(app.name)'s store user \(url.user ?? "none") is not POSTGRES_USER (\(user))")
        expect(url.password == env["POSTGRES_PASSWORD"], .projectionStore, "\(app.name)'s store password is not POSTGRES_PASSWORD")
        expect(String(url.path.drop { $0 == "/" }) == database, .projectionStore,
               "\(app.name)'s store database \(url.path) is not POSTGRES_DB (\(database))")
    }

    // MARK: value helpers

    private func list(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// `NAME://host:port,…` as Kafka writes listeners.
    private static func listeners(_ text: String?) -> [(name: String, host: String, port: Int)] {
        (text ?? "").split(separator: ",").compactMap { entry in
            let parts = entry.trimmingCharacters(in: .whitespaces).components(separatedBy: "://")
            guard parts.count == 2 else { return nil }
            let address = hostPort(parts[1])
            return (parts[0], address.host, address.port)
        }
    }

    private static func hostPort(_ text: String) -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":") else { return (text, -1) }
        return (String(text[..<colon]), Int(text[text.index(after: colon)...]) ?? -1)
    }

    private static func base64URL(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
