import Contracts
import Foundation
import Kafka
import Logging
import OutboundRendering
import Settings
import WireCodec

/// A deterministic mixed command stream for scale-out, replay and benchmark runs: the same
/// seed and sizes give the same commands, ids and timestamps byte for byte, so that stores
/// built from it by different runs can be compared row for row.
///
/// It comes in four phases — admin, registration (registrations, then cleanups of some of
/// them), notification (managed, tracked sends to groups of users, and acknowledgements by
/// some of their devices), tracking (reports, a few with broadlogIds past the send or for a
/// delivery no send has) — one per topic. A run that applies each phase before producing the
/// next gets the same tables whatever the partition interleaving: within a phase, no
/// command's outcome depends on another's order across partitions.
public struct MixedStream: Sendable {
    public struct Sizes: Sendable {
        public var users: Int
        /// One user in `secondDeviceEvery` has a second device.
        public var secondDeviceEvery = 4
        /// One user in `cleanupEvery` is cleaned up (alternately one device and all of them).
        public var cleanupEvery = 10
        public var sends: Int
        public var usersPerSend: Int
        /// Acknowledgements per send (by devices of its users).
        public var acksPerSend: Int
        public var trackingCommands: Int
        public var eventsPerTracking = 3

        public init(users: Int, sends: Int, usersPerSend: Int, acksPerSend: Int, trackingCommands: Int) {
            self.users = users
            self.sends = sends
            self.usersPerSend = usersPerSend
            self.acksPerSend = acksPerSend
            self.trackingCommands = trackingCommands
        }

        /// `commands` commands (at least a few hundred) in the proportions of a busy day: about
        /// 45% registrations, 5% cleanups, 1% sends, 19% acknowledgements, and tracking reports
        /// for the rest.
        public static func about(_ commands: Int) -> Sizes {
            let sends = max(1, commands / 100)
            var sizes = Sizes(users: commands * 45 / 100 * 4 / 5, sends: sends, usersPerSend: 20,
                              acksPerSend: commands * 19 / 100 / sends, trackingCommands: 0)
            sizes.trackingCommands = max(0, commands - sizes.commandsBeforeTracking)
            return sizes
        }

        /// The commands of the admin, registration and notification phases.
        public var commandsBeforeTracking: Int {
            let registrations = users + (users + secondDeviceEvery - 1) / secondDeviceEvery
            let cleanups = (users + cleanupEvery - 1) / cleanupEvery
            return 1 + registrations + cleanups + sends * (1 + acksPerSend)
        }
    }

    /// What one part of a split of one app reads (`emulatedPart`). In the splits by user, a user
    /// is in part CRC-32(user id) mod `count`, and a part keeps the registrations and cleanups of
    /// its users, each send restricted to its users (a send with none is left out). Every split
    /// keeps every `count`-th tracking report.
    public enum Emulation: String, Sendable {
        /// A split by user. Every other part's registration reaches this part too, as an
        /// acknowledgement of a device it does not hold (one key lookup, like a claim of the
        /// token), and every acknowledgement reaches every part (it names a token, not its user).
        case user
        /// A split by user in which a part reads nothing of the others: the acknowledgements of
        /// its own users' devices only, no claims. What an ideal split would cost.
        case ideal
        /// A split by device token: a device is in part CRC-32(token) mod `count`, so a token
        /// moving between users stays in its part. A part keeps the registrations, cleanups of one
        /// token and acknowledgements of its devices; every send to users and every cleanup of a
        /// user's devices reaches every part (each renders or removes the devices it holds).
        case token
    }

    public enum Phase: String, CaseIterable, Sendable {
        case admin, registration, notification, tracking
    }

    private static let phaseSpan = 100_000_000

    /// Later than every command's `at`: where progress marks put the partitions once the whole
    /// stream is written (`produceProgressMarks`).
    public var end: Date { base.addingTimeInterval(Double(Phase.allCases.count * Self.phaseSpan) / 1000) }

    public let sizes: Sizes
    public let topics: Topics
    public let seed: UInt64
    /// With a value, the stream is only what one part of the app would read if the app were split
    /// into `count` parts (a benchmark's question: what would one processor of such a split
    /// apply?). See `Emulation`.
    public var emulatedPart: (index: Int, count: Int, emulation: Emulation)?
    /// The parts the app is split into (docs/ARCHITECTURE.md#one-app-in-parts): each command is
    /// written to every part it concerns (`EncodedCommand.parts`), and each tracking report names
    /// devices of one part, any. One part, the default, is the stream as before parts.
    public var parts: AppParts = .one
    public let orgId: UUID
    public let appId: UUID
    /// The app's API token (its hash is in the admin phase).
    public let apiToken: String
    /// The time the stream's first phase starts at.
    private let base: Date

