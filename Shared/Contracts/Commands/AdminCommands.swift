import Foundation

/// An app was created in an org, with its first API tokens (hashes only): the server token
/// (`tokenId`, `tokenHash`, scopes `tokenScopes`) and the client token that ships in the app
/// (`clientTokenId`, `clientTokenHash`, scope `client`).
///
/// Records written before token scopes existed have neither `tokenScopes` nor a client token:
/// their one token is a legacy token, with every scope.
public struct AppCreated: Command, Equatable {
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

    public init(orgId: UUID, mobileAppId: UUID, name: String, tokenId: UUID, tokenHash: String,
                tokenScopes: [ApiTokenScope]? = nil, clientTokenId: UUID? = nil, clientTokenHash: String? = nil) {
        self.orgId = orgId
        self.mobileAppId = mobileAppId
        self.name = name
        self.tokenId = tokenId
        self.tokenHash = tokenHash
        self.tokenScopes = tokenScopes
        self.clientTokenId = clientTokenId
        self.clientTokenHash = clientTokenHash
    }

    /// The scopes of the client token created with an app.
    public static let clientTokenScopes: [ApiTokenScope] = [.client]
    /// The scopes of the server token created with an app: it may also register, so that a
    /// backend that registers devices itself needs one token.
    public static let serverTokenScopes: [ApiTokenScope] = [.client, .server]

    public var recordKey: String { RecordKey.app(mobileAppId) }
}

/// A further API token was issued for an app, with its scopes (nil in records from before
/// scopes: a legacy token, with every scope).
public struct ApiTokenIssued: Command, Equatable {
    public static let type = CommandType.apiTokenIssued
    public static let topic = CommandTopic.admin

    @LowercaseUUID public var mobileAppId: UUID
    @LowercaseUUID public var tokenId: UUID
    public var tokenHash: String
    public var scopes: [ApiTokenScope]?

    public init(mobileAppId: UUID, tokenId: UUID, tokenHash: String, scopes: [ApiTokenScope]? = nil) {
        self.mobileAppId = mobileAppId
        self.tokenId = tokenId
        self.tokenHash = tokenHash
        self.scopes = scopes
    }

    public var recordKey: String { RecordKey.app(mobileAppId) }
}

/// An API token was revoked; requests carrying it are treated as unauthenticated from then on.
public struct ApiTokenRevoked: Command, Equatable {
    public static let type = CommandType.apiTokenRevoked
    public static let topic = CommandTopic.admin

    @LowercaseUUID public var mobileAppId: UUID
    @LowercaseUUID public var tokenId: UUID

    public init(mobileAppId: UUID, tokenId: UUID) {
        self.mobileAppId = mobileAppId
        self.tokenId = tokenId
    }

    public var recordKey: String { RecordKey.app(mobileAppId) }
}

/// App settings changed. A field that is `nil` is left as it was; an empty `callbackUrl`
/// removes the callback.
public struct AppSettingsChanged: Command, Equatable {
    public static let type = CommandType.appSettingsChanged
    public static let topic = CommandTopic.admin

    @LowercaseUUID public var mobileAppId: UUID
    public var name: String?
    public var callbackUrl: String?
    public var callbackHeaders: [String: String]?
    /// Extra attempts after the first for status webhooks and callbacks (0 = one attempt, the
    /// default).
    public var webhookRetries: Int?

    public init(mobileAppId: UUID, name: String? = nil, callbackUrl: String? = nil,
                callbackHeaders: [String: String]? = nil, webhookRetries: Int? = nil) {
        self.mobileAppId = mobileAppId
        self.name = name
        self.callbackUrl = callbackUrl
        self.callbackHeaders = callbackHeaders
        self.webhookRetries = webhookRetries
    }

    public var recordKey: String { RecordKey.app(mobileAppId) }
}

/// An app's credentials for one push provider were set (replacing any before): exactly one of
/// `apns` and `fcm` is present. The secret inside is sealed (`SecretsKeyring`); it never enters
/// Kafka in clear.
public struct PushCredentialsSet: Command, Equatable {
    public static let type = CommandType.pushCredentialsSet
    public static let topic = CommandTopic.admin

    @LowercaseUUID public var mobileAppId: UUID
    public var apns: APNsCredentials?
    public var fcm: FCMCredentials?

    public init(mobileAppId: UUID, apns: APNsCredentials? = nil, fcm: FCMCredentials? = nil) {
        self.mobileAppId = mobileAppId
        self.apns = apns
        self.fcm = fcm
    }

    public var recordKey: String { RecordKey.app(mobileAppId) }
}

/// An app's credentials for one push provider were removed.
public struct PushCredentialsRemoved: Command, Equatable {
    public static let type = CommandType.pushCredentialsRemoved
    public static let topic = CommandTopic.admin

    @LowercaseUUID public var mobileAppId: UUID
    public var provider: PushProvider

    public init(mobileAppId: UUID, provider: PushProvider) {
        self.mobileAppId = mobileAppId
        self.provider = provider
    }

    public var recordKey: String { RecordKey.app(mobileAppId) }
}
