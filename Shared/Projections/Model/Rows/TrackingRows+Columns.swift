import Foundation

// The columns of `TableCatalog.trackingEvents`, in catalog order.

extension RestoredRows.TrackingRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.trackingEvents }

    @inlinable public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.uuid(deliveryId); columns.uuid(appId); columns.int(Int64(action)); columns.int(messageIndex); columns.int(repeats)
        columns.int(part)
    }

    public init(columns: inout some ColumnReader) throws {
        self.init(deliveryId: try columns.uuid(), appId: try columns.uuid(), action: Int32(truncatingIfNeeded: try columns.int()),
                  messageIndex: try columns.int(), repeats: try columns.int(), part: Int(try columns.optionalInt() ?? 0))
    }
}
