import ArgumentParser
import Foundation
import Processor

/// `pushline lag`: per command topic partition, the broker's end offset, the offset the
/// projection store has applied up to, and the difference.
struct Lag: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show each command topic partition's end offset, the store's applied offset and the lag.",
        discussion: """
            END is the partition's end offset (high watermark) from the broker: the offset its next \
            record will get. APPLIED is the offset of the next record the projection store will apply \
            (stored by the processor in the same transaction as the state; `-` when it applied none). \
            LAG = END - APPLIED: the records the processors have not applied yet (0 when caught up; a \
            negative lag means the store is ahead of the log, i.e. the broker lost records).

            Reads the processor's configuration: PUSHLINE_KAFKA_BROKERS, PUSHLINE_STORE, \
            PUSHLINE_TOPIC_PREFIX, PUSHLINE_KAFKA_PROPERTIES (or --brokers, --store). Writes nothing.

            Examples:
              pushline lag
              pushline lag --brokers kafka:9092 --store postgres://pushline@db/pushline --json
            """,
        aliases: ["offsets"]
    )

    @OptionGroup var processor: ProcessorOptions
    @Flag(help: "Print JSON (for scripts) instead of a table.") var json = false

    /// The `--json` document.
    struct Report: Encodable {
        var partitions: [PartitionLag]
        var totalLag: Int64
    }

    func run() async throws {
        let (configuration, logger) = try processor.bootstrap(label: "pushline.cli", defaultLevel: .warning)
        let rows = try await ConsumerLag.measure(configuration: configuration, logger: logger)
        let total = rows.reduce(0) { $0 + max(0, $1.lag ?? 0) }
        if json { return try Output.json(Report(partitions: rows, totalLag: total)) }
        guard !rows.isEmpty else {
            print("no command topics (\(configuration.shared.topics.commandTopics.joined(separator: ", "))) on the broker yet")
            return
        }
        print(Output.table(["TOPIC", "PARTITION", "END", "APPLIED", "LAG"], rows.map { row in
            [row.topic, "\(row.partition)", row.endOffset.map(String.init) ?? "?", row.appliedOffset.map(String.init) ?? "-",
             row.lag.map(String.init) ?? "?"]
        }, rightAligned: [1, 2, 3, 4]))
        let behind = rows.filter { ($0.lag ?? 0) > 0 }.count
        print("total lag: \(total) records" + (behind > 0 ? " on \(behind) of \(rows.count) partitions" : " (caught up)"))
        if rows.contains(where: { ($0.lag ?? 0) < 0 }) {
            print("warning: the store is ahead of the log on some partitions (negative lag): the broker lost records")
        }
        if rows.contains(where: { $0.endOffset == nil }) {
            print("warning: the broker does not know some partitions the store has offsets for (END ?)")
        }
    }
}
