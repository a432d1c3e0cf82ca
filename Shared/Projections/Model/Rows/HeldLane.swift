import Foundation

/// One part of one app whose commands a live processor applies beside its loop, after a send
/// to an audience of that part (docs/ARCHITECTURE.md#a-send-read-in-pages-holds-only-its-app).
public struct HeldApp: Hashable, Sendable, CustomStringConvertible {
    public var app: UUID
    public var part: Int

    public init(app: UUID, part: Int) {
        self.app = app
        self.part = part
    }

    /// The row that stores where this app part stands on `lane` while it is held: an offset row
    /// beside the partitions' own, under a name no Kafka topic can have (a topic name has no
    /// `/`), so that its compare-and-set, changelog entry and restore are the offsets' own.
    public func key(on lane: PartitionKey) -> PartitionKey {
        PartitionKey(topic: "\(Self.prefix)\(app.uuidString.lowercased())/\(part)/\(lane.topic)", partition: lane.partition)
    }

    public var description: String { "\(app.uuidString.lowercased())/\(part)" }

    /// What every held row's name starts with.
    public static let prefix = "held/"
}

/// Where a held app part stands on one lane (a topic's partition): its records of that lane
/// before `next` are applied, those from `next` on are not, whatever the partition's own
/// offset says; `eventTime` is the lane's event time just before `next`.
public struct HeldLane: Hashable, Sendable {
    public var held: HeldApp
    public var lane: PartitionKey
    public var next: Int64
    public var eventTime: Int64

    public init(held: HeldApp, lane: PartitionKey, next: Int64, eventTime: Int64) {
        self.held = held
        self.lane = lane
        self.next = next
        self.eventTime = eventTime
    }

    /// The held app part and lane a stored row's key names; nil for a partition's own row.
    public static func parse(_ key: PartitionKey) -> (held: HeldApp, lane: PartitionKey)? {
        guard key.topic.hasPrefix(HeldApp.prefix) else { return nil }
        let fields = key.topic.dropFirst(HeldApp.prefix.count).split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count == 3, let app = UUID(uuidString: String(fields[0])), let part = Int(fields[1]), !fields[2].isEmpty else {
            return nil
        }
        return (HeldApp(app: app, part: part), PartitionKey(topic: String(fields[2]), partition: key.partition))
    }
}

extension OffsetUpdate {
    /// The `next` of an update that deletes its row (a held app part released): a stored offset
    /// is never negative.
    public static let deleted: Int64 = -1

    public var deletes: Bool { next < 0 }
}
