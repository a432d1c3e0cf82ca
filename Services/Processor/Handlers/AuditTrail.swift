import Contracts
import Foundation
import Projections
import WireCodec

/// The audit trail (docs/ARCHITECTURE.md#audit-trail): every admin command, applied or
/// rejected, becomes one `audit_log` row keyed by its envelope id, at its log time, with who
/// made it and a summary of what it changed. Like every table it is a function of the log: the
/// row is decided from the command, its envelope and the handler's outcome only.
///
/// The summary never holds a secret: no token or token hash (token ids only), push credentials
/// by what `GET …/credentials/{provider}` shows (fingerprint, never the sealed key), callback
/// header values and the credentials a callback URL may carry (userinfo, query values) redacted.
package protocol AuditedCommand: Command {
    /// The app the command is about; nil for commands about no app (admin tokens).
    var auditedApp: UUID? { get }
    var actor: AdminActor? { get }
    var requestId: String? { get }
    /// What the command changed, without any secret.
    var auditedChanges: [String: JSONValue] { get }
}

package enum AuditTrail {
    /// What replaces a redacted value.
    package static let redacted = "redacted"

    package static func entry(_ command: any AuditedCommand, id: UUID, at: Date, result: HandlerResult) -> AuditEntryRow {
        let (outcome, reason): (String, String?) = switch result {
        case .applied: ("applied", nil)
        case .rejected(let reason): ("rejected", reason)
        }
        return AuditEntryRow(commandId: id, at: at, type: type(of: command).type.rawValue, appId: command.auditedApp,
                             actorId: command.actor?.id, actorName: command.actor?.name, requestId: command.requestId,
                             outcome: outcome, reason: reason, changes: json(command.auditedChanges))
    }

    /// Sorted-key JSON, as every JSON Pushline stores.
    package static func json(_ changes: [String: JSONValue]) -> String {
        // Encoding strings, numbers and objects of them cannot fail.
        String(decoding: (try? WireJSON.encoder().encode(JSONValue.object(changes))) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// A callback URL as `RedactedURL` shows it (userinfo, query values and later path segments redacted); an empty
    /// URL (the callback removed) stays empty.
    package static func redactedURL(_ text: String) -> String {
        text.isEmpty ? text : RedactedURL.string(text)
    }

    /// A `Codable` view as a JSON value.
    package static func value(_ view: some Encodable) -> JSONValue {
        guard let data = try? WireJSON.encoder().encode(view), let value = try? JSONValue.parse(data) else { return .null }
        return value
    }
}

extension AppCreated: AuditedCommand {
    package var auditedApp: UUID? { mobileAppId }
    package var auditedChanges: [String: JSONValue] {
        ["orgId": .string(orgId.lowercasedString), "name": .string(name), "tokenId": .string(tokenId.lowercasedString)]
    }
}

extension ApiTokenIssued: AuditedCommand {
    package var auditedApp: UUID? { mobileAppId }
    package var auditedChanges: [String: JSONValue] { ["tokenId": .string(tokenId.lowercasedString)] }
}

extension ApiTokenRevoked: AuditedCommand {
    package var auditedApp: UUID? { mobileAppId }
    package var auditedChanges: [String: JSONValue] { ["tokenId": .string(tokenId.lowercasedString)] }
}

extension AppSettingsChanged: AuditedCommand {
    package var auditedApp: UUID? { mobileAppId }
    package var auditedChanges: [String: JSONValue] {
        var changes: [String: JSONValue] = [:]
        if let name { changes["name"] = .string(name) }
        if let callbackUrl { changes["callbackUrl"] = .string(AuditTrail.redactedURL(callbackUrl)) }
        // Header names show what was set; their values are often credentials.
        if let callbackHeaders { changes["callbackHeaders"] = .object(callbackHeaders.mapValues { _ in .string(AuditTrail.redacted) }) }
        if let webhookRetries { changes["webhookRetries"] = .number(Double(webhookRetries)) }
        if let webhookHosts { changes["webhookHosts"] = .array(webhookHosts.map { .string($0) }) }
        if let timeZone { changes["timeZone"] = .string(timeZone) }
        if let quietHours { changes["quietHours"] = .string(quietHours) }
        if let frequencyCaps { changes["frequencyCaps"] = .string(frequencyCaps) }
        return changes
    }
}

extension PushCredentialsSet: AuditedCommand {
    package var auditedApp: UUID? { mobileAppId }
    package var auditedChanges: [String: JSONValue] {
        var changes: [String: JSONValue] = [:]
        if let apns { changes["apns"] = AuditTrail.value(AdminAPI.APNsCredentialsView(apns)) }
        if let fcm { changes["fcm"] = AuditTrail.value(AdminAPI.FCMCredentialsView(fcm)) }
        return changes
    }
}

extension PushCredentialsRemoved: AuditedCommand {
    package var auditedApp: UUID? { mobileAppId }
    package var auditedChanges: [String: JSONValue] { ["provider": .string(provider.rawValue)] }
}

extension UserIdentityChanged: AuditedCommand {
    package var auditedApp: UUID? { mobileAppId }
    /// Which key sealed a new secret, never the seal.
    package var auditedChanges: [String: JSONValue] {
        var changes: [String: JSONValue] = [:]
        if let required { changes["identityRequired"] = .bool(required) }
        if let secret { changes["identitySecret"] = .object(["sealedWith": .string(secret.keyId)]) }
        return changes
    }
}

extension AdminTokenIssued: AuditedCommand {
    package var auditedApp: UUID? { nil }
    package var auditedChanges: [String: JSONValue] { ["adminTokenId": .string(adminTokenId.lowercasedString), "name": .string(name)] }
}

extension AdminTokenRevoked: AuditedCommand {
    package var auditedApp: UUID? { nil }
    package var auditedChanges: [String: JSONValue] { ["adminTokenId": .string(adminTokenId.lowercasedString)] }
}
