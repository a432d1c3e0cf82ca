import CoreMetrics
import Kafka
import Projections
import Synchronization

/// `pushline_processor_consumer_lag{topic, partition}`: for each partition this processor owns,
/// the records in the log it has not applied yet — the high watermark of the partition's last
/// fetch response minus the next offset stored for it.
///
/// The high watermark comes from fetch responses, not from a ListOffsets request (Tansu's answer
/// to ListOffsets(latest) cannot be trusted). A partition whose high watermark
/// is not known yet has no gauge. A partition that moved to another processor loses its gauge
/// here, so summing the metric over all processors counts each partition once.
final class ConsumerLagGauges: Sendable {
    static let label = "pushline_processor_consumer_lag"

    private let factory: any MetricsFactory
    private let gauges = Mutex<[PartitionKey: Gauge]>([:])

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    /// Sets the gauge of every partition in `positions` (owned partition → stored next offset)
    /// and removes the gauges of partitions no longer owned.
    func report(positions: [PartitionKey: Int64], highWatermark: (PartitionKey) -> Int64?) {
        gauges.withLock { gauges in
            for (partition, gauge) in gauges where positions[partition] == nil {
                gauge.destroy()
                gauges[partition] = nil
            }
            for (partition, next) in positions {
                guard let end = highWatermark(partition) else { continue }
                let gauge = gauges[partition] ?? Gauge(
                    label: Self.label, dimensions: [("topic", partition.topic), ("partition", String(partition.partition))],
                    factory: factory)
                gauges[partition] = gauge
                gauge.record(max(0, end - next))
            }
        }
    }

    /// Removes every gauge (the consumer stopped).
    func removeAll() {
        report(positions: [:], highWatermark: { _ in nil })
    }
}
