import Contracts
import Foundation

/// An app of an org, with its settings.
public struct AppRow: Sendable, Equatable, Codable {
    public var appId: UUID
    public var orgId: UUID
    public var name: String
    public var callbackUrl: String?
    public var callbackHeaders: [String: String]
    /// Extra webhook/callback attempts after the first (0 = one attempt).
    public var webhookRetries: Int
    public var createdAt: Date
    /// Its APNs and FCM credentials, secrets sealed; nil when it has none.
    public var pushCredentials: PushCredentials?
    /// The part of the app whose view this row is (`AppPart`): every part applies every admin
    /// command; readers outside the processor read part 0's.
    public var part: Int
    /// Whether binding a device to a user, or cleaning up a user's devices, needs a user
    /// assertion (docs/API.md#verified-user-identity); false: any holder of the client token
    /// can bind a device to any user id.
    public var identityRequired: Bool
    /// The identity secret user assertions are made with, sealed (`UserIdentity`); nil: none yet.
    public var identitySecret: SealedSecret?
    /// The hosts its status webhooks may reach (`WebhookHosts`, entries normalized); nil: no list,
    /// client-chosen URLs are open (the seed's behaviour).
    public var webhookHosts: [String]?
    /// The users with a device in this part (`DecisionRules.maxUsersPerApp` caps them), kept by
    /// the processor as devices come and go.
    public var users: Int
    /// The time zone of its devices that gave none (an IANA name); nil: UTC.
    public var timeZone: String?
    /// Its default quiet hours (`QuietHours`, canonical text), in each device's zone; nil: none.
    public var quietHours: String?
    /// Its frequency caps (`FrequencyCap.text`); nil: none.
    public var frequencyCaps: String?
    /// The users of this part with quiet hours of their own (`UserSettingsRow`): while there are
    /// none, a send reads no user's settings for them.
    public var quietUsers: Int
    /// The users of this part with pushes counted on their own row (`UserSettingsRow.capped`, by
    /// sends to users or devices), ever: while there are none and no `quietUsers`, a send reads
    /// no user's settings.
    public var countedUsers: Int
    /// The sends to an audience its caps counted in this part (`CappedPushes.text`: time, name
    /// and category, within the longest cap's window), each with the users it reached in a row of
    /// `counted_sends` (`CountedSendRow`); nil: none.
    public var countedSends: String?

    public init(appId: UUID, orgId: UUID, name: String, callbackUrl: String? = nil, callbackHeaders: [String: String] = [:],
                webhookRetries: Int = 0, createdAt: Date, pushCredentials: PushCredentials? = nil, part: Int = 0,
                identityRequired: Bool = false, identitySecret: SealedSecret? = nil, webhookHosts: [String]? = nil, users: Int = 0,
                timeZone: String? = nil, quietHours: String? = nil, frequencyCaps: String? = nil, quietUsers: Int = 0,
                countedUsers: Int = 0, countedSends: String? = nil) {
        self.countedUsers = countedUsers
        self.countedSends = countedSends
        self.frequencyCaps = frequencyCaps
        self.quietUsers = quietUsers
        self.timeZone = timeZone
        self.quietHours = quietHours
        self.appId = appId
        self.part = part
        self.webhookHosts = webhookHosts
        self.users = users
        self.orgId = orgId
        self.name = name
        self.callbackUrl = callbackUrl
        self.callbackHeaders = callbackHeaders
        self.webhookRetries = webhookRetries
        self.createdAt = createdAt
        self.pushCredentials = pushCredentials
        self.identityRequired = identityRequired
        self.identitySecret = identitySecret
    }
}

/// An API token of an app; only its hash is ever stored.
public struct ApiTokenRow: Sendable, Equatable, Codable {
    public var tokenId: UUID
    public var appId: UUID
    public var tokenHash: String
    public var revoked: Bool
    public var createdAt: Date
    /// Its scopes, sorted; nil: a legacy token (issued before scopes), which has every scope.
    public var scopes: [ApiTokenScope]?
    /// The part of the app whose view this row is (`AppRow.part`).
    public var part: Int

    public init(tokenId: UUID, appId: UUID, tokenHash: String, revoked: Bool = false, createdAt: Date,
                scopes: [ApiTokenScope]? = nil, part: Int = 0) {
        self.tokenId = tokenId
        self.part = part
        self.appId = appId
        self.tokenHash = tokenHash
        self.revoked = revoked
        self.createdAt = createdAt
        self.scopes = scopes.map(ApiTokenScopes.normalized)
    }

    /// Issued before scopes existed: admitted on every route.
    public var isLegacy: Bool { scopes == nil }

    /// Whether the token may act with `scope` (`ApiTokenScopes.grant`).
    public func grants(_ scope: ApiTokenScope) -> Bool { ApiTokenScopes.grant(scopes, scope) }
}
