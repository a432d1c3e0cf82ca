import Contracts
import Foundation
import WireCodec

/// A named admin token (docs/API.md#admin-tokens); only its hash is ever stored.
public struct AdminTokenRow: Sendable, Equatable, Codable {
    public var adminTokenId: UUID
    public var name: String
    public var tokenHash: String
    public var revoked: Bool
    public var createdAt: Date
    /// When its revocation was applied (the revoking command's time); nil while live.
    public var revokedAt: Date?

    public init(adminTokenId: UUID, name: String, tokenHash: String, revoked: Bool = false, createdAt: Date, revokedAt: Date? = nil) {
        self.adminTokenId = adminTokenId
        self.name = name
        self.tokenHash = tokenHash
        self.revoked = revoked
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// One admin command as the audit trail keeps it (docs/API.md#audit-log): keyed by the command's
/// envelope id, at the command's log time. `changes` is a JSON summary of what the command
/// changed that holds no secret (`AuditSummary`).
public struct AuditEntryRow: Sendable, Equatable, Codable {
    public var commandId: UUID
    public var at: Date
    /// The command type (`CommandType` raw value).
    public var type: String
    public var appId: UUID?
    /// The admin token that made it; nil for the bootstrap token or a command without an actor.
    public var actorId: UUID?
    /// `bootstrap`, the admin token's name, or nil for a command written before actors were recorded.
    public var actorName: String?
    public var requestId: String?
    /// `applied` or `rejected`.
    public var outcome: String
    /// Why it was rejected (the processor's reason), nil when applied.
    public var reason: String?
    /// Sorted-key JSON object.
    public var changes: String

    public init(commandId: UUID, at: Date, type: String, appId: UUID?, actorId: UUID?, actorName: String?, requestId: String?,
                outcome: String, reason: String? = nil, changes: String) {
        self.commandId = commandId
        self.at = at
        self.type = type
        self.appId = appId
        self.actorId = actorId
        self.actorName = actorName
        self.requestId = requestId
        self.outcome = outcome
        self.reason = reason
        self.changes = changes
    }
}

/// A page of the audit trail: the filters, newest first, `limit` rows strictly before the cursor.
public struct AuditQuery: Sendable, Equatable {
    public enum Actor: Sendable, Equatable {
        case bootstrap
        case token(UUID)
    }

    public var appId: UUID?
    public var actor: Actor?
    public var type: String?
    /// Inclusive.
    public var since: Date?
    /// Exclusive.
    public var until: Date?
    /// Rows strictly older than this (at, command id) position.
    public var before: AuditCursor?
    public var limit: Int

    public init(appId: UUID? = nil, actor: Actor? = nil, type: String? = nil, since: Date? = nil, until: Date? = nil,
                before: AuditCursor? = nil, limit: Int = 100) {
        self.appId = appId
        self.actor = actor
        self.type = type
        self.since = since
        self.until = until
        self.before = before
        self.limit = limit
    }
}

/// A position in the audit trail's order (log time in milliseconds, then command id).
public struct AuditCursor: Sendable, Equatable {
    public var atMillis: Int64
    public var commandId: UUID

    public init(atMillis: Int64, commandId: UUID) {
        self.atMillis = atMillis
        self.commandId = commandId
    }

    /// `<millis>_<command id>`: opaque to clients.
    public var text: String { "\(atMillis)_\(commandId.lowercasedString)" }

    public init?(text: String) {
        let parts = text.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 2, let millis = Int64(parts[0]), let id = UUID(parsing: String(parts[1])) else { return nil }
        self.init(atMillis: millis, commandId: id)
    }

    public init(_ row: AuditEntryRow) {
        self.init(atMillis: ProjectionValues.millis(row.at), commandId: row.commandId)
    }
}
