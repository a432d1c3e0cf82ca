import Foundation

// The columns of `TableCatalog.idempotencyKeys`, in catalog order.

extension IdempotencyKeyRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.idempotencyKeys }

    public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.text(scope); columns.text(key); columns.uuid(resourceId); columns.text(requestHash); columns.millis(firstAt)
    }

    public init(columns: inout some ColumnReader) throws {
        self.init(scope: try columns.text(), key: try columns.text(), resourceId: try columns.uuid(), requestHash: try columns.text(),
                  firstAt: try columns.millis())
    }
}
