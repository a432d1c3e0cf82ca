import Contracts
import Foundation
import Handlers
import Kafka
import Logging
import Metrics
import OutboundRendering
import Projections
import Settings
import Synchronization

/// One consumed record, reduced to what the applier needs.
struct ConsumedRecord: Sendable {
    var partition: PartitionKey
    var offset: Int64
    var type: String?
    var version: Int?
    var value: Data
    /// The ingest request that produced the command (`request-id` header), for log lines.
    var requestId: String? = nil
    /// The record's Kafka timestamp (its producer's create time).
    var timestamp: Date? = nil
}

extension ConsumedRecord {
    /// `record` as it will be read back from where the broker reported it landed: what this
    /// processor appended itself (a progress mark, a firing) and takes into the order at once.
    init(appended record: KafkaProducerRecord, at report: KafkaDeliveryReport, type: String, version: Int, timestamp: Date) {
        self.init(partition: PartitionKey(topic: record.topic, partition: report.partition), offset: report.offset, type: type,
                  version: version, value: record.value, timestamp: timestamp)
    }
}

/// A consumed record, decoded, with its place in the event order.
struct DecodedRecord: Sendable {
    var partition: PartitionKey
    var offset: Int64
    var requestId: String?
    var outcome: CommandDecoder.Outcome
    /// The record as consumed, for a dead letter.
    var type: String?
    var value: Data
    /// The record's Kafka timestamp (its producer's create time).
    var timestamp: Date?
    /// The envelope's `at` in milliseconds since 1970; nil when the record did not decode.
    var at: Int64?
    /// The partition's event time at this record (`EventOrder`), set when it is ordered.
    var eventTime: Int64 = 0
    /// The partition's event time before this record, set with `eventTime`.
    var timeBefore: Int64 = 0

    /// The app part of the command, which a send read in pages holds (`EventOrder`); nil for a
    /// record about no app.
    var heldApp: HeldApp? {
        guard case .command(let c) = outcome, let app = c.app else { return nil }
        return HeldApp(app: app, part: c.part)
    }

    var isProgressMark: Bool {
        if case .progressMark = outcome { return true }
        return false
    }
}

/// Applies a batch of consumed records to the projection store in ONE transaction together
/// with the partitions' next offsets (effectively-once: state and position move together).
///
/// Handlers decide outcomes in memory over the rows loaded for the batch; the store only
/// sees the resulting mutations. The batch's outbound records are published (and acknowledged
/// by the broker) before the commit, so a crash between the two repeats them on restart — the
/// one documented window — and never loses one. If the store rejects the batch, the commit is
/// retried, then the batch is applied record by record so that one bad write
/// (→ `FailedToStoreDevice`) cannot block the rest. A store that is unavailable
/// (`ProjectionStoreError.unavailable`: restarting, unreachable, a deadlock) is waited for
/// instead, however long: nothing is skipped while the store or the broker is down, and the
/// offsets do not move until a commit succeeds.
final class BatchApplier: Sendable {
    private let store: any BatchStore
    private let outbound: any OutboundPublisher
    private let handlers: HandlerRegistry
    /// The handler of sends, for those applied on their own (`stream`).
    private let notifications: NotificationHandler
    private let logger: Logger
    private let retryDelays: [Duration]
    /// A rebuild's applier: outbox jobs are written as `replayed`, never to be sent.
    private let replaying: Bool
    private let commitTimer = Timer(label: "pushline_processor_store_commit_seconds")
    /// How long the longest-waiting command of each live batch waited: from its Kafka timestamp
    /// until the batch was committed (`recordApplyDelay`).
    private let applyDelayTimer = Timer(label: "pushline_processor_apply_delay_seconds")
    private let applyDelayMaxGauge = Gauge(label: "pushline_processor_apply_delay_max_seconds")
    private let applyDelayMax = Mutex<Double>(0)
    /// Since when the store has been failing as unavailable (nil: it answered the last call).
    private let unavailableSince = Mutex<ContinuousClock.Instant?>(nil)
    private let outboundCounter = Counter(label: "pushline_processor_outbound_records_total")
    /// Pages read and windows published by sends read in pages (`stream`): their progress, which
    /// their partition's offset shows only at their commit (`ProgressWatch`).
    let streamSteps = Mutex(0)
    /// The users each counted send reached (`CountedSendRow`), as read: such a row never changes
    /// once written, so a batch reads only those of its apps' counted sends it has not read before.
    private let countedSends = Mutex<[CountedSendKey: [UInt64]]>([:])

