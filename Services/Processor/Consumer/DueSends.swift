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
    /// How often reads start again at the head of the waiting sends, rather than after the last
    /// one read (`Cursor`).
    static let rescan = Duration.seconds(1)
    /// The waiting sends read at a time.
    private let round: Int

    private let producer: KafkaProducer
    private let store: any BatchStore
    private let topics: Topics
    /// The command topic the firings go to, the sends': its partitions are the shards.
    let topic: String
    private let parts: AppParts
    private let logger: Logger
    /// The firings appended lately (`again`).
    private let recent = Mutex(Recent())
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

    /// Where the next round reads the waiting sends from. The sends before the last one read have
    /// each been fired (or passed over: another processor's), and stay in the index until their
    /// firing is applied: a backlog of many due at once would be read again every round. So a
    /// round goes on after the last one read, and starts at the head again once a `rescan`,
    /// for the sends found there since: one kept only after its time came (its processor was
    /// behind), or one whose firing was not applied within `again`.
    struct Cursor {
        var after: DeliveryRow?
        var headAt: ContinuousClock.Instant?
    }

    /// Appends firings every `tick` until cancelled, for the sends whose app part's partition of
    /// the notification topic is one of `owned`, of `partitions`; hands each round's firings, as
    /// the records they are in the log, to `appended`.
    func run(owned: Set<Int32>, partitions: Int, appended: @escaping @Sendable ([ConsumedRecord]) async -> Void = { _ in }) async throws {
        var cursor = Cursor()
        while true {
            try await Task.sleep(for: Self.tick)
            do {
                _ = try await fire(owned: owned, partitions: partitions, cursor: &cursor, appended: appended)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                logger.warning("scheduled sends not fired; trying again", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Appends the firings due at `now`, of up to `pages` pages of `round` waiting sends, each
    /// page read from where the last ended (the sends of other processors' shards, and those
    /// whose firing is on its way, are passed over, not waited behind), the first from `cursor`;
    /// returns how many.
    func fire(owned: Set<Int32>, partitions: Int, now: Date = Date(), pages: Int = 20, cursor: inout Cursor,
              appended: @Sendable ([ConsumedRecord]) async -> Void = { _ in }) async throws -> Int {
        let instant = ContinuousClock.now
        recent.withLock { $0.forget(before: instant - Self.again) }
        if cursor.headAt.map({ instant - $0 >= Self.rescan }) ?? true {
            cursor = Cursor(after: nil, headAt: instant)
        }
        let headers = KafkaHeader.list(RecordHeaders(type: NotificationRequested.type.rawValue, version: NotificationRequested.version).fields)
        var fired = 0
        for _ in 0..<pages {
            let due = try await store.waitingSends(dueBy: now, after: cursor.after, limit: round)
            if let last = due.last { cursor.after = last }
            var records: [KafkaProducerRecord] = [], names: [Firing] = []
            for row in due {
                // One firing per time: a send's waves each have their own.
                let name = Firing(appId: row.appId, deliveryId: row.deliveryId, part: row.part, time: row.sendAt.map { RFC3339.milliseconds($0) } ?? 0)
                let key = RecordKey.app(row.appId)
                let partition = parts.partition(key: key, part: row.part, partitions: partitions)
                guard owned.contains(partition), !recent.withLock({ $0.contains(name) }) else { continue }
                // A send some of whose pushes are held: the firing releases those of its next time.
                let wave = row.schedule == .sending ? row.sendAt : nil
                guard let text = row.scheduledCommand, let value = try firing(of: text, wave: wave, at: now, part: row.part) else {
                    logger.error("a waiting send keeps no readable command; it is not fired", metadata: ["delivery": "\(name)"])
                    continue
                }
                records.append(KafkaProducerRecord(topic: topic, key: key, value: value, headers: headers,
                                                   partition: partition))
                names.append(name)
            }
            if !records.isEmpty {
                let reports = try await producer.send(records)
                recent.withLock { $0.add(names, at: instant) }
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

    /// The firing record's value: the kept send written around as it is (reading it and writing
    /// it again was a twentieth of the processor's time while a backlog fired), or read and
    /// written whole when its text asks for that; nil when it cannot be read.
    private func firing(of kept: String, wave: Date?, at: Date, part: Int) throws -> Data? {
        if let value = NotificationRequested.firingEnvelope(kept: kept, wave: wave, id: .random(), at: at, part: part) { return value }
        guard var command = NotificationRequested(payload: kept) else { return nil }
        (command.firing, command.wave) = (true, wave)
        return try EncodedCommand(command, topics: topics, at: at, part: part, parts: parts, encoder: WireJSON.encoder()).value
    }

    /// `fire` from the head of the waiting sends.
    func fire(owned: Set<Int32>, partitions: Int, now: Date = Date(), pages: Int = 20,
              appended: @Sendable ([ConsumedRecord]) async -> Void = { _ in }) async throws -> Int {
        var cursor = Cursor()
        return try await fire(owned: owned, partitions: partitions, now: now, pages: pages, cursor: &cursor, appended: appended)
    }

    /// A send's firing for one of its times: a send's waves each have their own.
    struct Firing: Hashable, CustomStringConvertible {
        let appId: UUID, deliveryId: UUID, part: Int, time: Int64

        var description: String { "\(appId.lowercasedString)/\(deliveryId.lowercasedString)/\(part)/\(time)" }
    }

    /// The firings appended lately, and when, oldest first: forgetting those past `again` costs
    /// only them (a backlog of many due at once is looked at every round).
    struct Recent {
        private var at: [Firing: ContinuousClock.Instant] = [:]
        private var order: [(firing: Firing, at: ContinuousClock.Instant)] = []
        private var head = 0

        func contains(_ firing: Firing) -> Bool { at[firing] != nil }

        mutating func add(_ firings: [Firing], at instant: ContinuousClock.Instant) {
            for firing in firings {
                at[firing] = instant
                order.append((firing, instant))
            }
        }

        mutating func forget(before instant: ContinuousClock.Instant) {
            while head < order.count, order[head].at <= instant {
                let (firing, added) = order[head]
                if at[firing] == added { at[firing] = nil }
                head += 1
            }
            if head > 1024, head * 2 > order.count {
                order.removeFirst(head)
                head = 0
            }
        }
    }
}
