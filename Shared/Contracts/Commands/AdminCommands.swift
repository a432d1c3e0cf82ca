import Foundation
import WireCodec

/// An app was created in an org, with its first API tokens (hashes only): the server token
/// (`tokenId`, `tokenHash`, scopes `tokenScopes`) and the client token that ships in the app
/// (`clientTokenId`, `clientTokenHash`, scope `client`).
///
/// Records written before token scopes existed have neither `tokenScopes` nor a client token:
/// their one token is a legacy token, with every scope.
public struct AppCreated: AppScopedCommand, Equatable {
    public static let type = CommandType.appCreated
    public static let topic = CommandTopic.admin

    @LowercaseUUID public var orgId: UUID
    @LowercaseUUID public var mobileAppId: UUID
    public var name: String
    @LowercaseUUID public var tokenId: UUID
    /// `ApiTokens.hash` of the raw token; the raw token never enters Kafka.
    public var tokenHash: String
    /// The scopes of the token `tokenId`; nil: a legacy token (every scope).
    public var tokenScopes: [ApiTokenScope]?
    /// The client token created with the app (scope `client`); absent in records from before scopes.
    @LowercaseOptionalUUID public var clientTokenId: UUID?
    public var clientTokenHash: String?

    /// Who made the change (nil in commands written before actors were recorded).
    public var actor: AdminActor?
    /// The id of the ingest request that wrote the command.
    public var requestId: String?

    /// Set when the create carried an `Idempotency-Key`: the ids and tokens derive from it.
    public var idempotency: IdempotencyStamp?

    public init(orgId: UUID, mobileAppId: UUID, name: String, tokenId: UUID, tokenHash: String,
                tokenScopes: [ApiTokenScope]? = nil, clientTokenId: UUID? = nil, clientTokenHash: String? = nil,
                actor: AdminActor? = nil, requestId: String? = nil, idempotency: IdempotencyStamp? = nil) {
        self.idempotency = idempotency
        self.orgId = orgId
        self.mobileAppId = mobileAppId
        self.name = name
        self.tokenId = tokenId
        self.tokenHash = tokenHash
        self.tokenScopes = tokenScopes
        self.clientTokenId = clientTokenId
        self.clientTokenHash = clientTokenHash
        self.actor = actor
        self.requestId = requestId
    }

    /// The scopes of the client token created with an app.
    public static let clientTokenScopes: [ApiTokenScope] = [.client]
    /// The scopes of the server token created with an app: it may also register, so that a
    /// backend that registers devices itself needs one token.
    public static let serverTokenScopes: [ApiTokenScope] = [.client, .server]

}

/// A further API token was issued for an app, with its scopes (nil in records from before
/// scopes: a legacy token, with every scope).
public struct ApiTokenIssued: AppScopedCommand, Equatable {
    public static let type = CommandType.apiTokenIssued
    public static let topic = CommandTopic.admin

    @LowercaseUUID public var mobileAppId: UUID
    @LowercaseUUID public var tokenId: UUID
    public var tokenHash: String
    public var scopes: [ApiTokenScope]?

    /// Who made the change (nil in commands written before actors were recorded).
    public var actor: AdminActor?
    /// The id of the ingest request that wrote the command.
    public var requestId: String?

    /// Set when the issue carried an `Idempotency-Key`: the token id and raw token derive from it.
    public var idempotency: IdempotencyStamp?

    public init(mobileAppId: UUID, tokenId: UUID, tokenHash: String, scopes: [ApiTokenScope]? = nil,
                actor: AdminActor? = nil, requestId: String? = nil, idempotency: IdempotencyStamp? = nil) {
        self.idempotency = idempotency
        self.mobileAppId = mobileAppId
        self.tokenId = tokenId
        self.tokenHash = tokenHash
        self.scopes = scopes
        self.actor = actor
        self.requestId = requestId
    }
}