    /// The most outbound records handed to the producer at once (`outboundWindow(forQueue:)`).
    private let outboundWindow: Int
    /// How many devices a page of an audience send reads (`stream`).
    private let devicePageSize: Int
    /// Up to how many users' settings of an app part a send to an audience reads at once, before
    /// its pages (`StateQuery.userSettingsOfPart`); more are read a page's users at a time.
    private let fewUserSettings: Int
    /// How long reports of a delivery whose send has not been applied are kept (`DecisionRules.trackingParkTtlMs`).
    private let trackingParkTime: Duration
    /// How long registration statuses and acks are kept (`DecisionRules.registrationStatusTtlMs`, `.ackTtlMs`).
    private let registrationStatusTime: Duration
    private let ackTime: Duration
    /// The parts the log's apps are split into (`DecisionRules.appParts`).
    let appParts: AppParts
    /// The message-id keys the handlers hold (`DecisionRules.messageIdKeys`).
    let messageIdKeys: MessageIdKeys

    init(store: any BatchStore, outbound: any OutboundPublisher, verifier: any DeviceTokenVerifier, logger: Logger,
         replaying: Bool = false, retryDelays: [Duration] = [.milliseconds(50), .milliseconds(200), .milliseconds(800)],
         outboundWindow: Int = BatchApplier.outboundWindow(forQueue: KafkaProducerConfiguration().queueBufferingMaxMessages),
         rules: DecisionRules = .default, devicePageSize: Int = 10_000, fewUserSettings: Int = 10_000) {
        self.devicePageSize = max(1, devicePageSize)
        self.fewUserSettings = fewUserSettings
        self.trackingParkTime = rules.trackingParkTime
        self.registrationStatusTime = rules.registrationStatusTime
        self.ackTime = rules.ackTime
        self.appParts = rules.appParts
        self.messageIdKeys = rules.messageIdKeys
        self.outboundWindow = max(1, outboundWindow)
        self.replaying = replaying
        self.store = store
        self.outbound = outbound
        self.handlers = .standard(verifier: verifier, rules: rules)
        self.notifications = NotificationHandler(rules: rules)
        self.logger = logger
        self.retryDelays = retryDelays
    }

    /// Applies `records` (decoded, in event order) and returns the new next-offset of every
    /// partition they came from. `expected` holds the stored next-offsets the caller believes in
    /// (absent: nothing stored). Throws `ProjectionStoreError.offsetConflict` when another
    /// processor moved a partition meanwhile; nothing is written then. `held`: the records are all
    /// of this app part, held beside the loop, and move its held rows (`HeldApp.key(on:)`)
    /// instead of the partitions' offsets; `expected` and the result are still keyed by partition.
    func apply(_ decoded: [DecodedRecord], expected: [PartitionKey: Int64], held: HeldApp? = nil) async throws -> [PartitionKey: Int64] {
        // A send whose devices are read in pages is applied on its own, once the records before
        // it are committed (`stream`).
        var positions = expected
        var next: [PartitionKey: Int64] = [:]
        var rest = decoded[...]
        while let index = rest.firstIndex(where: { Self.streamed($0) != nil }) {
            for (key, offset) in try await applyBatch(Array(rest[..<index]), expected: positions, held: held) {
                positions[key] = offset
                next[key] = offset
            }
            let (c, send) = Self.streamed(rest[index])!
            for (key, offset) in try await stream(rest[index], c, send, expected: positions, held: held) {
                positions[key] = offset
                next[key] = offset
            }
            rest = rest[(index + 1)...]
        }
        for (key, offset) in try await applyBatch(Array(rest), expected: positions, held: held) { next[key] = offset }
        return next
    }

    private func applyBatch(_ decoded: [DecodedRecord], expected: [PartitionKey: Int64], held: HeldApp?) async throws -> [PartitionKey: Int64] {
        guard !decoded.isEmpty else { return [:] }
        let records = decoded
        let clock = ContinuousClock()
        var published = false
        do {
            let start = clock.now
            let batch = try await withRetries { try await self.decide(decoded) }
            let decided = clock.now
            try await publish(batch.outbound)
            published = true
            let publishedAt = clock.now
            try await withRetries { try await self.commit(batch, expected: expected, held: held) }
            if !replaying { recordApplyDelay(records) }
            logger.debug("batch applied", metadata: [
                "records": "\(records.count)", "mutations": "\(batch.mutations.count)", "outbound": "\(batch.outbound.count)",
                "load_ms": "\(batch.loadTime.inMilliseconds)", "decide_ms": "\((decided - start).inMilliseconds)",
                "publish_ms": "\((publishedAt - decided).inMilliseconds)", "commit_ms": "\((clock.now - publishedAt).inMilliseconds)",
            ])
            return batch.next
        } catch let error as ProjectionStoreError where error.isConflict {
            throw error
        } catch {
            logger.error("batch commit failed after retries; applying record by record", metadata: ["error": "\(error)"])
        }
        // The outbound records of the whole batch are out already when `published`: deciding
        // record by record over the same stored state renders the same records again, so they
        // are not published a second time.
        var positionsOut = expected
        for record in decoded {
            let one = [record]
            let positions = positionsOut
            do {
                let batch = try await withRetries { try await self.decide(one) }
                if !published { try await publish(batch.outbound) }
                try await withRetries { try await self.commit(batch, expected: positions, held: held) }
            } catch let error as ProjectionStoreError where error.isConflict {
                throw error
            } catch {
                try await settleRefused(record, after: error, expected: positions, held: held)
            }
            positionsOut[record.partition] = record.offset + 1
        }
        return positionsOut.filter { key, _ in records.contains { $0.partition == key } }
    }

