import Contracts
import Settings

/// Everything the ingest service needs to know about its deployment, as one value.
///
/// Built by `IngestMain` from the environment and its flags (`fromEnvironment(_:overrides:)`) or by
/// tests directly; the defaults are the one-machine stack (docs/CONFIGURATION.md).
public struct IngestConfiguration: Sendable {
    /// The settings every executable shares: broker, topics, store, logging.
    public var shared = SharedSettings()
    /// The address the HTTP server binds to.
    public var host: String
    public var port: Int
    /// The bearer token that guards `/admin/v1/…` (`PUSHLINE_ADMIN_TOKEN`, at least
    /// `minAdminTokenLength` characters when read from the environment). An empty token opens
    /// nothing: every admin request is refused.
    public var adminToken: String
    /// The shortest `PUSHLINE_ADMIN_TOKEN` accepted: 32 characters, as many as 24 random bytes
    /// take in base64 (`openssl rand -hex 32` and `make run`'s token are longer).
    public static let minAdminTokenLength = 32
    /// Requests with a larger body are refused with 413 before anything is decoded.
    public var maxBodyBytes: Int
    /// The `Retry-After` of a 503 answered when the broker did not acknowledge.
    public var retryAfterSeconds: Int
    /// The broker must acknowledge a command within this bound, else the answer is 503.
    public var produceTimeoutMs = 5_000
    /// Producer linger: how long librdkafka waits to fill a batch.
    public var lingerMs = 2
    /// How long what the store said of an app's API tokens is reused (`PUSHLINE_AUTH_CACHE_MS`,
    /// 0 = read the store on every request): its live token hashes, an app it does not have, a
    /// refused token. Changes of access are answered this long after they are applied; see
    /// `AppAuthCache`. At most `maxAuthCacheMs`,
    /// so that a revocation holds on every instance within that bound of being applied.
    public var authCacheMs = 1_000
    /// The longest `PUSHLINE_AUTH_CACHE_MS`: 10 s.
    public static let maxAuthCacheMs = 10_000
    /// The scopes a legacy token (issued before scopes) has on this instance
    /// (`PUSHLINE_LEGACY_TOKEN_SCOPE`): nil, every scope (`all`, the default, so that older
    /// deployments keep working); `[.client]` (`client`) once the app's servers use server tokens,
    /// so that a legacy token shipped inside an app can no longer send.
    public var legacyTokenScopes: [ApiTokenScope]?
    /// How long an admin change waits to be applied by a processor before it is answered
    /// (`PUSHLINE_ADMIN_APPLY_TIMEOUT_MS`): a 2xx from the admin API means every route of every
    /// ingest instance behaves as if the change were applied (`AdminChangeApplied`). Past it the
    /// answer is 503; 0 answers once the broker has the change, without waiting (an ingest
    /// tested without a processor).
    public var adminApplyTimeoutMs = 10_000
    /// The token bucket of each app on the Bearer routes (`PUSHLINE_RATE_LIMIT_APP_PER_SECOND`,
    /// `…_BURST`): on by default, so that one app's flood cannot take the capacity every other
    /// app shares. Per ingest process: N replicas admit up to N times as much.
    public var appRateLimit = RateLimit(perSecond: 1_000, burst: 2_000)
    /// The token bucket of each client address on every route but `/health` and `/metrics`
    /// (`PUSHLINE_RATE_LIMIT_SOURCE_PER_SECOND`, `…_BURST`): on by default, so that floods of
    /// forged tokens and made-up ids are refused before they cost anything. Behind a load
    /// balancer or proxy, list it in `trustedProxies`, else its address is every client's.
    public var sourceRateLimit = RateLimit(perSecond: 100, burst: 200)
    /// The proxies whose `X-Forwarded-For` names the client for the per-source limit
    /// (`PUSHLINE_TRUSTED_PROXIES`, CIDR ranges; none by default: the header is not read).
    public var trustedProxies = TrustedProxies.none
    /// How long a client connection may send nothing, between requests or within a request's
    /// head, before the server closes it (`PUSHLINE_HTTP_IDLE_TIMEOUT_MS`).
    public var idleTimeoutMs = 60_000
    /// How long a request may take to arrive in full once its head has (`PUSHLINE_HTTP_READ_TIMEOUT_MS`).
    public var requestReadTimeoutMs = 30_000
    /// Seals push credentials (`PUSHLINE_SECRETS_KEY`); nil: the credential routes answer 503.
    public var secrets: SecretsKeyring?

