import Foundation

// The columns of `TableCatalog.outbox`, in catalog order (the lease is the stores' own).

extension OutboxJob: CatalogRow {
    public static var table: CatalogTable { TableCatalog.outbox }

    public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.text(id); columns.text(kind); columns.uuid(appId); columns.text(url); columns.text(try ProjectionValues.headersJSON(headers))
        columns.bytes(body); columns.int(maxAttempts); columns.int(attempts); columns.millis(nextAttemptAt); columns.text(state.rawValue)
        columns.int(lastStatus); columns.text(lastError); columns.millis(createdAt)
    }

    public init(columns: inout some ColumnReader) throws {
        self.init(id: try columns.text(), kind: try columns.text(), appId: try columns.optionalUUID(), url: try columns.text(),
                  headers: try columns.headers(), body: try columns.bytes(), maxAttempts: try columns.intValue(),
                  attempts: try columns.intValue(), nextAttemptAt: try columns.millis(), state: try columns.raw(OutboxState.self),
                  lastStatus: try columns.optionalInt().map(Int.init), lastError: try columns.optionalText(), createdAt: try columns.millis())
    }
}