    // MARK: - Deciding and committing

    /// What a batch decided: its mutations, outbound records, next offsets and counts.
    private struct Decided: Sendable {
        var mutations: [Mutation]
        var outbound: [OutboundMessage]
        var next: [PartitionKey: Int64]
        /// The event time of each partition after the batch.
        var times: [PartitionKey: Int64]
        var tally: Tally
        /// How long loading the rows took (part of deciding), for the debug log.
        var loadTime: Duration
    }

    /// Decodes the records, a large batch in a few parts at once: decoding JSON is the one
    /// step of a batch that needs no shared state, and tracking batches spend a third of their
    /// time on it.
    func decode(_ records: [ConsumedRecord]) async -> [DecodedRecord] {
        let parts = records.count >= 64 ? min(4, ProcessInfo.processInfo.activeProcessorCount) : 1
        let handlers = self.handlers
        guard parts > 1 else { return Self.decode(records[...], handlers: handlers) }
        let size = (records.count + parts - 1) / parts
        return await withTaskGroup(of: (Int, [DecodedRecord]).self) { group in
            for part in 0..<parts {
                let slice = records[(part * size)..<min(records.count, (part + 1) * size)]
                group.addTask { (part, Self.decode(slice, handlers: handlers)) }
            }
            var decoded = [[DecodedRecord]](repeating: [], count: parts)
            for await (part, list) in group { decoded[part] = list }
            return decoded.flatMap { $0 }
        }
    }

    private static func decode(_ records: ArraySlice<ConsumedRecord>, handlers: HandlerRegistry) -> [DecodedRecord] {
        let decoder = CommandDecoder(registry: handlers)
        return records.map {
            let outcome = decoder.decode(type: $0.type, version: $0.version, value: $0.value)
            return DecodedRecord(partition: $0.partition, offset: $0.offset, requestId: $0.requestId, outcome: outcome,
                                 type: $0.type, value: $0.value, timestamp: $0.timestamp, at: outcome.at.map(EventTime.milliseconds))
        }
    }

    /// Loads the rows the records need and runs their handlers in memory.
    private func decide(_ records: [DecodedRecord], storeFailed: Bool = false) async throws -> Decided {
        var prepared = try await prepare(records)
        for (c, requestId, time) in prepared.commands {
            if let app = c.app { prepared.state.advance(to: time, app: app, part: c.part) }
            prepared.count(c, c.apply(to: &prepared.state, storeFailed: storeFailed), requestId: requestId, logger: logger)
        }
        return prepared.concluded()
    }

    /// A batch's commands in event order, with the rows they need loaded: what `decide` runs the
    /// handlers over. `streaming`: the batch is one send whose devices are read in pages
    /// (`stream`), so they are not loaded with it.
    private struct Prepared {
        /// Each command with its record's event time: non-decreasing along the event order,
        /// across batches too, so the apps' clocks depend on the log alone, never on where
        /// batches end.
        var commands: [(command: ProcessorCommand, requestId: String?, time: Date)] = []
        var state: BatchState
        var tally: Tally
        var next: [PartitionKey: Int64]
        var times: [PartitionKey: Int64]
        var loadTime: Duration

        mutating func count(_ c: ProcessorCommand, _ result: HandlerResult, requestId: String?, logger: Logger) {
            tally.count(c.type, result)
            if case .rejected(let reason) = result {
                // Debug only: forged requests must not buy log volume. The request id ties the
                // outcome to the ingest request that carried the command.
                logger.debug("command rejected", metadata: [
                    "type": "\(c.type.rawValue)", "reason": "\(reason)", "command_id": "\(c.id)", "request_id": "\(requestId ?? "-")",
                ])
            }
        }