    /// `base` defaults to a fixed time, so that a seed always gives the same bytes. A stream
    /// applied by live processors starts near the present instead: their progress marks carry
    /// the clock, and a stream dated long before them would have its statuses and acks pruned as
    /// soon as a mark passed (docs/ARCHITECTURE.md#bounded-growth).
    public init(seed: UInt64, sizes: Sizes, topics: Topics = Topics(prefix: "pushline."),
                base: Date = Date(timeIntervalSince1970: 1_790_000_000)) {
        self.seed = seed
        self.base = base
        self.sizes = sizes
        self.topics = topics
        var random = SplitMix64(seed: seed)
        orgId = random.uuid()
        appId = random.uuid()
        apiToken = "pl_mixed_" + String(random.next(), radix: 16)
    }

    /// The commands of one phase, in production order.
    public func commands(_ phase: Phase) throws -> [EncodedCommand] {
        let encoder = WireJSON.encoder()
        var random = SplitMix64(seed: seed ^ UInt64(Phase.allCases.firstIndex(of: phase)! + 1) &* 0x9E37_79B9)
        var out: [EncodedCommand] = []
        // Each phase's commands come after the previous phase's (a phase spans at most 10^8 ms).
        var clock = Phase.allCases.firstIndex(of: phase)! * Self.phaseSpan
        func add<C: Command>(_ command: C, keep: Bool = true) throws {
            clock += 1
            let id = random.uuid()
            guard keep else { return }
            out += try EncodedCommand.parts(of: command, parts: parts, topics: topics, id: id, at: base.addingTimeInterval(Double(clock) / 1000),
                                            encoder: encoder)
        }
        /// Whether user `n` is in the emulated part (every user is, without one).
        func mine(_ n: Int) -> Bool {
            guard let part = emulatedPart else { return true }
            return Int(CRC32.checksum(Self.userId(n).utf8) % UInt32(part.count)) == part.index
        }
        /// Whether device `token` is in the emulated part, in a split by token.
        func mine(token: String) -> Bool {
            guard let part = emulatedPart else { return true }
            return Int(CRC32.checksum(token.utf8) % UInt32(part.count)) == part.index
        }
        let byUser = emulatedPart?.emulation == .user
        let byToken = emulatedPart?.emulation == .token
        let tokenHash = ApiTokens.hash(apiToken)
        switch phase {
        case .admin:
            try add(AppCreated(orgId: orgId, mobileAppId: appId, name: "mixed \(seed)", tokenId: random.uuid(), tokenHash: tokenHash))
        case .registration:
            for user in 0..<sizes.users {
                for device in devices(ofUser: user) {
                    let registration = DeviceRegistrationRequested(
                        registrationRequestId: random.uuid(), orgId: orgId, mobileAppId: appId, userId: Self.userId(user),
                        platform: device.platform, deviceToken: device.token, apiTokenHash: tokenHash, trackStatus: true, callback: nil)
                    if byToken ? mine(token: device.token) : mine(user) {
                        try add(registration)
                    } else {
                        try add(NotificationAcknowledged(mobileAppId: appId, notificationId: "claim", deviceToken: device.token),
                                keep: byUser)
                    }
                }
            }
            for user in stride(from: 0, to: sizes.users, by: sizes.cleanupEvery) {
                let all = (user / sizes.cleanupEvery) % 2 == 1
                try add(DeviceCleanupRequested(orgId: orgId, mobileAppId: appId, userId: Self.userId(user),
                                               deviceToken: all ? nil : devices(ofUser: user)[0].token, apiTokenHash: tokenHash),
                        keep: byToken ? all || mine(token: devices(ofUser: user)[0].token) : mine(user))
            }
        case .notification:
            for send in 0..<sizes.sends {
                let users = sendUsers(send)
                let targeted = byToken ? users : users.filter(mine)
                try add(NotificationRequested(deliveryId: deliveryId(send), mobileAppId: appId,
                                              target: NotificationTarget(userIds: targeted.map(Self.userId)),
                                              content: NotificationContent(title: "send \(send)", body: "body \(send)"),
                                              managed: true, businessId: "b-\(send)", tracking: true),
                        keep: !targeted.isEmpty)
                for _ in 0..<sizes.acksPerSend {
                    let user = users[random.next(users.count)]
                    let device = devices(ofUser: user)[0]
                    try add(NotificationAcknowledged(mobileAppId: appId, notificationId: deliveryId(send).uuidString.lowercased(),
                                                     deviceToken: device.token),
                            keep: byToken ? mine(token: device.token) : byUser || mine(user))
                }
            }
        case .tracking:
            let actions: [TrackingAction] = [.impression, .impression, .click, .open]
            for n in 0..<sizes.trackingCommands {
                // One report in 50 is for a delivery no send has (parked for good).
                let unknown = n % 50 == 49
                let delivery = unknown ? random.uuid() : deliveryId(random.next(max(1, sizes.sends)))
                // An SDK reports for its own device, so a report's events are of one part (here: any devices of it).
                let part = parts.count == 1 ? 0 : random.next(parts.count)
                let events = (0..<sizes.eventsPerTracking).map { _ in
                    // Indices up to a few past the send's devices: those are foreign and rejected.
                    let index = AppParts.messageIndex(place: random.next(sizes.usersPerSend * 2), part: part)
                    return TrackingEvent(broadlogId: MessageId.make(deliveryId: delivery, index: index), action: actions[random.next(actions.count)])
                }
                try add(TrackingReported(mobileAppId: appId, deliveryId: delivery, events: events),
                        keep: emulatedPart.map { n % $0.count == $0.index } ?? true)
            }
        }
        return out
    }

