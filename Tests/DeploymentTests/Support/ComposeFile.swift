import Foundation

/// The parts of a compose file the deployment rules look at, with values interpolated the
/// way `docker compose` would (see `ComposeInterpolation`).
struct ComposeFile {
    struct Service {
        var name: String
        var image: String?
        /// `build.context` and `build.dockerfile` (the short form `build: path` sets only the context).
        var buildContext: String?
        var buildDockerfile: String?
        /// Environment after interpolation; `rawEnvironment` as written in the file.
        var environment: [String: String] = [:]
        var rawEnvironment: [String: String] = [:]
        /// `["CMD", …]`, `["CMD-SHELL", "…"]`; nil when absent or disabled (`disable: true`, `NONE`).
        var healthcheck: [String]?
        /// Dependency name → condition (`service_started` for the short list form).
        var dependsOn: [String: String] = [:]
        var replicas: Int?
        var ports: [PortMapping] = []
        var expose: [String] = []
        var entrypoint: [String]?
        var command: [String]?
        /// Mount targets of `volumes`.
        var volumeTargets: [String] = []
        var hostname: String?
    }

    /// One `ports` entry: the container port and the host port or range it is published on
    /// (nil: an ephemeral host port chosen by Docker).
    struct PortMapping: Equatable {
        var container: String
        var published: String?

        /// How many host ports `published` offers (a range `a-b` offers b-a+1).
        var publishedCount: Int? {
            guard let published else { return nil }
            let bounds = published.split(separator: "-").compactMap { Int($0) }
            if bounds.count == 2 { return bounds[1] - bounds[0] + 1 }
            return bounds.count == 1 ? 1 : nil
        }
    }

    var services: [String: Service] = [:]
    /// Variables the file requires (`${NAME:?…}`) that were not set: supplied at start-up.
    var requiredFromEnvironment: Set<String> = []

    init(text: String, environment: [String: String] = [:]) throws {
        guard case .mapping(let root) = try YAMLValue.parse(text) else {
            throw YAMLValue.Unreadable(description: "the compose file is not a mapping")
        }
        var interpolation = ComposeInterpolation(environment: environment)
        for (name, value) in root["services"]?.mapping ?? [:] {
            services[name] = Self.service(named: name, value, interpolation: &interpolation)
        }
        requiredFromEnvironment = interpolation.required
    }

    private static func service(named name: String, _ value: YAMLValue, interpolation: inout ComposeInterpolation) -> Service {
        var service = Service(name: name)
        service.image = value["image"]?.string.map { interpolation.resolve($0) }
        service.hostname = value["hostname"]?.string.map { interpolation.resolve($0) }
        switch value["build"] {
        case .scalar(let context)?:
            service.buildContext = interpolation.resolve(context)
        case .mapping(let build)?:
            service.buildContext = build["context"]?.string.map { interpolation.resolve($0) }
            service.buildDockerfile = build["dockerfile"]?.string.map { interpolation.resolve($0) }
        default:
            break
        }
        service.rawEnvironment = environment(value["environment"])
        service.environment = service.rawEnvironment.mapValues { interpolation.resolve($0) }
        service.healthcheck = healthcheck(value["healthcheck"]).map { $0.map { interpolation.resolve($0) } }
        switch value["depends_on"] {
        case .sequence(let names)?:
            for dependency in names.compactMap(\.string) { service.dependsOn[dependency] = "service_started" }
        case .mapping(let dependencies)?:
            for (dependency, settings) in dependencies {
                service.dependsOn[dependency] = settings["condition"]?.string ?? "service_started"
            }
        default:
            break
        }
        if let replicas = value["deploy"]?["replicas"]?.string { service.replicas = Int(interpolation.resolve(replicas)) }
        for port in value["ports"]?.sequence ?? [] {
            if let mapping = portMapping(port, interpolation: &interpolation) { service.ports.append(mapping) }
        }
        service.expose = (value["expose"]?.sequence ?? []).compactMap(\.string).map { interpolation.resolve($0) }
        service.entrypoint = value["entrypoint"].flatMap { commandWords($0, interpolation: &interpolation) }
        service.command = value["command"].flatMap { commandWords($0, interpolation: &interpolation) }
        for volume in value["volumes"]?.sequence ?? [] {
            switch volume {
            case .scalar(let short):
                // source:target[:mode]
                let parts = short.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
                service.volumeTargets.append(parts.count >= 2 ? parts[1] : parts[0])
            case .mapping(let long):
                if let target = long["target"]?.string { service.volumeTargets.append(target) }
            default:
                break
            }
        }
        return service
    }

    /// `environment` as a mapping or as a list of `NAME=value` (a bare `NAME` takes the shell's value, unknown here).
    private static func environment(_ value: YAMLValue?) -> [String: String] {
        switch value {
        case .mapping(let values)?:
            return values.mapValues { $0.string ?? "" }
        case .sequence(let items)?:
            var result: [String: String] = [:]
            for item in items.compactMap(\.string) {
                let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                result[String(parts[0])] = parts.count == 2 ? String(parts[1]) : ""
            }
            return result
        default:
            return [:]
        }
    }

    private static func healthcheck(_ value: YAMLValue?) -> [String]? {
        guard let value else { return nil }
        if value["disable"]?.string == "true" { return nil }
        guard let test = value["test"] else { return nil }
        switch test {
        case .scalar(let shell):
            return ["CMD-SHELL", shell]
        case .sequence:
            let words = test.strings ?? []
            return words.first == "NONE" || words.isEmpty ? nil : words
        default:
            return nil
        }
    }

    /// A list is taken as it is; a string is split on spaces (compose splits it shell-like,
    /// which only differs for quoted words).
    private static func commandWords(_ value: YAMLValue, interpolation: inout ComposeInterpolation) -> [String]? {
        switch value {
        case .scalar(let line): return interpolation.resolve(line).split(separator: " ").map(String.init)
        case .sequence: return (value.strings ?? []).map { interpolation.resolve($0) }
        default: return nil
        }
    }

    private static func portMapping(_ value: YAMLValue, interpolation: inout ComposeInterpolation) -> PortMapping? {
        switch value {
        case .scalar(let short):
            // [[ip:]published:]container[/protocol]
            let withoutProtocol = interpolation.resolve(short).split(separator: "/").first.map(String.init) ?? ""
            let parts = withoutProtocol.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard let container = parts.last else { return nil }
            let published = parts.count >= 2 ? parts[parts.count - 2] : nil
            return PortMapping(container: container, published: published?.isEmpty == true ? nil : published)
        case .mapping(let long):
            guard let target = long["target"]?.string else { return nil }
            return PortMapping(container: interpolation.resolve(target), published: long["published"]?.string.map { interpolation.resolve($0) })
        default:
            return nil
        }
    }
}