        /// The batch's mutations and outbound records, once every command is applied.
        mutating func concluded() -> Decided {
            state.finishTracking()
            state.finishOutcomes()
            state.finishPruning()
            state.finishUsers()
            tally.tracking = state.trackingOutcomes
            return Decided(mutations: state.mutations, outbound: state.outbound, next: next, times: times, tally: tally, loadTime: loadTime)
        }
    }

    private func prepare(_ records: [DecodedRecord], streaming: Bool = false) async throws -> Prepared {
        var commands: [(command: ProcessorCommand, requestId: String?, time: Date)] = []
        commands.reserveCapacity(records.count)
        var tally = Tally()
        var next: [PartitionKey: Int64] = [:]
        var times: [PartitionKey: Int64] = [:]
        for record in records {
            next[record.partition] = max(next[record.partition] ?? 0, record.offset + 1)
            times[record.partition] = max(times[record.partition] ?? .min, record.eventTime)
            switch record.outcome {
            case .command(let c): commands.append((c, record.requestId, EventTime.date(record.eventTime)))
            case .progressMark: break
            case .unknownType(let t): tally.skipped["unknown-type:\(t)", default: 0] += 1
            case .unsupportedVersion(let t, let v): tally.skipped["unsupported-version:\(t):v\(v)", default: 0] += 1
            case .malformed(let t, let e):
                logger.warning("skipping malformed record", metadata: [
                    "type": "\(t)", "error": "\(e)", "partition": "\(record.partition)", "offset": "\(record.offset)",
                    "request_id": "\(record.requestId ?? "-")",
                ])
                tally.skipped["malformed:\(t)", default: 0] += 1
            }
        }
        // In event order (`EventOrder`): every command sees exactly the commands before it.
        var query = StateQuery()
        var newest = Date.distantPast
        for (c, _, time) in commands {
            c.addNeeds(to: &query)
            if let app = c.app { query.parkedApps.insert(app) }
            newest = max(newest, time)
        }
        if streaming { query.allDevicesOf = [] }
        // Parked tracking that may expire in this batch: the marks of its apps older than the
        // park time before its newest event time (`TrackingHandler`); of those, the marks whose
        // own app's clock passes them expire.
        if !commands.isEmpty { query.parkedBefore = newest.addingTimeInterval(-trackingParkTime.inSeconds) }
        // Statuses and acks that may be pruned in this batch, the same way: each goes once its
        // own app part's clock has passed its time to live.
        if !commands.isEmpty {
            query.statusesBefore = newest.addingTimeInterval(-registrationStatusTime.inSeconds)
            query.acksBefore = newest.addingTimeInterval(-ackTime.inSeconds)
        }
        let loadStart = ContinuousClock.now
        query.knownCountedSends = countedSends.withLock { Set($0.keys) }
        var snapshot = try await store.load(query)
        countedSends.withLock { known in
            for (key, users) in snapshot.countedSends { known[key] = users }
            // The loaded apps' counted sends, read now or before; those they no longer count are forgotten.
            for app in snapshot.apps.values where app.countedSends != nil {
                let names = Set(CappedPushes(app.countedSends).entries.map(\.delivery))
                known = known.filter { $0.key.appId != app.appId || $0.key.part != app.part || names.contains($0.key.delivery) }
                for name in names {
                    let key = CountedSendKey(appId: app.appId, part: app.part, delivery: name)
                    if let users = known[key] { snapshot.countedSends[key] = users }
                }
            }
        }
        let state = BatchState(snapshot, trackingParkTime: trackingParkTime,
                               keeping: Retention(registrationStatuses: registrationStatusTime, acks: ackTime), parts: appParts)
        return Prepared(commands: commands, state: state, tally: tally, next: next, times: times, loadTime: ContinuousClock.now - loadStart)
    }

    // MARK: - Sends read in pages

    /// Whether `record` is a send whose devices are read in pages.
    func streams(_ record: DecodedRecord) -> Bool { Self.streamed(record) != nil }

    /// The command of a record that is applied on its own, its devices read in pages
    /// (`NotificationHandler.streams`).
    private static func streamed(_ record: DecodedRecord) -> (ProcessorCommand, NotificationRequested)? {
        guard case .command(let c) = record.outcome, let send = c.payload as? NotificationRequested,
              NotificationHandler.streams(send) else { return nil }
        return (c, send)
    }

