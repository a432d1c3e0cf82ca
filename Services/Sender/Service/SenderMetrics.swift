import Contracts
import Metrics

/// The sender's metrics (docs/METRICS.md). Every counter is made once, at start-up: a
/// registry lookup per push was measurable, and each series is there from 0.
struct SenderMetrics: Sendable {
    enum Skip: String, CaseIterable {
        case badRecord = "bad_record"
        case noCredentials = "no_credentials"
    }

    enum Answer: String, CaseIterable {
        case delivered, unregistered, failed, retry
        case credentialsRejected = "credentials_rejected"
        case noCredentials = "no_credentials"
        case badRecord = "bad_record"

        init(_ attempt: PushAttempt) {
            self = switch attempt {
            case .outcome(.delivered): .delivered
            case .outcome(.unregistered): .unregistered
            case .outcome(.failed): .failed
            case .outcome(.credentialsRejected): .credentialsRejected
            case .outcome(.retry): .retry
            case .noCredentials: .noCredentials
            case .badRecord: .badRecord
            }
        }
    }

    let partitions = Gauge(label: "pushline_sender_partitions")
    let unfinished = Gauge(label: "pushline_sender_unfinished_records")
    let sending = Gauge(label: "pushline_sender_requests_in_flight")
    let waiting = Gauge(label: "pushline_sender_waiting_records")
    let paused = Gauge(label: "pushline_sender_paused_apps")
    let connections = Gauge(label: "pushline_sender_lanes")
    private let skips: [Skip: Counter]
    private let attempts: [Platform: [Answer: Counter]]
    private let pushes: [Platform: [DeliveryOutcome: Counter]]

    init() {
        skips = Dictionary(uniqueKeysWithValues: Skip.allCases.map {
            ($0, Counter(label: "pushline_sender_records_skipped_total", dimensions: [("reason", $0.rawValue)]))
        })
        attempts = Dictionary(uniqueKeysWithValues: Platform.allCases.map { platform in
            (platform, Dictionary(uniqueKeysWithValues: Answer.allCases.map {
                ($0, Counter(label: "pushline_sender_attempts_total", dimensions: [("platform", platform.rawValue), ("answer", $0.rawValue)]))
            }))
        })
        pushes = Dictionary(uniqueKeysWithValues: Platform.allCases.map { platform in
            (platform, Dictionary(uniqueKeysWithValues: DeliveryOutcome.allCases.map {
                ($0, Counter(label: "pushline_sender_pushes_total", dimensions: [("platform", platform.rawValue), ("outcome", $0.rawValue)]))
            }))
        })
    }

    func skipped(_ reason: Skip) {
        skips[reason]?.increment()
    }

    func attempted(_ platform: Platform, _ attempt: PushAttempt) {
        attempts[platform]?[Answer(attempt)]?.increment()
    }

    func finished(_ platform: Platform, _ outcome: DeliveryOutcome) {
        pushes[platform]?[outcome]?.increment()
    }
}
