import Contracts
import Foundation

// The columns of `TableCatalog.pendingNotifications`, `.acks`, `.deliveries` and
// `.deliveryOutcomes`, in catalog order.

extension PendingNotificationRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.pendingNotifications }

    @inlinable public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.uuid(appId); columns.text(deviceToken); columns.text(notificationId); columns.uuid(deliveryId)
        columns.millis(sentAt); columns.text(text); columns.text(businessId)
    }

    @inlinable public init(columns: inout some ColumnReader) throws {
        self.init(appId: try columns.uuid(), deviceToken: try columns.text(), notificationId: try columns.text(),
                  deliveryId: try columns.uuid(), sentAt: try columns.millis(), text: try columns.text(),
                  businessId: try columns.optionalText())
    }
}

extension AckRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.acks }

    @inlinable public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.uuid(appId); columns.text(deviceToken); columns.text(notificationId); columns.text(businessId); columns.millis(ackedAt)
    }

    @inlinable public init(columns: inout some ColumnReader) throws {
        self.init(appId: try columns.uuid(), deviceToken: try columns.text(), notificationId: try columns.text(),
                  businessId: try columns.optionalText(), ackedAt: try columns.millis())
    }
}

extension DeliveryRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.deliveries }

    @inlinable public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.uuid(appId); columns.uuid(deliveryId); columns.text(kind.rawValue); columns.bool(managed); columns.bool(tracking)
        columns.int(sent); columns.millis(createdAt); columns.int(delivered); columns.int(failed); columns.int(unregistered)
        columns.text(idempotencyKey); columns.text(requestHash); columns.int(duplicates); columns.int(conflicts); columns.int(part)
        columns.text(sentByLocale.map(LocaleCounts.stored)); columns.text(outcomesByLocale.map(LocaleCounts.stored)); columns.int(expired)
        columns.millis(sendAt); columns.text(schedule?.rawValue); columns.text(scheduledCommand)
        columns.text(sendAtLocal); columns.int(held); columns.int(dropped); columns.int(cancelled)
        columns.text(Self.wavesText(waves))
        columns.int(capped)
    }

    @inlinable public init(columns: inout some ColumnReader) throws {
        self.init(appId: try columns.uuid(), deliveryId: try columns.uuid(), kind: try columns.raw(NotificationKind.self),
                  managed: try columns.bool(), tracking: try columns.bool(), sent: try columns.intValue(), createdAt: try columns.millis(),
                  delivered: try columns.intValue(), failed: try columns.intValue(), unregistered: try columns.intValue(),
                  idempotencyKey: try columns.optionalText(), requestHash: try columns.optionalText(),
                  duplicates: try columns.intValue(), conflicts: try columns.intValue(), part: Int(try columns.optionalInt() ?? 0),
                  sentByLocale: try columns.optionalText().map(LocaleCounts.read),
                  outcomesByLocale: try columns.optionalText().map(LocaleCounts.outcomes),
                  // A changelog entry written before the column has none.
                  expired: Int(try columns.optionalInt() ?? 0),
                  sendAt: try columns.optionalMillis(), schedule: try columns.optionalRaw(ScheduleState.self),
                  scheduledCommand: try columns.optionalText(),
                  // From before step 31: none held.
                  sendAtLocal: try columns.optionalText(), held: Int(try columns.optionalInt() ?? 0),
                  dropped: Int(try columns.optionalInt() ?? 0), cancelled: Int(try columns.optionalInt() ?? 0),
                  waves: try columns.optionalText().map(Self.waves) ?? [], capped: Int(try columns.optionalInt() ?? 0))
    }

    /// The `waves` column: milliseconds since 1970, joined by commas; NULL for none.
    @usableFromInline static func wavesText(_ waves: [Date]) -> String? {
        waves.isEmpty ? nil : waves.map { String(ProjectionValues.millis($0)) }.joined(separator: ",")
    }

    @usableFromInline static func waves(_ text: String) throws -> [Date] {
        try text.split(separator: ",").map { part in
            guard let ms = Int64(part) else { throw ProjectionStoreError.database("deliveries.waves is not a list of times: \(text)") }
            return ProjectionValues.date(millis: ms)
        }
    }
}