    /// Applies a send to an audience on its own, so that its memory does not grow with the app.
    /// Every record before it is committed, so the store holds the devices as they are at its
    /// place in the event order: they are read in pages in the tokens' byte order, the audience
    /// chooses among them, and their records are published window by window as they are made.
    /// The delivery and the partition's offset (or, held, its app part's row) are committed after
    /// the last window. A crash
    /// before that commit applies the send again over the same stored devices: the same records
    /// again, as for any batch whose records were published and not committed (`apply`).
    ///
    /// Only this processor writes the devices this part holds while it holds the partition, and
    /// the part's later commands wait for the send (held beside a live loop, after it in a
    /// rebuild's batch), so the pages see nothing after it; the rows of the app's other parts may
    /// change, and are not looked at.
    private func stream(_ record: DecodedRecord, _ c: ProcessorCommand, _ send: NotificationRequested,
                        expected: [PartitionKey: Int64], held: HeldApp?) async throws -> [PartitionKey: Int64] {
        let clock = ContinuousClock()
        let start = clock.now
        var prepared = try await withRetries { try await self.prepare([record], streaming: true) }
        prepared.state.advance(to: prepared.commands[0].time, app: send.mobileAppId, part: c.part)
        let result: HandlerResult
        var pages = 0, sent = 0
        switch notifications.start(send, CommandContext(id: c.id, at: c.at, part: c.part), state: &prepared.state) {
        case .decided(let decided):
            result = decided
        case .sending(var sending):
            // `streamed` took the send for its audience, which `start` has read.
            pages = try await publishPages(of: &sending, audience: sending.audience!)
            sent = sending.sent
            result = notifications.finish(sending, devices: [], state: &prepared.state)
        }
        prepared.count(c, result, requestId: record.requestId, logger: logger)
        let batch = prepared.concluded()
        let published = clock.now
        do {
            try await withRetries { try await self.commit(batch, expected: expected, held: held) }
        } catch let error as ProjectionStoreError where error.isConflict {
            throw error
        } catch {
            try await settleRefused(record, after: error, expected: expected, held: held)
            return [record.partition: record.offset + 1]
        }
        if !replaying { recordApplyDelay([record]) }
        logger.debug("send applied in pages", metadata: [
            "pages": "\(pages)", "outbound": "\(sent)", "load_ms": "\(batch.loadTime.inMilliseconds)",
            "send_ms": "\((published - start).inMilliseconds)", "commit_ms": "\((clock.now - published).inMilliseconds)",
        ])
        return batch.next
    }