/// An API token was revoked; requests carrying it are treated as unauthenticated from then on.
public struct ApiTokenRevoked: AppScopedCommand, Equatable {
    public static let type = CommandType.apiTokenRevoked
    public static let topic = CommandTopic.admin

    @LowercaseUUID public var mobileAppId: UUID
    @LowercaseUUID public var tokenId: UUID

    /// Who made the change (nil in commands written before actors were recorded).
    public var actor: AdminActor?
    /// The id of the ingest request that wrote the command.
    public var requestId: String?

    public init(mobileAppId: UUID, tokenId: UUID,
                actor: AdminActor? = nil, requestId: String? = nil) {
        self.mobileAppId = mobileAppId
        self.tokenId = tokenId
        self.actor = actor
        self.requestId = requestId
    }
}

/// App settings changed. A field that is `nil` is left as it was; an empty `callbackUrl`
/// removes the callback.
public struct AppSettingsChanged: AppScopedCommand, Equatable {
    public static let type = CommandType.appSettingsChanged
    public static let topic = CommandTopic.admin

    @LowercaseUUID public var mobileAppId: UUID
    public var name: String?
    public var callbackUrl: String?
    public var callbackHeaders: [String: String]?
    /// Extra attempts after the first for status webhooks and callbacks (0 = one attempt, the
    /// default).
    public var webhookRetries: Int?
    /// The hosts status webhooks may reach from now on (`WebhookHosts`, normalized); an empty
    /// list removes the list (client-chosen URLs are open again).
    public var webhookHosts: [String]?
    /// The zone of devices that give none (an IANA name), and the default quiet hours
    /// (`QuietHours`, canonical); an empty text removes either.
    public var timeZone: String?
    public var quietHours: String?
    /// The frequency caps (`FrequencyCap.text`); an empty text removes them.
    public var frequencyCaps: String?

    /// Who made the change (nil in commands written before actors were recorded).
    public var actor: AdminActor?
    /// The id of the ingest request that wrote the command.
    public var requestId: String?

    public init(mobileAppId: UUID, name: String? = nil, callbackUrl: String? = nil,
                callbackHeaders: [String: String]? = nil, webhookRetries: Int? = nil, webhookHosts: [String]? = nil,
                timeZone: String? = nil, quietHours: String? = nil, frequencyCaps: String? = nil, actor: AdminActor? = nil,
                requestId: String? = nil) {
        self.frequencyCaps = frequencyCaps
        self.timeZone = timeZone
        self.quietHours = quietHours
        self.mobileAppId = mobileAppId
        self.name = name
        self.callbackUrl = callbackUrl
        self.callbackHeaders = callbackHeaders
        self.webhookRetries = webhookRetries
        self.webhookHosts = webhookHosts
        self.actor = actor
        self.requestId = requestId
    }
}

/// An app's credentials for one push provider were set (replacing any before): exactly one of
/// `apns` and `fcm` is present. The secret inside is sealed (`SecretsKeyring`); it never enters
/// Kafka in clear.
public struct PushCredentialsSet: AppScopedCommand, Equatable {
    public static let type = CommandType.pushCredentialsSet
    public static let topic = CommandTopic.admin

    @LowercaseUUID public var mobileAppId: UUID
    public var apns: APNsCredentials?
    public var fcm: FCMCredentials?

    /// Who made the change (nil in commands written before actors were recorded).
    public var actor: AdminActor?
    /// The id of the ingest request that wrote the command.
    public var requestId: String?

    public init(mobileAppId: UUID, apns: APNsCredentials? = nil, fcm: FCMCredentials? = nil,
                actor: AdminActor? = nil, requestId: String? = nil) {
        self.mobileAppId = mobileAppId
        self.apns = apns
        self.fcm = fcm
        self.actor = actor
        self.requestId = requestId
    }
}

/// An app's credentials for one push provider were removed.
public struct PushCredentialsRemoved: AppScopedCommand, Equatable {
    public static let type = CommandType.pushCredentialsRemoved
    public static let topic = CommandTopic.admin

    @LowercaseUUID public var mobileAppId: UUID
    public var provider: PushProvider

