import Contracts
import Foundation
import Kafka
import Logging
import Metrics
import Projections
import Synchronization
import WireCodec

/// Appends the firing of every scheduled send whose time came, in the shards this processor
/// applies (docs/ARCHITECTURE.md#time-is-part-of-the-log).
///
/// The firing is the kept send again, marked `firing`, with the processor's clock as its time,
/// appended to the partition of its app part. A send some of whose pushes are held until later
/// times (a local-time send's zones, quiet hours) waits for each of them in turn: its firing then
/// names the time (`wave`) whose pushes it releases. Where it lands in the log is where the send goes
/// out, live and in every rebuild: no decision reads the clock. A firing appended twice (two
/// processors during a rebalance, or one that did not see the first applied in time) sends
/// nothing the second time, as the send no longer waits.
final class DueSends: Sendable {
    /// How often the store is asked for sends whose time came: what a firing may lag its time by,
    /// for an indexed read of the head of the waiting sends (none, while nothing is due).
    static let tick = Duration.milliseconds(50)
    /// How long a send's firing is not appended again while the send still waits.
    static let again = Duration.seconds(10)
    /// The waiting sends read at a time.
    private let round: Int

    private let producer: KafkaProducer
    private let store: any BatchStore
    private let topics: Topics
    /// The command topic the firings go to, the sends': its partitions are the shards.
    let topic: String
    private let parts: AppParts
    private let logger: Logger
    /// The firings appended lately, by name (`again`).
    private let recent = Mutex<[String: ContinuousClock.Instant]>([:])
    private let counter = Counter(label: "pushline_processor_firings_total")

    init(producer: KafkaProducer, store: any BatchStore, topics: Topics, parts: AppParts, logger: Logger, round: Int = 1000) {
        self.round = round
        self.producer = producer
        self.store = store
        self.topics = topics
        self.topic = CommandTopic.notification.name(in: topics)
        self.parts = parts
        self.logger = logger
    }

    /// Appends firings every `tick` until cancelled, for the sends whose app part's partition of
    /// the notification topic is one of `owned`, of `partitions`; hands each round's firings, as
    /// the records they are in the log, to `appended`.
    func run(owned: Set<Int32>, partitions: Int, appended: @escaping @Sendable ([ConsumedRecord]) async -> Void = { _ in }) async throws {
        while true {
            try await Task.sleep(for: Self.tick)
            do {
                _ = try await fire(owned: owned, partitions: partitions, appended: appended)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                logger.warning("scheduled sends not fired; trying again", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Appends the firings due at `now`, of up to `pages` pages of `round` waiting sends, each
    /// page read from where the last ended (the sends of other processors' shards, and those
    /// whose firing is on its way, are passed over, not waited behind); returns how many.
    func fire(owned: Set<Int32>, partitions: Int, now: Date = Date(), pages: Int = 20,
              appended: @Sendable ([ConsumedRecord]) async -> Void = { _ in }) async throws -> Int {
        let instant = ContinuousClock.now
        recent.withLock { $0 = $0.filter { instant - $0.value < Self.again } }
        let headers = KafkaHeader.list(RecordHeaders(type: NotificationRequested.type.rawValue, version: NotificationRequested.version).fields)
        var fired = 0, last: DeliveryRow?
        for _ in 0..<pages {
            let due = try await store.waitingSends(dueBy: now, after: last, limit: round)
            last = due.last
            var records: [KafkaProducerRecord] = [], names: [String] = []
            for row in due {
                // One firing per time: a send's waves each have their own.
                let name = "\(row.appId.lowercasedString)/\(row.deliveryId.lowercasedString)/\(row.part)/\(row.sendAt.map { RFC3339.milliseconds($0) } ?? 0)"
                let partition = parts.partition(key: RecordKey.app(row.appId), part: row.part, partitions: partitions)
                guard owned.contains(partition), recent.withLock({ $0[name] == nil }) else { continue }
                guard let text = row.scheduledCommand,
                      var command = try? WireJSON.decoder().decode(NotificationRequested.self, from: Data(text.utf8)) else {
                    logger.error("a waiting send keeps no readable command; it is not fired", metadata: ["delivery": "\(name)"])
                    continue
                }
                command.firing = true
                // A send some of whose pushes are held: the firing releases those of its next time.
                if row.schedule == .sending { command.wave = row.sendAt }
                let encoded = try EncodedCommand(command, topics: topics, at: now, part: row.part, parts: parts, encoder: WireJSON.encoder())
                records.append(KafkaProducerRecord(topic: encoded.topic, key: encoded.key, value: encoded.value, headers: headers,
                                                   partition: partition))
                names.append(name)
            }
            if !records.isEmpty {
                let reports = try await producer.send(records)
                recent.withLock { for name in names { $0[name] = instant } }
                counter.increment(by: records.count)
                fired += records.count
                await appended(zip(records, reports).map {
                    ConsumedRecord(appended: $0, at: $1, type: NotificationRequested.type.rawValue, version: NotificationRequested.version,
                                   timestamp: now)
                })
            }
            if due.count < round { break }
        }
        return fired
    }
}