extension UserSettingsRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.userSettings }

    @inlinable public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.uuid(appId); columns.text(userId); columns.int(part); columns.text(quietHours); columns.text(capped)
    }

    @inlinable public init(columns: inout some ColumnReader) throws {
        self.init(appId: try columns.uuid(), userId: try columns.text(), part: try columns.intValue(), quietHours: try columns.optionalText(),
                  capped: try columns.optionalText())
    }
}

extension CountedSendRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.countedSends }

    public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.uuid(appId); columns.int(part); columns.text(delivery); columns.bytes(CountedSend.bytes(users))
    }

    public init(columns: inout some ColumnReader) throws {
        let (appId, part, delivery) = (try columns.uuid(), try columns.intValue(), try columns.text())
        guard let users = CountedSend.users(try columns.bytes()) else {
            throw ProjectionStoreError.database("counted_sends.users is not a whole number of 8-byte digests")
        }
        self.init(appId: appId, part: part, delivery: delivery, users: users)
    }
}

extension HeldPushRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.heldPushes }

    @inlinable public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.uuid(appId); columns.uuid(deliveryId); columns.int(part); columns.text(deviceToken); columns.text(userId)
        columns.millis(releaseAt); columns.millis(dueAt); columns.int(badge)
    }

    @inlinable public init(columns: inout some ColumnReader) throws {
        self.init(appId: try columns.uuid(), deliveryId: try columns.uuid(), part: try columns.intValue(), deviceToken: try columns.text(),
                  userId: try columns.text(), releaseAt: try columns.millis(), dueAt: try columns.millis(),
                  badge: try columns.optionalInt().map { Int($0) })
    }
}

extension DeliveryOutcomeRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.deliveryOutcomes }

    @inlinable public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.uuid(appId); columns.uuid(deliveryId); columns.int(messageIndex); columns.text(deviceToken)
        columns.text(outcome.rawValue); columns.text(reason); columns.millis(reportedAt)
    }

    @inlinable public init(columns: inout some ColumnReader) throws {
        self.init(appId: try columns.uuid(), deliveryId: try columns.uuid(), messageIndex: try columns.intValue(),
                  deviceToken: try columns.text(), outcome: try columns.raw(DeliveryOutcome.self), reason: try columns.optionalText(),
                  reportedAt: try columns.millis())
    }
}

/// Counts per locale as a column keeps them: `locale=count` pairs in locale order, joined by
/// commas (`default=3,pt=2,pt-BR=7`). Neither a locale nor `default` has `=` or `,`.
/// A delivery's counts per locale as stored: `locale=count` pairs (`sent_by_locale`) or
/// `locale=delivered/failed/unregistered[/expired]` (`outcomes_by_locale`; the expired count
/// only when there is one, so counts from before it read and write alike), in locale order,
/// joined by commas.
public enum LocaleCounts {
    public static func stored(_ counts: [String: OutcomeCounts]) -> String {
        counts.keys.sorted().map { key in
            let c = counts[key]!
            return "\(key)=\(c.delivered)/\(c.failed)/\(c.unregistered)" + (c.expired == 0 ? "" : "/\(c.expired)")
        }.joined(separator: ",")
    }

    public static func outcomes(_ text: String) -> [String: OutcomeCounts] {
        var counts: [String: OutcomeCounts] = [:]
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let numbers = parts[1].split(separator: "/").compactMap { Int($0) }
            guard numbers.count == 3 || numbers.count == 4 else { continue }
            counts[String(parts[0])] = OutcomeCounts(delivered: numbers[0], failed: numbers[1], unregistered: numbers[2],
                                                     expired: numbers.count == 4 ? numbers[3] : 0)
        }
        return counts
    }

    public static func stored(_ counts: [String: Int]) -> String {
        counts.keys.sorted().map { "\($0)=\(counts[$0]!)" }.joined(separator: ",")
    }

    public static func read(_ text: String) -> [String: Int] {
        var counts: [String: Int] = [:]
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let count = Int(parts[1]) { counts[String(parts[0])] = count }
        }
        return counts
    }
}