    /// Who made the change (nil in commands written before actors were recorded).
    public var actor: AdminActor?
    /// The id of the ingest request that wrote the command.
    public var requestId: String?

    public init(mobileAppId: UUID, provider: PushProvider,
                actor: AdminActor? = nil, requestId: String? = nil) {
        self.mobileAppId = mobileAppId
        self.provider = provider
        self.actor = actor
        self.requestId = requestId
    }
}

/// An app's verified user identity changed (docs/API.md#verified-user-identity): a new identity
/// secret (sealed with the deployment's keyring, `UserIdentity.sealContext(app:)`; it never
/// enters Kafka in clear), and/or whether binding a device to a user needs a user assertion. A
/// field that is `nil` is left as it was.
public struct UserIdentityChanged: AppScopedCommand, Equatable {
    public static let type = CommandType.userIdentityChanged
    public static let topic = CommandTopic.admin

    @LowercaseUUID public var mobileAppId: UUID
    /// True: registrations and cleanups need a user assertion; false: they do not.
    public var required: Bool?
    /// The new identity secret, sealed; replaces the one before.
    public var secret: SealedSecret?

    /// Who made the change.
    public var actor: AdminActor?
    /// The id of the ingest request that wrote the command.
    public var requestId: String?

    public init(mobileAppId: UUID, required: Bool? = nil, secret: SealedSecret? = nil, actor: AdminActor? = nil, requestId: String? = nil) {
        self.mobileAppId = mobileAppId
        self.required = required
        self.secret = secret
        self.actor = actor
        self.requestId = requestId
    }
}

/// Who made an admin change: the bootstrap token (`PUSHLINE_ADMIN_TOKEN`, no id, named
/// `bootstrap`) or a named admin token (its id and name).
public struct AdminActor: Codable, Sendable, Hashable {
    /// The admin token's id; nil for the bootstrap token.
    @LowercaseOptionalUUID public var id: UUID?
    public var name: String

    public init(id: UUID?, name: String) {
        self.id = id
        self.name = name
    }

    /// The name of the bootstrap token's actor, which no named admin token may take.
    public static let bootstrapName = "bootstrap"
    public static let bootstrap = AdminActor(id: nil, name: bootstrapName)

    public var isBootstrap: Bool { id == nil }
}

/// A named admin token was issued (hash only: the raw token is shown once, by ingest).
public struct AdminTokenIssued: Command, Equatable {
    public static let type = CommandType.adminTokenIssued
    public static let topic = CommandTopic.admin

    @LowercaseUUID public var adminTokenId: UUID
    public var name: String
    /// `ApiTokens.hash` of the raw token; the raw token never enters Kafka.
    public var tokenHash: String
    public var actor: AdminActor?
    public var requestId: String?
    /// Set when the create carried an `Idempotency-Key`: the id and raw token derive from it.
    public var idempotency: IdempotencyStamp?

    public init(adminTokenId: UUID, name: String, tokenHash: String, actor: AdminActor? = nil, requestId: String? = nil,
                idempotency: IdempotencyStamp? = nil) {
        self.adminTokenId = adminTokenId
        self.name = name
        self.tokenHash = tokenHash
        self.actor = actor
        self.requestId = requestId
        self.idempotency = idempotency
    }

    public var recordKey: String { RecordKey.adminToken(adminTokenId) }
}

/// A named admin token was revoked: the admin API refuses it once this is applied.
public struct AdminTokenRevoked: Command, Equatable {
    public static let type = CommandType.adminTokenRevoked
    public static let topic = CommandTopic.admin

    @LowercaseUUID public var adminTokenId: UUID
    public var actor: AdminActor?
    public var requestId: String?

    public init(adminTokenId: UUID, actor: AdminActor? = nil, requestId: String? = nil) {
        self.adminTokenId = adminTokenId
        self.actor = actor
        self.requestId = requestId
    }

    public var recordKey: String { RecordKey.adminToken(adminTokenId) }
}