    /// Every phase's commands.
    public func commandsByPhase() throws -> [Phase: [EncodedCommand]] {
        var phases: [Phase: [EncodedCommand]] = [:]
        for phase in Phase.allCases { phases[phase] = try commands(phase) }
        return phases
    }

    public static func userId(_ n: Int) -> String { "u-\(n)" }

    /// The devices of user `n`: an iOS one, and every `secondDeviceEvery`-th user an Android one.
    public func devices(ofUser n: Int) -> [(platform: Platform, token: String)] {
        let ios = (Platform.ios, String(format: "%016llx", seed) + String(repeating: "0", count: 32) + String(format: "%016x", n))
        guard n % sizes.secondDeviceEvery == 0 else { return [ios] }
        let android = (Platform.android, "fcm:" + String(format: "%016llx", seed) + String(repeating: "A", count: 116) + "-" + String(format: "%015d", n))
        return [ios, android]
    }

    public func deliveryId(_ send: Int) -> UUID {
        var random = SplitMix64(seed: seed &+ 0xD1_5EED &+ UInt64(send))
        return random.uuid()
    }

    /// The users of send `n`: `usersPerSend` consecutive users from a spread start.
    func sendUsers(_ n: Int) -> [Int] {
        let start = (n &* 7919) % max(1, sizes.users)
        return (0..<min(sizes.usersPerSend, sizes.users)).map { (start + $0) % sizes.users }
    }

    /// Appends a progress mark at `at` to every partition of `topics`, as a live processor does
    /// once nothing more arrives, so that a rebuild of a log written by this tool alone applies
    /// it to its end. Returns how many it appended.
    @discardableResult
    public static func produceProgressMarks(at: Date, topics: [String], partitions: Int, brokers: String) async throws -> Int {
        let producer = try KafkaProducer(configuration: producerConfiguration(brokers: brokers), logger: Logger(label: "mixed-stream"))
        let records = topics.flatMap { topic in
            (0..<Int32(partitions)).map { partition in
                KafkaProducerRecord(topic: topic, key: nil, value: ProgressMark.value(at: at), headers: ProgressMark.headers.fields,
                                    partition: partition)
            }
        }
        do {
            _ = try await producer.send(records)
        } catch {
            await producer.shutdown()
            throw error
        }
        await producer.shutdown()
        return records.count
    }

    /// A test tool's producer: what it writes must arrive, however slowly a loaded machine's broker
    /// answers, so it waits for the broker far longer than a service's five seconds.
    static func producerConfiguration(brokers: String) -> KafkaProducerConfiguration {
        var config = KafkaProducerConfiguration()
        config.bootstrapServers = brokers
        config.deliveryTimeout = .seconds(120)
        return config
    }

    /// Produces encoded commands (this stream's or any other) in batches of 5,000, each batch
    /// acknowledged by the broker. A command of an app's part other than 0 goes to its part's
    /// partition of topics of `partitions` partitions (`EncodedCommand.partition`).
    public static func produce(_ commands: [EncodedCommand], brokers: String, partitions: Int = SharedSettings().partitions) async throws {
        let producer = try KafkaProducer(configuration: producerConfiguration(brokers: brokers), logger: Logger(label: "mixed-stream"))
        do {
            for start in stride(from: 0, to: commands.count, by: 5_000) {
                let records = commands[start..<min(start + 5_000, commands.count)].map { c in
                    KafkaProducerRecord(topic: c.topic, key: c.key, value: c.value,
                                        headers: RecordHeaders(type: c.type, version: c.version).fields,
                                        partition: c.assignedPartition(partitions: partitions))
                }
                _ = try await producer.send(records)
            }
        } catch {
            await producer.shutdown()
            throw error
        }
        await producer.shutdown()
    }
}

/// SplitMix64: small, fast and the same on every platform.
public struct SplitMix64: Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in 0..<bound.
    public mutating func next(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// A version-4-shaped UUID from the next 128 bits.
    public mutating func uuid() -> UUID {
        var bytes = [UInt8](repeating: 0, count: 16)
        let a = next(), b = next()
        for i in 0..<8 {
            bytes[i] = UInt8(truncatingIfNeeded: a >> (8 * UInt64(i)))
            bytes[8 + i] = UInt8(truncatingIfNeeded: b >> (8 * UInt64(i)))
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
