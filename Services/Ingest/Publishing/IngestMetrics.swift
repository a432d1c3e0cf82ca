import Contracts
import Metrics

/// The metrics ingest reports, made by label through swift-metrics (whoever starts the
/// service bootstraps the backend; `/metrics` serves the Prometheus registry behind it).
///
/// - `pushline_ingest_requests_total{route,status}`: every answered request, by route template.
/// - `pushline_ingest_commands_published_total{type}`: commands the broker acknowledged.
/// - `pushline_ingest_publish_failures_total`: publish calls that threw (answered 503).
/// - `pushline_ingest_publish_duration_seconds`: time spent in `CommandPublisher.publish`.
struct IngestMetrics: Sendable {
    static let requestsLabel = "pushline_ingest_requests_total"
    static let publishedLabel = "pushline_ingest_commands_published_total"
    static let publishFailuresLabel = "pushline_ingest_publish_failures_total"
    static let publishDurationLabel = "pushline_ingest_publish_duration_seconds"

    private let published: [String: Counter]
    let publishFailures: Counter
    let publishDuration: Metrics.Timer

    init() {
        var published: [String: Counter] = [:]
        for type in CommandType.allCases {
            published[type.rawValue] = Counter(label: Self.publishedLabel, dimensions: [("type", type.rawValue)])
        }
        self.published = published
        self.publishFailures = Counter(label: Self.publishFailuresLabel)
        self.publishDuration = Metrics.Timer(label: Self.publishDurationLabel)
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
}