    public init(host: String = "127.0.0.1", port: Int = 8080, adminToken: String,
                maxBodyBytes: Int = 1_048_576, retryAfterSeconds: Int = 1) {
        self.host = host
        self.port = port
        self.adminToken = adminToken
        self.maxBodyBytes = maxBodyBytes
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// The environment variables of the ingest-only settings (`SharedSettings.Variable` has the rest).
    public enum Variable {
        public static let host = "PUSHLINE_INGEST_HOST"
        public static let port = "PUSHLINE_INGEST_PORT"
        public static let adminToken = "PUSHLINE_ADMIN_TOKEN"
        public static let authCacheMs = "PUSHLINE_AUTH_CACHE_MS"
        public static let legacyTokenScope = "PUSHLINE_LEGACY_TOKEN_SCOPE"
        public static let appRatePerSecond = "PUSHLINE_RATE_LIMIT_APP_PER_SECOND"
        public static let appRateBurst = "PUSHLINE_RATE_LIMIT_APP_BURST"
        public static let sourceRatePerSecond = "PUSHLINE_RATE_LIMIT_SOURCE_PER_SECOND"
        public static let sourceRateBurst = "PUSHLINE_RATE_LIMIT_SOURCE_BURST"
        public static let trustedProxies = "PUSHLINE_TRUSTED_PROXIES"
        public static let idleTimeoutMs = "PUSHLINE_HTTP_IDLE_TIMEOUT_MS"
        public static let requestReadTimeoutMs = "PUSHLINE_HTTP_READ_TIMEOUT_MS"
    }

    /// Reads the shared settings and `PUSHLINE_INGEST_HOST` (default `127.0.0.1`),
    /// `PUSHLINE_INGEST_PORT` (default `8080`), `PUSHLINE_ADMIN_TOKEN` (required, at least 32
    /// characters), `PUSHLINE_AUTH_CACHE_MS` (default 1000, 0…10000), `PUSHLINE_LEGACY_TOKEN_SCOPE`
    /// (`all` or `client`), the rate limits
    /// `PUSHLINE_RATE_LIMIT_{APP,SOURCE}_{PER_SECOND,BURST}` (requests per second 0…1000000, 0 = off;
    /// burst 1…1000000), `PUSHLINE_TRUSTED_PROXIES` (CIDR ranges, default none) and the producer
    /// and HTTP settings of docs/CONFIGURATION.md.
    /// `overrides` are the command-line flags, by the variable each replaces.
    /// Throws `IngestError.invalidConfiguration` naming the variable at fault.
    public static func fromEnvironment(_ env: [String: String], overrides: [String: String?] = [:]) throws -> IngestConfiguration {
        let reader = SettingsReader(environment: env, overrides: overrides)
        do {
            let adminToken = try reader.required(Variable.adminToken, "set it to the bearer token that guards the admin API")
            guard adminToken.count >= minAdminTokenLength else {
                throw ConfigurationError("\(Variable.adminToken) must be at least \(minAdminTokenLength) characters "
                    + "(it guards every app; make one with: openssl rand -hex 32)")
            }
            var configuration = IngestConfiguration(adminToken: adminToken)
            configuration.shared = try SharedSettings(reader)
            configuration.host = reader.string(Variable.host, default: configuration.host)
            configuration.port = try reader.int(Variable.port, default: configuration.port, range: 0...65_535)
            configuration.produceTimeoutMs = try reader.int("PUSHLINE_PRODUCE_TIMEOUT_MS", default: configuration.produceTimeoutMs,
                                                            range: 100...600_000)
            configuration.lingerMs = try reader.int("PUSHLINE_KAFKA_LINGER_MS", default: configuration.lingerMs, range: 0...10_000)
            configuration.authCacheMs = try reader.int(Variable.authCacheMs, default: configuration.authCacheMs, range: 0...maxAuthCacheMs)
            configuration.legacyTokenScopes = try reader.legacyTokenScopes(Variable.legacyTokenScope)
            configuration.adminApplyTimeoutMs = try reader.int("PUSHLINE_ADMIN_APPLY_TIMEOUT_MS", default: configuration.adminApplyTimeoutMs,
                                                               range: 0...600_000)
            configuration.appRateLimit = try reader.rateLimit(perSecond: Variable.appRatePerSecond, burst: Variable.appRateBurst,
                                                              default: configuration.appRateLimit)
            configuration.sourceRateLimit = try reader.rateLimit(perSecond: Variable.sourceRatePerSecond,
                                                                 burst: Variable.sourceRateBurst, default: configuration.sourceRateLimit)
            configuration.trustedProxies = try reader.trustedProxies(Variable.trustedProxies)
            configuration.idleTimeoutMs = try reader.int(Variable.idleTimeoutMs, default: configuration.idleTimeoutMs, range: 100...3_600_000)
            configuration.requestReadTimeoutMs = try reader.int(Variable.requestReadTimeoutMs, default: configuration.requestReadTimeoutMs,
                                                                range: 100...3_600_000)
            configuration.secrets = try reader.secretsKeyring()
            return configuration
        } catch let error as ConfigurationError {
            throw IngestError.invalidConfiguration(error.description)
        }
    }
}

private extension SettingsReader {
    func legacyTokenScopes(_ name: String) throws -> [ApiTokenScope]? {
        switch string(name, default: "all") {
        case "all": return nil
        case "client": return [.client]
        case let other: throw ConfigurationError("\(name) must be all or client, not '\(other)'")
        }
    }

    func trustedProxies(_ name: String) throws -> TrustedProxies {
        guard let list = raw(name), !list.isEmpty else { return .none }
        do {
            return try TrustedProxies(parsing: list)
        } catch {
            throw ConfigurationError("\(name): \(error)")
        }
    }

    func rateLimit(perSecond: String, burst: String, default limit: RateLimit) throws -> RateLimit {
        RateLimit(perSecond: try int(perSecond, default: limit.perSecond, range: 0...1_000_000),
                  burst: try int(burst, default: limit.burst, range: 1...1_000_000))
    }
}
