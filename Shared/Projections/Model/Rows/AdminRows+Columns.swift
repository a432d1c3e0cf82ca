import Foundation

// The columns of `TableCatalog.adminTokens` and `TableCatalog.auditLog`, in catalog order.

extension AdminTokenRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.adminTokens }

    public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.uuid(adminTokenId); columns.text(name); columns.text(tokenHash); columns.bool(revoked); columns.millis(createdAt)
        columns.millis(revokedAt)
    }

    public init(columns: inout some ColumnReader) throws {
        self.init(adminTokenId: try columns.uuid(), name: try columns.text(), tokenHash: try columns.text(), revoked: try columns.bool(),
                  createdAt: try columns.millis(), revokedAt: try columns.optionalMillis())
    }
}

extension AuditEntryRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.auditLog }

    public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.uuid(commandId); columns.millis(at); columns.text(type); columns.uuid(appId); columns.uuid(actorId)
        columns.text(actorName); columns.text(requestId); columns.text(outcome); columns.text(reason); columns.text(changes)
    }

    public init(columns: inout some ColumnReader) throws {
        self.init(commandId: try columns.uuid(), at: try columns.millis(), type: try columns.text(), appId: try columns.optionalUUID(),
                  actorId: try columns.optionalUUID(), actorName: try columns.optionalText(), requestId: try columns.optionalText(),
                  outcome: try columns.text(), reason: try columns.optionalText(), changes: try columns.text())
    }
}