    /// Reads the app's devices page by page, makes the record of each device the audience takes
    /// in this part, and publishes them in windows of `outboundWindow`, two at a time (`publish`),
    /// the next page read while a page's records are made. Returns how many pages it read.
    private func publishPages(of sending: inout NotificationHandler.Send, audience: AudienceExpression) async throws -> Int {
        let app = sending.command.mobileAppId, part = sending.part
        let window = outboundWindow, parts = appParts, pageSize = devicePageSize
        // The store reads the devices of the rarest tag or topic every selected device has.
        let required = audience.required
        let having = try await withRetries { try await self.store.leading(DeviceNames(tags: required.tags, topics: required.topics), app: app) }
        // Where the send needs users' settings (users with quiet hours or pushes counted on their
        // own row), all of the part's are read first when there are few; else a page comes with the
        // settings of its users, both read while the page before is made.
        let everyUsers: [UserPartKey: UserSettingsRow]? = try await {
            guard sending.readsUsers else { return nil }
            var query = StateQuery()
            query.userSettingsOfPart = AppPart(app, part: part)
            query.userSettingsLimit = self.fewUserSettings + 1
            let asked = query
            let rows = try await withRetries { try await self.store.load(asked) }.userSettings
            return rows.count <= self.fewUserSettings ? rows : nil
        }()
        let readsUsers = sending.readsUsers && everyUsers == nil
        let read: @Sendable (String?) async throws -> (devices: [DeviceRow], settings: [UserPartKey: UserSettingsRow]) = { after in
            let page = try await self.withRetries { try await self.store.devices(app: app, after: after, limit: pageSize, having: having) }
            self.streamSteps.withLock { $0 += 1 }
            guard readsUsers else { return (page, everyUsers ?? [:]) }
            var query = StateQuery()
            query.userSettings = Set(page.lazy.filter { NotificationHandler.selects(audience, $0, part: part, of: parts) }.map(\.user))
            let asked = query
            return (page, try await self.withRetries { try await self.store.load(asked) }.userSettings)
        }
        var records: [OutboundMessage] = []
        records.reserveCapacity(min(window, pageSize))
        // Pushes held for later (a local-time send's later zones, quiet hours) are written a page at
        // a time, before the send's commit: if the send is applied again after a crash, it writes
        // the same held rows. One write in flight, beside the next page's records; the send's
        // commit comes after the last. The caps count the send once, with the users it reached,
        // in that commit (`Send.count`); a user's devices on later pages take the decision made
        // on the first (`admit`).
        var held: [Mutation] = []
        var writing: Task<Void, any Error>?
        let replaying = self.replaying
        func writeHeld() async throws {
            guard !held.isEmpty else { return }
            let rows = replaying ? held.map(\.replayed) : held
            held.removeAll(keepingCapacity: true)
            try await writing?.value
            writing = Task { try await self.withRetries { try await self.store.commit(mutations: rows, offsets: []) } }
        }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            var inFlight = 0, pages = 1
            var (page, settings) = try await read(nil)
            while true {
                // The next page is read while this one's records are made.
                let next = page.count == pageSize ? page.last.map { last in Task { try await read(last.deviceToken) } } : nil
                do {
                    for device in page where NotificationHandler.selects(audience, device, part: part, of: parts) {
                        let own = settings[UserPartKey(user: device.user, part: part)]
                        let timing = sending.timing(of: device, quietHours: own?.quietHours)
                        guard timing.reaches else { continue }
                        // A send to an audience is counted with its commit, never on a user's row.
                        guard sending.admit(device, settings: own).admitted else { continue }
                        if let row = sending.hold(device, timing, badge: nil) {
                            held.append(.putHeldPush(row))
                            if held.count == pageSize { try await writeHeld() }
                            continue
                        }
                        records.append(sending.message(to: device))
                        guard records.count == window else { continue }
                        if inFlight == 2 {
                            try await group.next()
                            inFlight -= 1
                        }
                        let full = records, total = sending.sent
                        group.addTask {
                            try await self.publishWindow(full, of: total)
                            self.streamSteps.withLock { $0 += 1 }
                        }
                        inFlight += 1
                        records.removeAll(keepingCapacity: true)
                    }
                } catch {
                    next?.cancel()
                    _ = try? await writing?.value
                    throw error
                }
                guard let next else { break }
                (page, settings) = try await next.value
                pages += 1
            }
            if !records.isEmpty {
                let rest = records, total = sending.sent
                group.addTask { try await self.publishWindow(rest, of: total) }
            }
            try await writeHeld()
            try await writing?.value
            try await group.waitForAll()
            return pages
        }
    }

    private func commit(_ batch: Decided, expected: [PartitionKey: Int64], held: HeldApp? = nil) async throws {
        let offsets = batch.next.map {
            OffsetUpdate(partition: held?.key(on: $0.key) ?? $0.key, expected: expected[$0.key], next: $0.value, eventTime: batch.times[$0.key])
        }
        let start = ContinuousClock.now
        try await store.commit(mutations: replaying ? batch.mutations.map(\.replayed) : batch.mutations, offsets: offsets)
        unavailableSince.withLock { $0 = nil }
        commitTimer.recordNanoseconds((ContinuousClock.now - start).inNanoseconds)
        batch.tally.report()
    }

    /// Records how long the oldest command of a committed batch waited since its producer wrote
    /// it (its Kafka timestamp; progress marks are not commands): one histogram sample per batch,
    /// and the longest such wait since the processor started. While the processor keeps up, that
    /// is the time records wait at the live edge; after downtime it includes the downtime.
    private func recordApplyDelay(_ records: [DecodedRecord]) {
        var oldest: Date?
        for record in records where !record.isProgressMark {
            if let t = record.timestamp, t < (oldest ?? .distantFuture) { oldest = t }
        }
        guard let oldest else { return }
        let delay = max(0, Date().timeIntervalSince(oldest))
        applyDelayTimer.recordNanoseconds(Int64(delay * 1e9))
        let longest = applyDelayMax.withLock { longest in
            longest = max(longest, delay)
            return longest
        }
        applyDelayMaxGauge.record(longest)
    }

    /// The outbound window for a producer whose local queue holds `queue` records: a quarter of
    /// it, so that the two windows in flight always fit the queue beside what else is queued, and
    /// at most `maxOutboundWindow`.
    static func outboundWindow(forQueue queue: Int) -> Int {
        max(1, min(maxOutboundWindow, queue / 4))
    }

    /// The largest outbound window. A send holds up to three windows of records at once (two
    /// in flight, each also copied into librdkafka's queue, and the next one being made: about
    /// 1 KB a record), and glibc keeps what a window freed in the arena of the thread that made
    /// it for the next: the processor's resident memory follows the window, whatever the send's
    /// size. At 50,000 a broadcast to 100,000 devices had only two windows, never a third, and
    /// one to 1,000,000 peaked 1.3–1.4 times as high; at 10,000 both reach the same, lower
    /// plateau, and publish as fast (`scripts/bench-fanout --fresh-processor --audience all`).
    static let maxOutboundWindow = 10_000

    /// Publishes outbound records until the broker takes them, in windows of `outboundWindow`
    /// records, two at a time: a fan-out larger than the producer's queue is published in parts
    /// that fit it together, and the next window is enqueued while the one before it is still
    /// being acknowledged. A window not acknowledged in full is sent again after a back-off
    /// (the same message ids; the other windows are not), so a record may appear twice, never
    /// zero times, and a failure repeats one window, not the whole fan-out.
    private func publish(_ messages: [OutboundMessage]) async throws {
        guard messages.count > outboundWindow else {
            try await publishWindow(messages, of: messages.count)
            return
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            var inFlight = 0
            for start in stride(from: messages.startIndex, to: messages.endIndex, by: outboundWindow) {
                if inFlight == 2 {
                    try await group.next()
                    inFlight -= 1
                }
                let window = Array(messages[start..<min(start + outboundWindow, messages.endIndex)])
                group.addTask { try await self.publishWindow(window, of: messages.count) }
                inFlight += 1
            }
            try await group.waitForAll()
        }
    }

    private func publishWindow(_ window: [OutboundMessage], of total: Int) async throws {
        var delay = Duration.milliseconds(100)
        while true {
            do {
                try await outbound.publish(window)
                outboundCounter.increment(by: window.count)
                return
            } catch {
                try Task.checkCancellation()
                logger.error("outbound records not acknowledged; retrying their window", metadata: [
                    "records": "\(window.count)", "of": "\(total)", "error": "\(error)", "delay": "\(delay)",
                ])
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    // MARK: - Records the store refuses

    /// Settles a record the store refused after the retries (`failure`, logged). Its decided
    /// failure is stored if the store takes it (a registration becomes `FailedToStoreDevice`); if
    /// the store refuses that too, the record goes to the dead letters with its partition's next
    /// offset, and the partition moves on. Only an unavailable store (or broker) is waited for.
    private func settleRefused(_ record: DecodedRecord, after failure: any Error, expected: [PartitionKey: Int64],
                               held: HeldApp?) async throws {
        logger.error("record could not be stored; recording its failure", metadata: [
            "partition": "\(record.partition)", "offset": "\(record.offset)", "error": "\(failure)",
            "request_id": "\(record.requestId ?? "-")",
        ])
        let reason: any Error
        do {
            let batch = try await withRetries { try await self.decide([record], storeFailed: true) }
            try await withRetries { try await self.commit(batch, expected: expected, held: held) }
            return
        } catch let error as ProjectionStoreError where error.isConflict {
            throw error
        } catch {
            reason = error
        }
        let letter = DeadLetterRow(
            partition: record.partition, offset: record.offset, type: record.type.map { Self.storable($0, limit: 200) },
            reason: Self.storable(String(describing: reason), limit: DeadLetterRow.maxReasonLength),
            requestId: record.requestId.map { Self.storable($0, limit: 200) }, value: record.value, recordedAt: Date())
        let offset = OffsetUpdate(partition: held?.key(on: record.partition) ?? record.partition, expected: expected[record.partition],
                                  next: record.offset + 1,
                                  eventTime: record.eventTime)
        try await retryForever {
            try await self.store.commit(mutations: [.putDeadLetter(letter)], offsets: [offset])
            self.unavailableSince.withLock { $0 = nil }
        }
        Counter(label: "pushline_processor_dead_letters_total", dimensions: [("type", Self.metricType(record))]).increment()
        logger.error("record dead-lettered: the store refused it for good; its partition moves on", metadata: [
            "partition": "\(record.partition)", "offset": "\(record.offset)", "type": "\(record.type ?? "-")",
            "request_id": "\(record.requestId ?? "-")", "reason": "\(letter.reason)",
            "reapply": "pushline dead-letters reapply \(letter.key)",
        ])
    }

    /// A header or message as a text column takes it: no NUL (PostgreSQL text refuses it), bounded.
    private static func storable(_ text: String, limit: Int) -> String {
        String(text.prefix(limit)).replacingOccurrences(of: "\u{0}", with: "\u{FFFD}")
    }

    /// The command type as a metric label: only the types the processor knows, so a forged
    /// header cannot grow the label set.
    private static func metricType(_ record: DecodedRecord) -> String {
        if case .command(let c) = record.outcome { return c.type.rawValue }
        return "unknown"
    }

    /// Applies a dead letter again, live: its outbound records are published and its outbox
    /// jobs enqueued (it was never applied, so none of that happened), and the dead letter is
    /// removed in the same transaction. The partition's offset does not move. One attempt: an
    /// error (the store still refuses it) is thrown and the dead letter stays.
    func reapply(_ letter: DeadLetterRow) async throws -> DeadLetterReapplied {
        // The version header is not kept: the envelope's own `v` decides.
        let record = Self.decode([ConsumedRecord(partition: letter.partition, offset: letter.offset, type: letter.type,
                                                 version: nil, value: letter.value, requestId: letter.requestId)][...], handlers: handlers)[0]
        var batch = try await decide([record])
        batch.next = [:]
        batch.mutations.append(.deleteDeadLetter(letter.key))
        try await publish(batch.outbound)
        try await commit(batch, expected: [:])
        return DeadLetterReapplied(mutations: batch.mutations.count - 1, outbound: batch.outbound.count,
                                   command: record.outcome.summary)
    }

    // MARK: - Retries

    private func markUnavailable() {
        unavailableSince.withLock { if $0 == nil { $0 = .now } }
    }

    /// How long the store has been failing as unavailable, nil when its last call succeeded.
    var storeUnavailableFor: Duration? {
        unavailableSince.withLock { since in since.map { ContinuousClock.now - $0 } }
    }

    private func withRetries<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await body()
            } catch let error as ProjectionStoreError where error.isConflict {
                throw error
            } catch ProjectionStoreError.unavailable(let reason) {
                // The database is away (restart, failover) or aborted the transaction for reasons
                // of its own (deadlock): the same work succeeds later, so wait for it — giving up
                // would record a failure the command does not have.
                let delay = min(Duration.milliseconds(100) * (1 << min(attempt, 6)), .seconds(5))
                markUnavailable()
                logger.error("store unavailable; retrying", metadata: ["attempt": "\(attempt + 1)", "error": "\(reason)", "delay": "\(delay)"])
                try await Task.sleep(for: delay)
                attempt += 1
            } catch {
                guard attempt < retryDelays.count, !Task.isCancelled else { throw error }
                logger.warning("store commit failed; retrying", metadata: ["attempt": "\(attempt + 1)", "error": "\(error)"])
                try await Task.sleep(for: retryDelays[attempt])
                attempt += 1
            }
        }
    }

    /// The store itself is down: wait for it rather than skip anything.
    private func retryForever(_ body: @Sendable () async throws -> Void) async throws {
        var delay = Duration.milliseconds(100)
        while true {
            do {
                return try await body()
            } catch let error as ProjectionStoreError where error.isConflict {
                throw error
            } catch {
                try Task.checkCancellation()
                markUnavailable()
                logger.error("store unavailable; retrying", metadata: ["error": "\(error)", "delay": "\(delay)"])
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }
}

/// What `BatchApplier.reapply` did with a dead letter.
public struct DeadLetterReapplied: Sendable, Equatable {
    /// State changes written (0: the command changed nothing, e.g. it was rejected).
    public var mutations: Int
    public var outbound: Int
    /// What the record decoded as.
    public var command: String
}

/// Per-batch counts, reported to metrics once per batch rather than once per record.
private struct Tally: Sendable {
    var applied: [CommandType: Int] = [:]
    var rejected: [String: Int] = [:]
    var skipped: [String: Int] = [:]
    var tracking: [TrackingOutcome: Int] = [:]

    mutating func count(_ type: CommandType, _ result: HandlerResult) {
        switch result {
        case .applied: applied[type, default: 0] += 1
        case .rejected(let reason): rejected["\(type.rawValue)|\(reason)", default: 0] += 1
        }
    }

    func report() {
        for (type, n) in applied {
            Counter(label: "pushline_processor_commands_applied_total", dimensions: [("type", type.rawValue)]).increment(by: n)
        }
        for (key, n) in rejected {
            let parts = key.split(separator: "|", maxSplits: 1).map(String.init)
            Counter(label: "pushline_processor_commands_rejected_total", dimensions: [("type", parts[0]), ("reason", parts[1])]).increment(by: n)
        }
        for (reason, n) in skipped {
            Counter(label: "pushline_processor_records_skipped_total", dimensions: [("reason", reason)]).increment(by: n)
        }
        for (outcome, n) in tracking {
            switch outcome {
            case .counted, .parked:
                Counter(label: "pushline_processor_tracking_events_total", dimensions: [("outcome", outcome.label)]).increment(by: n)
            case .rejected(let reason):
                Counter(label: "pushline_processor_tracking_rejected_total", dimensions: [("reason", reason.rawValue)])
                    .increment(by: n)
            }
        }
    }
}

extension ProjectionStoreError {
    var isConflict: Bool {
        if case .offsetConflict = self { return true }
        return false
    }
}
