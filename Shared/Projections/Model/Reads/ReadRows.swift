import Contracts
import Foundation

// The rows of the reads that select part of a table, or more than one; whole rows of one table
// are read by their row type (`CatalogRow`).

/// A tracking row as the state load reads it: its delivery and the event.
public struct TrackedRow: ReadRow {
    public var deliveryId: UUID
    public var event: TrackedEvent

    public init(columns: inout some ColumnReader) throws {
        let row = try RestoredRows.TrackingRow(columns: &columns)
        deliveryId = row.deliveryId
        event = TrackedEvent(appId: row.appId,
                             action: try ProjectionValues.decode(TrackingAction.self, Int(row.action), column: "tracking_events.action"),
                             messageIndex: Int(row.messageIndex), repeats: Int(row.repeats), part: row.part)
    }
}

/// A park mark: when its pair was parked (`TableCatalog.parkedTracking`, every column).
public struct ParkedRow: ReadRow {
    public var pair: TrackingPair
    public var parkedAt: Date

    public init(columns: inout some ColumnReader) throws {
        let deliveryId = try columns.uuid(), appId = try columns.uuid()
        parkedAt = try columns.millis()
        pair = TrackingPair(deliveryId: deliveryId, appId: appId, part: try columns.intValue())
    }
}

/// A device's stored outcome in a delivery, by its key.
public struct OutcomeRow: ReadRow {
    public var key: DeliveryOutcomeKey
    public var outcome: DeliveryOutcome

    public init(columns: inout some ColumnReader) throws {
        key = DeliveryOutcomeKey(appId: try columns.uuid(), deliveryId: try columns.uuid(), messageIndex: try columns.intValue())
        outcome = try columns.raw(DeliveryOutcome.self)
    }
}

/// How many pending notifications a device has (its badge).
public struct PendingCountRow: ReadRow {
    public var device: DeviceKey
    public var count: Int

    public init(columns: inout some ColumnReader) throws {
        device = DeviceKey(appId: try columns.uuid(), deviceToken: try columns.text())
        count = try columns.intValue()
    }
}

/// One part's delivery row with the devices and repeats of one tracked action in it; the action
/// is nil for a part with none.
public struct DeliveryStatsPart: ReadRow {
    public var delivery: DeliveryRow
    public var action: TrackingAction?
    public var devices: Int
    public var repeats: Int

    public init(columns: inout some ColumnReader) throws {
        delivery = try DeliveryRow(columns: &columns)
        if try columns.nextIsNull() {
            action = nil
            devices = 0
            repeats = 0
            return
        }
        let name = columns.column
        action = try ProjectionValues.decode(TrackingAction.self, Int(try columns.int()), column: name)
        devices = try columns.intValue()
        repeats = try columns.intValue()
    }
}

/// A stored value of a partition (its next offset or its event time).
public struct PartitionValueRow: ReadRow {
    public var partition: PartitionKey
    public var value: Int64

    public init(columns: inout some ColumnReader) throws {
        partition = PartitionKey(topic: try columns.text(), partition: Int32(truncatingIfNeeded: try columns.int()))
        value = try columns.int()
    }
}

/// A held app part's row (`HeldApp.key(on:)`); nil `lane` for a name that does not parse.
public struct HeldLaneRow: ReadRow {
    public var lane: HeldLane?

    public init(columns: inout some ColumnReader) throws {
        let key = PartitionKey(topic: try columns.text(), partition: Int32(truncatingIfNeeded: try columns.int()))
        let next = try columns.int(), time = try columns.int()
        lane = HeldLane.parse(key).map { HeldLane(held: $0.held, lane: $0.lane, next: next, eventTime: time) }
    }
}

/// One integer that may be NULL (an aggregate over no rows).
public struct OptionalIntRow: ReadRow {
    public var value: Int64?

    public init(columns: inout some ColumnReader) throws {
        value = try columns.optionalInt()
    }
}

extension DeliveryStatsRow {
    /// The delivery of these parts (`DeliveryRow.summed`) with its counts summed over them; nil for none.
    public init?(parts: [DeliveryStatsPart]) {
        var rows: [Int: DeliveryRow] = [:]
        var counts: [TrackingAction: Int] = [:]
        var repeats = 0
        for part in parts {
            rows[part.delivery.part] = part.delivery
            guard let action = part.action else { continue }
            counts[action, default: 0] += part.devices
            repeats += part.repeats
        }
        guard let delivery = DeliveryRow.summed(rows.values) else { return nil }
        self.init(delivery: delivery, impressions: counts[.impression] ?? 0, clicks: counts[.click] ?? 0,
                  opens: counts[.open] ?? 0, repeatsIgnored: repeats)
    }
}

/// How many devices of an app have one combination of the properties an audience reads
/// (`ReaderReads.devicePropertyCounts`).
public struct DevicePropertiesCount: ReadRow {
    public var platform: Platform
    public var locale: String?
    public var timeZone: String?
    public var appVersion: String?
    public var tags: DeviceLabels
    public var topics: DeviceLabels
    public var count: Int

    /// The properties of `device`, counted `count` times.
    public init(_ device: DeviceRow, count: Int) {
        (platform, locale, timeZone, appVersion) = (device.platform, device.locale, device.timeZone, device.appVersion)
        (tags, topics, self.count) = (device.tags, device.topics, count)
    }

    public init(columns: inout some ColumnReader) throws {
        platform = try columns.raw(Platform.self)
        locale = try columns.optionalText()
        timeZone = try columns.optionalText()
        appVersion = try columns.optionalText()
        tags = DeviceLabels(stored: try columns.optionalText())
        topics = DeviceLabels(stored: try columns.optionalText())
        count = try columns.intValue()
    }
}
