import Projections
import Prometheus
@testable import Processor
@testable import Handlers
import XCTest

/// The consumer lag gauges as Prometheus shows them.
final class ConsumerLagGaugesTests: XCTestCase {
    private let registration = PartitionKey(topic: "pushline.commands.registration", partition: 0)
    private let tracking = PartitionKey(topic: "pushline.commands.tracking", partition: 3)

    private func exposition(_ registry: PrometheusCollectorRegistry) -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    private func lagLines(_ registry: PrometheusCollectorRegistry) -> [String] {
        exposition(registry).split(separator: "\n").map(String.init).filter { $0.hasPrefix(ConsumerLagGauges.label + "{") }.sorted()
    }

    func testLagIsTheHighWatermarkMinusTheStoredNextOffsetPerOwnedPartition() {
        let registry = PrometheusCollectorRegistry()
        let lag = ConsumerLagGauges(factory: PrometheusMetricsFactory(registry: registry))
        let ends = [registration: Int64(120), tracking: 7]

        lag.report(positions: [registration: 100, tracking: 7]) { ends[$0] }

        XCTAssertEqual(lagLines(registry), [
            #"pushline_processor_consumer_lag{topic="pushline.commands.registration",partition="0"} 20.0"#,
            #"pushline_processor_consumer_lag{topic="pushline.commands.tracking",partition="3"} 0.0"#,
        ])
    }

    func testAPartitionWithoutAKnownHighWatermarkHasNoGaugeAndLagIsNeverNegative() {
        let registry = PrometheusCollectorRegistry()
        let lag = ConsumerLagGauges(factory: PrometheusMetricsFactory(registry: registry))

        lag.report(positions: [registration: 50, tracking: 9]) { $0 == self.registration ? 40 : nil }

        XCTAssertEqual(lagLines(registry), [#"pushline_processor_consumer_lag{topic="pushline.commands.registration",partition="0"} 0.0"#])
    }

    func testARevokedPartitionLosesItsGaugeAndStoppingRemovesAll() {
        let registry = PrometheusCollectorRegistry()
        let lag = ConsumerLagGauges(factory: PrometheusMetricsFactory(registry: registry))
        lag.report(positions: [registration: 1, tracking: 2]) { _ in 10 }
        XCTAssertEqual(lagLines(registry).count, 2)

        lag.report(positions: [tracking: 4]) { _ in 10 }
        XCTAssertEqual(lagLines(registry), [#"pushline_processor_consumer_lag{topic="pushline.commands.tracking",partition="3"} 6.0"#])

        lag.removeAll()
        XCTAssertEqual(lagLines(registry), [])
    }
}
