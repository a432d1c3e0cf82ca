import Contracts
import Foundation

// The columns of `TableCatalog.apps` and `TableCatalog.apiTokens`, in catalog order.

extension AppRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.apps }

    public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.uuid(appId); columns.uuid(orgId); columns.text(name); columns.text(callbackUrl)
        columns.text(try ProjectionValues.headersJSON(callbackHeaders)); columns.int(webhookRetries); columns.millis(createdAt)
        columns.text(try ProjectionValues.pushCredentialsJSON(pushCredentials)); columns.int(part)
        columns.bool(identityRequired); columns.text(try ProjectionValues.sealedSecretJSON(identitySecret))
        columns.text(webhookHosts?.joined(separator: ",")); columns.int(users); columns.text(timeZone); columns.text(quietHours)
        columns.text(frequencyCaps); columns.int(quietUsers); columns.int(countedUsers); columns.text(countedSends)
    }

    public init(columns: inout some ColumnReader) throws {
        self.init(appId: try columns.uuid(), orgId: try columns.uuid(), name: try columns.text(), callbackUrl: try columns.optionalText(),
                  callbackHeaders: try columns.headers(), webhookRetries: try columns.intValue(), createdAt: try columns.millis(),
                  pushCredentials: try ProjectionValues.pushCredentials(json: try columns.optionalText()),
                  // Changelog entries from before step 19 end before the identity columns: not required, no secret;
                  // from before step 20, before the webhook hosts: no list; from before step 21, before the users: none.
                  part: Int(try columns.optionalInt() ?? 0), identityRequired: try columns.nextIsNull() ? false : columns.bool(),
                  identitySecret: try ProjectionValues.sealedSecret(json: try columns.optionalText(), column: "apps.identity_secret"),
                  webhookHosts: try columns.optionalText().map { $0.split(separator: ",").map(String.init) },
                  users: Int(try columns.optionalInt() ?? 0),
                  // From before step 31: no zone, no quiet hours.
                  timeZone: try columns.optionalText(), quietHours: try columns.optionalText(),
                  frequencyCaps: try columns.optionalText(), quietUsers: Int(try columns.optionalInt() ?? 0),
                  // From before step 32: no sends counted for the app.
                  countedUsers: Int(try columns.optionalInt() ?? 0), countedSends: try columns.optionalText())
    }
}

extension ApiTokenRow: CatalogRow {
    public static var table: CatalogTable { TableCatalog.apiTokens }

    public func writeColumns(to columns: inout some ColumnWriter) throws {
        columns.uuid(tokenId); columns.uuid(appId); columns.text(tokenHash); columns.bool(revoked); columns.millis(createdAt)
        columns.text(ProjectionValues.scopesColumn(scopes)); columns.int(part)
    }

    public init(columns: inout some ColumnReader) throws {
        self.init(tokenId: try columns.uuid(), appId: try columns.uuid(), tokenHash: try columns.text(), revoked: try columns.bool(),
                  createdAt: try columns.millis(), scopes: try ProjectionValues.scopes(column: try columns.optionalText()),
                  part: Int(try columns.optionalInt() ?? 0))
    }
}
