import Contracts
import Foundation

// The columns of `TableCatalog.devices` and `TableCatalog.registrationStatus`, in catalog order.

extension DeviceRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.devices }

    @inlinable public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.uuid(appId); columns.text(deviceToken); columns.text(userId); columns.text(platform.rawValue)
        columns.int(version); columns.millis(updatedAt); columns.text(timeZone); columns.millis(badgesSince); columns.int(badges)
        columns.text(locale); columns.text(appVersion); columns.text(tags.stored); columns.text(topics.stored)
    }

    @inlinable public init(columns: inout some ColumnReader) throws {
        self.init(appId: try columns.uuid(), deviceToken: try columns.text(), userId: try columns.text(),
                  platform: try columns.raw(Platform.self), version: try columns.int(), updatedAt: try columns.millis(),
                  timeZone: try columns.optionalText(), badgesSince: try columns.optionalMillis(),
                  badges: Int(try columns.optionalInt() ?? 0), locale: try columns.optionalText(),
                  appVersion: try columns.optionalText(), tags: DeviceLabels(stored: try columns.optionalText()),
                  topics: DeviceLabels(stored: try columns.optionalText()))
    }
}

extension RegistrationStatusRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.registrationStatus }

    @inlinable public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.uuid(requestId); columns.uuid(appId); columns.text(status.rawValue); columns.text(failureReason?.rawValue)
        columns.millis(decidedAt); columns.int(part)
    }

    @inlinable public init(columns: inout some ColumnReader) throws {
        self.init(requestId: try columns.uuid(), appId: try columns.uuid(), status: try columns.raw(DeviceRegistrationAPI.Status.self),
                  failureReason: try columns.optionalRaw(DeviceRegistrationAPI.FailureReason.self), decidedAt: try columns.millis(),
                  part: Int(try columns.optionalInt() ?? 0))
    }
}
