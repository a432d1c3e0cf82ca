import Contracts
import Foundation
import WireCodec

/// How `pushline` prints: text for people, `--json` for scripts (sorted keys, one document).
enum Output {
    /// The `--json` answer of a change the admin API accepted (202) without a body.
    struct Accepted: Encodable {
        var accepted = true
        var mobileAppId: UUID
        var tokenId: UUID?
    }

    /// The `--json` answer of an admin token revocation.
    struct AdminTokenRevoked: Encodable {
        var revoked = true
        @LowercaseUUID var id: UUID
    }

    /// One audit entry as a table row: the actor by name (and id for a named token), the outcome
    /// with its reason, the changes as their JSON.
    static func auditRow(_ entry: AdminAPI.AuditEntry) -> [String] {
        let actor = entry.actor.map { actor in actor.id.map { "\(actor.name) (\($0.lowercasedString))" } ?? actor.name } ?? "-"
        let changes = (try? WireJSON.encoder().encode(entry.changes)).map { String(decoding: $0, as: UTF8.self) } ?? "-"
        return [RFC3339.string(from: entry.at), entry.type, entry.mobileAppId?.lowercasedString ?? "-", actor,
                entry.reason.map { "\(entry.outcome): \($0)" } ?? entry.outcome, entry.requestId ?? "-", changes]
    }

    static func json(_ value: some Encodable) throws {
        let encoder = WireJSON.encoder()
        encoder.outputFormatting.insert(.prettyPrinted)
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// An app as text. Callback header values are never shown (the admin API answers them
    /// `redacted`: they are often credentials of the app's backend).
    static func describe(_ app: AdminAPI.AppView) -> String {
        var lines = [
            "mobileAppId      \(app.mobileAppId)",
            "orgId            \(app.orgId)",
            "name             \(app.name)",
            "callbackUrl      \(app.callbackUrl ?? "-")",
            "callbackHeaders  \(app.callbackHeaders.isEmpty ? "-" : app.callbackHeaders.keys.sorted().joined(separator: ", ") + " (values redacted)")",
            "webhookRetries   \(app.webhookRetries)",
            "webhookHosts     \(app.webhookHosts.map { $0.joined(separator: ", ") } ?? "- (status webhooks OPEN: the client token chooses their URL)")",
        ]
        if app.tokens.isEmpty { lines.append("tokens           -") }
        for (index, token) in app.tokens.enumerated() {
            lines.append((index == 0 ? "tokens           " : "                 ") + describe(token))
        }
        lines.append("apns             " + (app.pushCredentials?.apns.map(describe) ?? "-"))
        lines.append("fcm              " + (app.pushCredentials?.fcm.map(describe) ?? "-"))
        lines.append("userIdentity     " + describe(app.userIdentity))
        lines.append("timeZone         " + (app.timeZone ?? "UTC (devices that give none)"))
        lines.append("quietHours       " + (app.quietHours ?? "-"))
        let caps = app.frequencyCaps?.map { "\($0.category ?? "*")=\($0.limit)/\($0.windowHours)h" }.joined(separator: ", ")
        lines.append("frequencyCaps    " + (caps ?? "-"))
        return lines.joined(separator: "\n")
    }

    /// `verified (…)` or `NOT VERIFIED: …`, with what it means.
    static func describe(_ identity: AdminAPI.UserIdentityView) -> String {
        let secret = identity.secretSealedWith.map { "identity secret sealed with \($0)" } ?? "no identity secret"
        return (identity.required ? "verified (\(secret)): " : "NOT VERIFIED (\(secret)): ") + identity.note
    }

    /// `<tokenId>  active  client,server  LEGACY (…)`.
    static func describe(_ token: AdminAPI.TokenView) -> String {
        var line = "\(token.tokenId)  \(token.revoked ? "revoked" : "active ")  \(token.scopes.map(\.rawValue).joined(separator: ","))"
        if token.legacy { line += "  LEGACY (issued before scopes: every scope; replace it)" }
        return line
    }

    /// The answer of `apps create`: both tokens, and which one ships in the app.
    static func describe(_ created: AdminAPI.AppCreatedAnswer) -> String {
        func scopes(_ s: [ApiTokenScope]) -> String { s.map(\.rawValue).joined(separator: ",") }
        return """
            App created.
              mobileAppId    \(created.mobileAppId)
              orgId          \(created.orgId)
              client token   \(created.clientToken)
                tokenId      \(created.clientTokenId)  (scopes \(scopes(created.clientTokenScopes)))
                             ships inside the mobile app: it registers devices, acknowledges, reports tracking; it cannot send
              server token   \(created.apiToken)
                tokenId      \(created.tokenId)  (scopes \(scopes(created.apiTokenScopes)))
                             keep it on your servers only: it sends notifications and reads delivery statistics
            The tokens are shown only this once: store them now.
            User identity: \(describe(created.userIdentity))
            """
    }

    static func describe(_ c: AdminAPI.APNsCredentialsView) -> String {
        "team \(c.teamId), key \(c.keyId), bundle \(c.bundleId), \(c.environment.rawValue), \(c.fingerprint)"
    }

    static func describe(_ c: AdminAPI.FCMCredentialsView) -> String {
        "project \(c.projectId), \(c.clientEmail), \(c.fingerprint)"
    }

    /// Columns two spaces apart; numbers (`rightAligned`) flush right, the rest flush left.
    static func table(_ header: [String], _ rows: [[String]], rightAligned: Swift.Set<Int> = []) -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.indices.map { column in
                let pad = String(repeating: " ", count: widths[column] - row[column].count)
                return rightAligned.contains(column) ? pad + row[column] : row[column] + pad
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n")
    }
}
