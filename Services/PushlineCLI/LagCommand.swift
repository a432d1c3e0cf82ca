import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import Processor
import WireCodec

/// `pushline lag`: per command topic partition, the broker's end offset, the offset the
/// projection store has applied up to, and the difference; per shard; per processor of the group
/// (its members, as the broker describes them), and per processor URL given; with `--watch`,
/// again every few seconds, with the rate and the time to catch up.
struct Lag: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show each command topic partition's end offset, the store's applied offset and the lag.",
        discussion: """
            END is the partition's end offset (high watermark) from the broker: the offset its next \
            record will get. APPLIED is the offset of the next record the projection store will apply \
            (stored by the processor in the same transaction as the state; `-` when it applied none). \
            LAG = END - APPLIED: the records the processors have not applied yet (0 when caught up; a \
            negative lag means the store is ahead of the log, i.e. the broker lost records).

            --watch measures again every --interval seconds and prints, per shard (partition i of \
            every command topic, which one processor applies), the lag, the records applied per \
            second since the last sample and the time to catch up at that rate. \

            The processor group's members (PUSHLINE_GROUP_ID, as the broker describes the group) are \
            listed with the shards their lease partitions give them and those shards' lag (and, with \
            --watch, rate and time to catch up); a member with no shard stands by. A broker that \
            reports no assignments (Tansu) gets the shares the range assignor gives the members. Each --processor \
            URL (a processor's health and metrics address, repeatable) adds that processor's shards, \
            lag and rate, read from its /metrics.

            Reads the processor's configuration: PUSHLINE_KAFKA_BROKERS, PUSHLINE_STORE, \
            PUSHLINE_TOPIC_PREFIX, PUSHLINE_KAFKA_PROPERTIES, PUSHLINE_GROUP_ID (or --brokers, --store). \
            Writes nothing.

            Examples:
              pushline lag
              pushline lag --brokers kafka:9092 --store postgres://pushline@db/pushline --json
              pushline lag --watch --interval 2 --processor http://processor-1:8081 --processor http://processor-2:8081
            """,
        aliases: ["offsets"]
    )

    @OptionGroup var processor: ProcessorOptions
    @Flag(help: "Print JSON (for scripts) instead of a table.") var json = false
    @Flag(help: "Measure again every --interval seconds, with rates and times to catch up, until interrupted.") var watch = false
    @Option(help: "Seconds between two samples of --watch.") var interval = 5
    @Option(help: "With --watch, stop after this many samples.") var samples: Int?
    @Option(name: .customLong("processor"), help: "A processor's metrics URL (http://host:8081); repeatable.")
    var processorURLs: [String] = []

    /// The `--json` document (one per sample with `--watch`).
    struct Report: Encodable {
        var partitions: [PartitionLag]
        var totalLag: Int64
        var shards: [ShardLag]
        /// Records applied per second since the previous sample, over every shard; nil for the first.
        var appliedPerSecond: Double?
        var processors: [ProcessorLag]?
        /// The processor group's members and their shares; nil when the broker did not describe it.
        var group: GroupLag?
        /// Why the group is not described.
        var groupError: String?
    }

    /// The processor group with each member's lag (and rate, with `--watch`).
    struct GroupLag: Encodable {
        var group: String
        var state: String
        /// `reported` by the broker, or `derived` from the members (`ProcessorGroup.assignment`).
        var assignment: String
        var processors: [MemberLag]
    }

    struct MemberLag: Encodable {
        var share: ProcessorShare
        var lag: Int64
        var appliedPerSecond: Double?

        func encode(to encoder: any Encoder) throws {
            try share.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(lag, forKey: .lag)
            try container.encodeIfPresent(appliedPerSecond, forKey: .appliedPerSecond)
        }

        private enum Key: String, CodingKey { case lag, appliedPerSecond }
    }

    func validate() throws {
        guard interval > 0 else { throw ValidationError("--interval takes a positive number of seconds") }
        guard samples.map({ $0 > 0 }) ?? true else { throw ValidationError("--samples takes a positive number") }
        guard samples == nil || watch else { throw ValidationError("--samples goes with --watch") }
    }

    func run() async throws {
        let (configuration, logger) = try processor.bootstrap(label: "pushline.cli", defaultLevel: .warning)
        let client = AdminClient.makeHTTPClient()
        do {
            try await measure(configuration, logger: logger, client: client)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try? await client.shutdown()
    }

    /// Measures and prints once, or with `--watch` until interrupted or `--samples`.
    private func measure(_ configuration: ProcessorConfiguration, logger: Logger, client: HTTPClient) async throws {
        var previous: Sample?
        var taken = 0
        while true {
            let rows = try await ConsumerLag.measure(configuration: configuration, logger: logger)
            var processors: [ProcessorLag] = []
            for url in processorURLs { processors.append(await ProcessorLag.read(url, client: client)) }
            let group: Result<ProcessorGroup, any Error>
            do {
                group = .success(try await ConsumerLag.group(configuration: configuration, shards: ConsumerLag.shards(rows).map(\.shard)))
            } catch {
                group = .failure(error)
            }
            let sample = Sample(at: ContinuousClock.now, rows: rows, processors: processors, group: group)
            if watch {
                try printWatched(sample, since: previous)
            } else {
                try printOnce(sample, topics: configuration.shared.topics.commandTopics)
            }
            taken += 1
            guard watch, taken < samples ?? .max else { return }
            previous = sample
            try await Task.sleep(for: .seconds(interval))
        }
    }

    /// One measurement.
    struct Sample {
        var at: ContinuousClock.Instant
        var rows: [PartitionLag]
        var processors: [ProcessorLag]
        var group: Result<ProcessorGroup, any Error>
        var shards: [ShardLag] { ConsumerLag.shards(rows) }
        var groupError: String? {
            guard case .failure(let error) = group else { return nil }
            return "\(error)"
        }

        /// Each member's lag, and its rate since `previous` (`seconds` earlier): its shards' sums.
        func groupLag(since previous: Sample?, seconds: Double?) -> GroupLag? {
            guard case .success(let group) = group else { return nil }
            let now = Dictionary(uniqueKeysWithValues: shards.map { ($0.shard, $0) })
            let before = Dictionary(uniqueKeysWithValues: (previous?.shards ?? []).map { ($0.shard, $0.applied) })
            return GroupLag(group: group.group, state: group.state, assignment: group.assignment, processors: group.processors.map { share in
                let lag = share.shards.reduce(0) { $0 + (now[$1]?.lag ?? 0) }
                let applied = share.shards.reduce(0) { $0 + (now[$1]?.applied ?? 0) }
                let earlier: Int64? = share.shards.allSatisfy { before[$0] != nil } ? share.shards.reduce(0) { $0 + before[$1]! } : nil
                return MemberLag(share: share, lag: lag, appliedPerSecond: Lag.rate(applied, since: earlier, seconds: seconds))
            })
        }
        var totalLag: Int64 { rows.reduce(0) { $0 + max(0, $1.lag ?? 0) } }
    }

    private func printOnce(_ sample: Sample, topics: [String]) throws {
        let rows = sample.rows, total = sample.totalLag
        if json {
            return try Output.json(Report(partitions: rows, totalLag: total, shards: sample.shards,
                                          processors: processorURLs.isEmpty ? nil : sample.processors,
                                          group: sample.groupLag(since: nil, seconds: nil), groupError: sample.groupError))
        }
        guard !rows.isEmpty else {
            print("no command topics (\(topics.joined(separator: ", "))) on the broker yet")
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
        print("\n" + groupTable(sample, since: nil, seconds: nil))
        if !sample.processors.isEmpty { print("\n" + processorTable(sample.processors, previous: [], seconds: nil)) }
    }

    /// A `--watch` sample: the total with its rate, then a row per shard and per processor.
    private func printWatched(_ sample: Sample, since previous: Sample?) throws {
        let seconds = previous.map { Double((sample.at - $0.at).inMilliseconds) / 1000 }
        let before = Dictionary(uniqueKeysWithValues: (previous?.shards ?? []).map { ($0.shard, $0.applied) })
        let shards = sample.shards
        let totalRate = Self.rate(shards.reduce(0) { $0 + $1.applied }, since: previous.map { $0.shards.reduce(0) { $0 + $1.applied } },
                                  seconds: seconds)
        if json {
            return try Output.json(Report(partitions: sample.rows, totalLag: sample.totalLag, shards: shards, appliedPerSecond: totalRate,
                                          processors: processorURLs.isEmpty ? nil : sample.processors,
                                          group: sample.groupLag(since: previous, seconds: seconds), groupError: sample.groupError))
        }
        print("\(RFC3339.string(from: Date()))  total lag \(ProgressText.grouped(sample.totalLag)) records, "
                    + Self.trend(lag: sample.totalLag, rate: totalRate))
        print(Output.table(["SHARD", "LAG", "APPLIED/S", "ETA"], shards.map { shard in
            let r = Self.rate(shard.applied, since: before[shard.shard], seconds: seconds)
            return ["\(shard.shard)", ProgressText.grouped(shard.lag), r.map { ProgressText.grouped(Int64($0)) } ?? "-",
                    Self.eta(lag: shard.lag, rate: r)]
        }, rightAligned: [0, 1, 2, 3]))
        print(groupTable(sample, since: previous, seconds: seconds))
        if !sample.processors.isEmpty {
            print(processorTable(sample.processors, previous: previous?.processors ?? [], seconds: seconds))
        }
        print("")
    }

    /// The processor group's members, each with its shards and their lag; with `seconds` (a
    /// `--watch` sample after the first), their rate and time to catch up.
    func groupTable(_ sample: Sample, since previous: Sample?, seconds: Double?) -> String {
        guard let group = sample.groupLag(since: previous, seconds: seconds) else {
            return "processor group: not described (\(sample.groupError ?? "no answer"))"
        }
        let title = "processor group \(group.group) (\(group.state)): " + (group.processors.count == 1 ? "1 member" : "\(group.processors.count) members")
        guard !group.processors.isEmpty else { return title }
        let derived = group.assignment == "derived" ? "\n(the broker reports no assignments: shards derived from the members, as the range assignor gives them)" : ""
        let watched = previous != nil || watch
        let header = ["PROCESSOR", "HOST", "SHARDS", "LAG"] + (watched ? ["APPLIED/S", "ETA"] : [])
        return title + derived + "\n" + Output.table(header, group.processors.map { p in
            let shards = p.share.shards.isEmpty ? "none (standing by)" : p.share.shards.map(String.init).joined(separator: ",")
            let row = [p.share.client, p.share.host.isEmpty ? "-" : p.share.host, shards, ProgressText.grouped(p.lag)]
            return row + (watched ? [p.appliedPerSecond.map { ProgressText.grouped(Int64($0)) } ?? "-",
                                     p.share.shards.isEmpty ? "-" : Self.eta(lag: p.lag, rate: p.appliedPerSecond)] : [])
        }, rightAligned: watched ? [3, 4, 5] : [3])
    }

    private func processorTable(_ processors: [ProcessorLag], previous: [ProcessorLag], seconds: Double?) -> String {
        let before = Dictionary(previous.map { ($0.url, $0.applied) }, uniquingKeysWith: { a, _ in a })
        return Output.table(["PROCESSOR", "SHARDS", "LAG", "APPLIED/S", "ETA"], processors.map { p in
            guard p.reachable else { return [p.url, "unreachable", "-", "-", "-"] }
            let rate = p.applied.flatMap { Self.rate($0, since: before[p.url] ?? nil, seconds: seconds) }
            let shards = p.shards.isEmpty ? "none" : p.shards.map(String.init).joined(separator: ",")
            return [p.url, shards, ProgressText.grouped(p.lag), rate.map { ProgressText.grouped(Int64($0)) } ?? "-", Self.eta(lag: p.lag, rate: rate)]
        }, rightAligned: [2, 3, 4])
    }

    /// Records applied per second between two samples `seconds` apart; nil without an earlier one.
    static func rate(_ applied: Int64, since earlier: Int64?, seconds: Double?) -> Double? {
        guard let seconds, seconds > 0, let earlier else { return nil }
        return Double(max(0, applied - earlier)) / seconds
    }

    /// `4,120 records/s, ETA 3s`, or what can be said without a rate.
    static func trend(lag: Int64, rate: Double?) -> String {
        guard let rate else { return "rate after the next sample" }
        return "\(ProgressText.grouped(Int64(rate))) records/s, ETA \(eta(lag: lag, rate: rate))"
    }

    /// The time to catch up at `rate`: `0s` when caught up, `-` without a rate, `stalled` when
    /// records wait and none was applied.
    static func eta(lag: Int64, rate: Double?) -> String {
        if lag == 0 { return "0s" }
        guard let rate else { return "-" }
        return rate > 0 ? ProgressText.duration(Double(lag) / rate) : "stalled"
    }
}

/// What a processor's `/metrics` says of its share: the shards whose partitions it reports lag
/// for (those it owns), that lag, and the records it applied since it started.
struct ProcessorLag: Encodable {
    var url: String
    var reachable: Bool
    var shards: [Int32]
    var lag: Int64
    /// `pushline_processor_records_consumed_total`.
    var applied: Int64?

    /// `client`: one that does not retry a refused connection (`AdminClient.makeHTTPClient`), so
    /// that a processor that is down shows as unreachable at once.
    static func read(_ url: String, client: HTTPClient) async -> ProcessorLag {
        let base = url.hasSuffix("/") ? String(url.dropLast()) : url
        do {
            let response = try await client.execute(HTTPClientRequest(url: base + "/metrics"), timeout: .seconds(5))
            let body = try await response.body.collect(upTo: 16 << 20)
            guard response.status == .ok else { return ProcessorLag(url: url, reachable: false, shards: [], lag: 0) }
            return parse(url: url, metrics: String(buffer: body))
        } catch {
            return ProcessorLag(url: url, reachable: false, shards: [], lag: 0)
        }
    }

    /// Reads the Prometheus text: `pushline_processor_consumer_lag{…partition="3"…} 12` lines
    /// and `pushline_processor_records_consumed_total 400`.
    static func parse(url: String, metrics: String) -> ProcessorLag {
        var shards = Set<Int32>()
        var lag: Int64 = 0
        var applied: Int64?
        for line in metrics.split(separator: "\n") {
            guard let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
            if line.hasPrefix("pushline_processor_consumer_lag{"),
               let start = line.range(of: "partition=\""), let end = line[start.upperBound...].firstIndex(of: "\""),
               let partition = Int32(line[start.upperBound..<end]) {
                shards.insert(partition)
                lag += max(0, Int64(value))
            } else if line.hasPrefix("pushline_processor_records_consumed_total ") {
                applied = Int64(value)
            }
        }
        return ProcessorLag(url: url, reachable: true, shards: shards.sorted(), lag: lag, applied: applied)
    }
}
