import Contracts
import Metrics

/// The metrics ingest reports, made by label through swift-metrics (whoever starts the
/// service bootstraps the backend; `/metrics` serves the Prometheus registry behind it).
///
/// - `pushline_ingest_requests_total{route,status}`: every answered request, by route template.
/// - `pushline_ingest_commands_published_total{type}`: commands the broker acknowledged, a command
///   of an app in parts once per part it is written to.
/// - `pushline_ingest_publish_failures_total`: publish calls that threw (answered 503).
/// - `pushline_ingest_publish_duration_seconds`: time spent in `CommandPublisher.publish`.
/// - `pushline_ingest_rate_limited_total{scope}`: requests refused with 429, by the limit that
///   refused them (`app` or `source`).
/// - `pushline_ingest_forged_commands_total`: registration API commands answered 202 but not
///   written, because their API token is not a live token of their app.
/// - `pushline_ingest_store_reads_total`: projection-store reads made for requests (`readStore`),
///   so that a benchmark can show what a flood of refused requests costs the store.
/// - `pushline_ingest_legacy_token_requests_total{route}`: requests admitted on a server route
///   with a legacy API token (issued before scopes), by route template: what still has to move
///   to a server token (docs/API.md#replacing-legacy-tokens).
/// - `pushline_ingest_unverified_user_bindings_total`: device registrations written without a
///   checked user assertion (their app does not require one): bindings of a device to a user id
///   that any holder of the client token could have made (docs/API.md#verified-user-identity).
struct IngestMetrics: Sendable {
    static let requestsLabel = "pushline_ingest_requests_total"
    static let publishedLabel = "pushline_ingest_commands_published_total"
    static let publishFailuresLabel = "pushline_ingest_publish_failures_total"
    static let publishDurationLabel = "pushline_ingest_publish_duration_seconds"
    static let rateLimitedLabel = "pushline_ingest_rate_limited_total"
    static let forgedLabel = "pushline_ingest_forged_commands_total"
    static let legacyTokenRequestsLabel = "pushline_ingest_legacy_token_requests_total"
    static let unverifiedBindingsLabel = "pushline_ingest_unverified_user_bindings_total"
    static let storeReadsLabel = "pushline_ingest_store_reads_total"

    enum RateLimitScope: String, CaseIterable {
        case app, source
    }

    private let published: [String: Counter]
    let publishFailures: Counter
    let publishDuration: Metrics.Timer
    private let rateLimited: [RateLimitScope: Counter]
    let forged: Counter
    let unverifiedBindings: Counter

    init() {
        var published: [String: Counter] = [:]
        for type in CommandType.allCases {
            published[type.rawValue] = Counter(label: Self.publishedLabel, dimensions: [("type", type.rawValue)])
        }
        self.published = published
        self.publishFailures = Counter(label: Self.publishFailuresLabel)
        self.publishDuration = Metrics.Timer(label: Self.publishDurationLabel)
        var rateLimited: [RateLimitScope: Counter] = [:]
        for scope in RateLimitScope.allCases {
            rateLimited[scope] = Counter(label: Self.rateLimitedLabel, dimensions: [("scope", scope.rawValue)])
        }
        self.rateLimited = rateLimited
        self.forged = Counter(label: Self.forgedLabel)
        self.unverifiedBindings = Counter(label: Self.unverifiedBindingsLabel)
    }

    func countPublished(_ commands: [EncodedCommand]) {
        for command in commands {
            (published[command.type] ?? Counter(label: Self.publishedLabel, dimensions: [("type", command.type)])).increment()
        }
    }

    /// Counts one answered request. The route is the matched template (bounded cardinality).
    func countRequest(route: String, status: Int) {
        Counter(label: Self.requestsLabel, dimensions: [("route", route), ("status", String(status))]).increment()
    }

    /// Counts one request of a legacy token on a server route. The route is the matched
    /// template (bounded cardinality: the server routes).
    func countLegacyTokenRequest(route: String) {
        Counter(label: Self.legacyTokenRequestsLabel, dimensions: [("route", route)]).increment()
    }

    /// Counts the device registrations among `commands` written without a checked user assertion.
    func countUnverifiedBindings(_ commands: [some UserBinding]) {
        let unverified = commands.count(where: { $0.isRegistration && $0.identityVerified != true })
        if unverified > 0 { unverifiedBindings.increment(by: unverified) }
    }

    /// Counts one projection-store read made for a request.
    static func countStoreRead() {
        Counter(label: storeReadsLabel).increment()
    }

    /// Counts one request refused by a rate limit.
    func countRateLimited(scope: RateLimitScope) {
        rateLimited[scope]?.increment()
    }
}
