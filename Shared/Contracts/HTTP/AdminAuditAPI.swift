import Foundation
import WireCodec

/// Wire shapes of named admin tokens and the audit log (docs/API.md#admin-tokens,
/// docs/API.md#audit-log).
extension AdminAPI {
    /// `POST /admin/v1/admin-tokens`.
    public struct CreateAdminToken: Codable, Sendable, Equatable {
        public var name: String?
        public init(name: String?) {
            self.name = name
        }
    }

    /// `201` answer of `POST /admin/v1/admin-tokens`; the raw token is shown only here.
    public struct AdminTokenCreated: Codable, Sendable, Equatable {
        @LowercaseUUID public var id: UUID
        public var name: String
        public var token: String
        public var createdAt: Date
        public init(id: UUID, name: String, token: String, createdAt: Date) {
            self.id = id
            self.name = name
            self.token = token
            self.createdAt = createdAt
        }
    }

    /// A named admin token as `GET /admin/v1/admin-tokens` lists it: never the token or its hash.
    public struct AdminTokenView: Codable, Sendable, Equatable {
        @LowercaseUUID public var id: UUID
        public var name: String
        public var revoked: Bool
        public var createdAt: Date
        public var revokedAt: Date?
        public init(id: UUID, name: String, revoked: Bool, createdAt: Date, revokedAt: Date? = nil) {
            self.id = id
            self.name = name
            self.revoked = revoked
            self.createdAt = createdAt
            self.revokedAt = revokedAt
        }
    }

    /// `GET /admin/v1/admin-tokens?limit=&after=`: one page ordered by id; `next` is the `after`
    /// of the following page.
    public struct AdminTokenList: Codable, Sendable, Equatable {
        public var adminTokens: [AdminTokenView]
        @LowercaseOptionalUUID public var next: UUID?
        public init(adminTokens: [AdminTokenView], next: UUID?) {
            self.adminTokens = adminTokens
            self.next = next
        }
    }

    /// One admin command of the audit log.
    public struct AuditEntry: Codable, Sendable, Equatable {
        /// The command's id (its envelope id).
        @LowercaseUUID public var id: UUID
        /// The command's log time.
        public var at: Date
        /// The command type, e.g. `admin.app-created`.
        public var type: String
        @LowercaseOptionalUUID public var mobileAppId: UUID?
        /// Who made it; absent for commands written before actors were recorded.
        public var actor: AdminActor?
        public var requestId: String?
        /// `applied` or `rejected`.
        public var outcome: String
        /// Why the processor rejected it.
        public var reason: String?
        /// What changed, without secrets.
        public var changes: JSONValue
        public init(id: UUID, at: Date, type: String, mobileAppId: UUID?, actor: AdminActor?, requestId: String?, outcome: String,
                    reason: String?, changes: JSONValue) {
            self.id = id
            self.at = at
            self.type = type
            self.mobileAppId = mobileAppId
            self.actor = actor
            self.requestId = requestId
            self.outcome = outcome
            self.reason = reason
            self.changes = changes
        }
    }

    /// `GET /admin/v1/audit`: newest first; `next` is the `after` of the following (older) page.
    public struct AuditPage: Codable, Sendable, Equatable {
        public var entries: [AuditEntry]
        public var next: String?
        public init(entries: [AuditEntry], next: String?) {
            self.entries = entries
            self.next = next
        }
    }
}
