import Foundation
import WireCodec

/// Wire shapes of the admin API (`/admin/v1/…`, guarded by the admin bearer token).
public enum AdminAPI {
    /// `POST /admin/v1/apps`.
    public struct CreateApp: Codable, Sendable, Equatable {
        public var orgId: UUID?
        public var name: String?
        public init(orgId: UUID? = nil, name: String?) {
            self.orgId = orgId
            self.name = name
        }
    }

    /// `201` answer of `POST /admin/v1/apps`; the raw tokens are shown only here
    /// (docs/API.md#token-scopes). `apiToken` is the server token (scopes `client` and
    /// `server`): it sends and must stay on the app's servers. `clientToken` (scope `client`)
    /// is the one that ships inside the mobile app.
    public struct AppCreatedAnswer: Codable, Sendable, Equatable {
        @LowercaseUUID public var orgId: UUID
        @LowercaseUUID public var mobileAppId: UUID
        /// The server token.
        public var apiToken: String
        @LowercaseUUID public var tokenId: UUID
        public var apiTokenScopes: [ApiTokenScope]
        /// The client token, for the mobile app.
        public var clientToken: String
        @LowercaseUUID public var clientTokenId: UUID
        public var clientTokenScopes: [ApiTokenScope]
        /// Which token goes where, in words.
        public var note: String
        /// Whether user assertions are required (never, for a new app), and what that means.
        public var userIdentity: UserIdentityView

        public static let tokensNote = "clientToken ships inside the mobile app: it can only do what a device does (register, "
            + "clean up, acknowledge, read its pending notifications, report tracking and registration statuses). "
            + "apiToken is the server token: it sends notifications and reads delivery statistics; keep it on your servers only. "
            + "Status webhooks are open until you list the hosts they may reach: whoever holds clientToken chooses the URL "
            + "and headers Pushline POSTs them to (PATCH webhookHosts; docs/API.md#webhook-hosts)."

        public init(orgId: UUID, mobileAppId: UUID, apiToken: String, tokenId: UUID, apiTokenScopes: [ApiTokenScope],
                    clientToken: String, clientTokenId: UUID, clientTokenScopes: [ApiTokenScope], note: String = Self.tokensNote,
                    userIdentity: UserIdentityView = UserIdentityView(required: false, secretSealedWith: nil)) {
            self.orgId = orgId
            self.mobileAppId = mobileAppId
            self.apiToken = apiToken
            self.tokenId = tokenId
            self.apiTokenScopes = apiTokenScopes
            self.clientToken = clientToken
            self.clientTokenId = clientTokenId
            self.clientTokenScopes = clientTokenScopes
            self.note = note
            self.userIdentity = userIdentity
        }
    }

    /// `POST /admin/v1/apps/{id}/tokens`: the new token's scopes, required (`["client"]`,
    /// `["server"]` or both). Names are kept as text so that an unknown one is answered 422
    /// naming it.
    public struct IssueToken: Codable, Sendable, Equatable {
        public var scopes: [String]?
        public init(scopes: [String]?) {
            self.scopes = scopes
        }

        public init(scopes: [ApiTokenScope]) {
            self.scopes = scopes.map(\.rawValue)
        }
    }

    /// `201` answer of `POST /admin/v1/apps/{id}/tokens`.
    public struct TokenIssuedAnswer: Codable, Sendable, Equatable {
        @LowercaseUUID public var tokenId: UUID
        public var apiToken: String
        public var scopes: [ApiTokenScope]
        public init(tokenId: UUID, apiToken: String, scopes: [ApiTokenScope]) {
            self.tokenId = tokenId
            self.apiToken = apiToken
            self.scopes = scopes
        }
    }

    /// `PATCH /admin/v1/apps/{id}`: fields present are set; `callbackUrl: ""` removes it.
    public struct UpdateApp: Codable, Sendable, Equatable {
        public var name: String?
        public var callbackUrl: String?
        public var callbackHeaders: [String: String]?
        public var webhookRetries: Int?
        /// The hosts status webhooks may reach (docs/API.md#webhook-hosts); `[]` removes the list.
        public var webhookHosts: [String]?
        /// The time zone of devices that give none (an IANA name such as `Europe/Lisbon`); `""`
        /// sets UTC back (docs/API.md#local-time-sends).
        public var timeZone: String?
        /// Default quiet hours, `22:00-08:00`, in each device's zone; `""` removes them
        /// (docs/API.md#quiet-hours).
        public var quietHours: String?
        /// The app's frequency caps, each of at most `limit` pushes per user in `windowHours`, of
        /// one `category` or (without one) of every push (docs/API.md#frequency-caps); `[]`
        /// removes them.
        public var frequencyCaps: [Cap]?
        public init(name: String? = nil, callbackUrl: String? = nil, callbackHeaders: [String: String]? = nil, webhookRetries: Int? = nil,
                    webhookHosts: [String]? = nil, timeZone: String? = nil, quietHours: String? = nil, frequencyCaps: [Cap]? = nil) {
            self.frequencyCaps = frequencyCaps
            self.timeZone = timeZone
            self.quietHours = quietHours
            self.name = name
            self.callbackUrl = callbackUrl
            self.callbackHeaders = callbackHeaders
            self.webhookRetries = webhookRetries
            self.webhookHosts = webhookHosts
        }
    }

    /// A frequency cap (`UpdateApp.frequencyCaps`).
    public struct Cap: Codable, Sendable, Equatable {
        public var category: String?
        public var limit: Int
        public var windowHours: Int

        public init(category: String? = nil, limit: Int, windowHours: Int) {
            self.category = category
            self.limit = limit
            self.windowHours = windowHours
        }

        public init(_ cap: FrequencyCap) {
            self.init(category: cap.category, limit: cap.limit, windowHours: cap.window / 3600)
        }
    }

    /// `GET /admin/v1/apps/{id}`: the app as the projection store currently has it.
    public struct AppView: Codable, Sendable, Equatable {
        @LowercaseUUID public var orgId: UUID
        @LowercaseUUID public var mobileAppId: UUID
        public var name: String
        public var callbackUrl: String?
        public var callbackHeaders: [String: String]
        public var webhookRetries: Int
        public var tokens: [TokenView]
        /// What is not secret of its push credentials; absent when it has none.
        public var pushCredentials: PushCredentialsView?
        /// The hosts its status webhooks may reach; absent: no list.
        public var webhookHosts: [String]?
        /// `open` (no list: whoever holds the client token chooses where status webhooks go) or
        /// `restricted` (only to `webhookHosts`), and what that means in `statusWebhooksNote`.
        public var statusWebhooks: String
        public var statusWebhooksNote: String
        /// Whether binding a device to a user needs a user assertion, and what that means.
        public var userIdentity: UserIdentityView
        /// The zone of devices that give none (absent: UTC) and the default quiet hours (absent: none).
        public var timeZone: String?
        public var quietHours: String?
        /// Its frequency caps; absent: none.
        public var frequencyCaps: [Cap]?

        public static let openNote = "status webhooks are open: whoever holds the client token (it ships in the app) chooses "
            + "the URL and headers Pushline POSTs them to; set webhookHosts (PATCH) to list the hosts they may reach (docs/API.md#webhook-hosts)"
        public static let restrictedNote = "status webhooks only reach the hosts in webhookHosts; a registration naming another is refused (400)"

        public init(orgId: UUID, mobileAppId: UUID, name: String, callbackUrl: String?, callbackHeaders: [String: String],
                    webhookRetries: Int, tokens: [TokenView], pushCredentials: PushCredentialsView? = nil, webhookHosts: [String]? = nil,
                    userIdentity: UserIdentityView = UserIdentityView(required: false, secretSealedWith: nil), timeZone: String? = nil,
                    quietHours: String? = nil, frequencyCaps: [Cap]? = nil) {
            self.timeZone = timeZone
            self.quietHours = quietHours
            self.frequencyCaps = frequencyCaps
            self.orgId = orgId
            self.mobileAppId = mobileAppId
            self.name = name
            self.callbackUrl = callbackUrl
            self.callbackHeaders = callbackHeaders
            self.webhookRetries = webhookRetries
            self.tokens = tokens
            self.pushCredentials = pushCredentials
            self.webhookHosts = webhookHosts
            statusWebhooks = webhookHosts == nil ? "open" : "restricted"
            statusWebhooksNote = webhookHosts == nil ? Self.openNote : Self.restrictedNote
            self.userIdentity = userIdentity
        }

        /// Answers from before the list (or user identity) existed read as open (and unverified).
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            _orgId = try c.decode(LowercaseUUID.self, forKey: .orgId)
            _mobileAppId = try c.decode(LowercaseUUID.self, forKey: .mobileAppId)
            name = try c.decode(String.self, forKey: .name)
            callbackUrl = try c.decodeIfPresent(String.self, forKey: .callbackUrl)
            callbackHeaders = try c.decode([String: String].self, forKey: .callbackHeaders)
            webhookRetries = try c.decode(Int.self, forKey: .webhookRetries)
            tokens = try c.decode([TokenView].self, forKey: .tokens)
            pushCredentials = try c.decodeIfPresent(PushCredentialsView.self, forKey: .pushCredentials)
            webhookHosts = try c.decodeIfPresent([String].self, forKey: .webhookHosts)
            statusWebhooks = try c.decodeIfPresent(String.self, forKey: .statusWebhooks) ?? (webhookHosts == nil ? "open" : "restricted")
            statusWebhooksNote = try c.decodeIfPresent(String.self, forKey: .statusWebhooksNote)
                ?? (webhookHosts == nil ? Self.openNote : Self.restrictedNote)
            userIdentity = try c.decodeIfPresent(UserIdentityView.self, forKey: .userIdentity)
                ?? UserIdentityView(required: false, secretSealedWith: nil)
            timeZone = try c.decodeIfPresent(String.self, forKey: .timeZone)
            quietHours = try c.decodeIfPresent(String.self, forKey: .quietHours)
            frequencyCaps = try c.decodeIfPresent([Cap].self, forKey: .frequencyCaps)
        }
    }

    /// `GET /admin/v1/apps?limit=&after=`: one page of apps ordered by `mobileAppId`; `next`
    /// (the `after` of the following page) is present while more apps follow.
    public struct AppList: Codable, Sendable, Equatable {
        public var apps: [AppView]
        @LowercaseOptionalUUID public var next: UUID?
        public init(apps: [AppView], next: UUID?) {
            self.apps = apps
            self.next = next
        }
    }

    /// One API token of an app (never the token itself).
    public struct TokenView: Codable, Sendable, Equatable {
        @LowercaseUUID public var tokenId: UUID
        public var revoked: Bool
        /// What the token may do; a legacy token has every scope.
        public var scopes: [ApiTokenScope]
        /// Issued before scopes existed: it has every scope and should be replaced by a client
        /// and a server token (docs/API.md#replacing-legacy-tokens).
        public var legacy: Bool
        public init(tokenId: UUID, revoked: Bool, scopes: [ApiTokenScope], legacy: Bool) {
            self.tokenId = tokenId
            self.revoked = revoked
            self.scopes = scopes
            self.legacy = legacy
        }

        /// Old answers (without `scopes`) read as legacy tokens.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            _tokenId = try c.decode(LowercaseUUID.self, forKey: .tokenId)
            revoked = try c.decode(Bool.self, forKey: .revoked)
            let scopes = try c.decodeIfPresent([ApiTokenScope].self, forKey: .scopes)
            self.scopes = scopes ?? ApiTokenScope.allCases
            legacy = try c.decodeIfPresent(Bool.self, forKey: .legacy) ?? (scopes == nil)
        }
    }

    /// An app's verified user identity (docs/API.md#verified-user-identity), in `AppView`, the
    /// create answer and the answers of the identity routes. `note` says in words what the setting
    /// means, above all while it is off.
    public struct UserIdentityView: Codable, Sendable, Equatable {
        /// True: registrations, cleanups and pending lists need a user assertion.
        public var required: Bool
        /// Whether the app has an identity secret to make assertions with.
        public var secretSet: Bool
        /// The id of the deployment key that sealed the secret; absent without one.
        public var secretSealedWith: String?
        public var note: String

        public static let offNote = "user identity is not verified: any holder of the client token (it ships in every copy of the app) "
            + "can bind a device to any user id, and so receive that user's pushes, clean up any user's devices and read any device's "
            + "pending notifications. To verify it: POST /admin/v1/apps/{id}/identity-secret, have your backend give each signed-in "
            + "user the hex HMAC-SHA256 of their user id under that secret, then PUT /admin/v1/apps/{id}/identity {\"required\": true}"
        public static let onNote = "user identity is verified: registering a device to a user, cleaning up a user's devices and "
            + "reading a device's pending notifications need the user assertion (hex HMAC-SHA256 of the user id under the app's "
            + "identity secret) that the app's backend gives its signed-in user"

        public init(required: Bool, secretSealedWith: String?) {
            self.required = required
            self.secretSet = secretSealedWith != nil
            self.secretSealedWith = secretSealedWith
            self.note = required ? Self.onNote : Self.offNote
        }
    }

    /// `PUT /admin/v1/apps/{id}/identity`: whether user assertions are required.
    public struct SetUserIdentity: Codable, Sendable, Equatable {
        public var required: Bool?
        public init(required: Bool?) {
            self.required = required
        }
    }

    /// `201` answer of `POST /admin/v1/apps/{id}/identity-secret`: the new identity secret,
    /// shown only here; the app's backend keeps it and makes user assertions with it.
    public struct IdentitySecretAnswer: Codable, Sendable, Equatable {
        public var identitySecret: String
        public var userIdentity: UserIdentityView
        public init(identitySecret: String, userIdentity: UserIdentityView) {
            self.identitySecret = identitySecret
            self.userIdentity = userIdentity
        }
    }

    /// `GET /admin/v1/apps/{id}/webhook-signing-secret`: what a receiver needs to check the
    /// `x-pushline-signature` of the app's webhooks and callbacks (`WebhookSigning`).
    public struct WebhookSigningSecretView: Codable, Sendable, Equatable {
        @LowercaseUUID public var mobileAppId: UUID
        /// The header that carries the signatures.
        public var header: String
        /// The secret signing under the deployment's current key: the one to configure.
        public var secret: String
        /// The id of the deployment key it is derived from.
        public var keyId: String
        /// The secrets under the deployment's previous keys, which webhooks are also signed with
        /// until those keys are dropped (a rotation in progress); usually empty.
        public var previousSecrets: [PreviousSecret]

        public struct PreviousSecret: Codable, Sendable, Equatable {
            public var keyId: String
            public var secret: String
            public init(keyId: String, secret: String) {
                self.keyId = keyId
                self.secret = secret
            }
        }

        public init(mobileAppId: UUID, header: String = WebhookSigning.header, secret: String, keyId: String,
                    previousSecrets: [PreviousSecret]) {
            self.mobileAppId = mobileAppId
            self.header = header
            self.secret = secret
            self.keyId = keyId
            self.previousSecrets = previousSecrets
        }
    }

    /// `PUT /admin/v1/apps/{id}/credentials/apns`: token-based APNs authentication.
    public struct SetAPNsCredentials: Codable, Sendable, Equatable {
        public var teamId: String?
        public var keyId: String?
        public var bundleId: String?
        /// The `.p8` file's PEM text.
        public var privateKey: String?
        /// `production` or `sandbox`.
        public var environment: String?
        public init(teamId: String?, keyId: String?, bundleId: String?, privateKey: String?, environment: String?) {
            self.teamId = teamId
            self.keyId = keyId
            self.bundleId = bundleId
            self.privateKey = privateKey
            self.environment = environment
        }
    }

    /// `PUT /admin/v1/apps/{id}/credentials/fcm`: the Firebase project's service-account key file, as it is.
    public struct SetFCMCredentials: Codable, Sendable, Equatable {
        public var serviceAccount: JSONValue?
        public init(serviceAccount: JSONValue?) {
            self.serviceAccount = serviceAccount
        }
    }

    /// An app's push credentials without their secrets.
    public struct PushCredentialsView: Codable, Sendable, Equatable {
        public var apns: APNsCredentialsView?
        public var fcm: FCMCredentialsView?
        public init(apns: APNsCredentialsView? = nil, fcm: FCMCredentialsView? = nil) {
            self.apns = apns
            self.fcm = fcm
        }

        public init(_ credentials: PushCredentials) {
            self.init(apns: credentials.apns.map(APNsCredentialsView.init), fcm: credentials.fcm.map(FCMCredentialsView.init))
        }
    }

    /// `GET /admin/v1/apps/{id}/credentials/apns`, and the `202` answer of its `PUT`.
    public struct APNsCredentialsView: Codable, Sendable, Equatable {
        public var teamId: String
        public var keyId: String
        public var bundleId: String
        public var environment: APNsEnvironment
        /// `SHA256:` and the base64 SHA-256 of the key's public part.
        public var fingerprint: String
        /// The id of the deployment key that sealed the private key.
        public var sealedWith: String

        public init(_ c: APNsCredentials) {
            teamId = c.teamId
            keyId = c.keyId
            bundleId = c.bundleId
            environment = c.environment
            fingerprint = c.fingerprint
            sealedWith = c.privateKey.keyId
        }
    }

    /// `GET /admin/v1/apps/{id}/credentials/fcm`, and the `202` answer of its `PUT`.
    public struct FCMCredentialsView: Codable, Sendable, Equatable {
        public var projectId: String
        public var clientEmail: String
        public var privateKeyId: String?
        public var tokenUri: String
        /// `SHA256:` and the base64 SHA-256 of the account key's public part.
        public var fingerprint: String
        /// The id of the deployment key that sealed the service account.
        public var sealedWith: String

        public init(_ c: FCMCredentials) {
            projectId = c.projectId
            clientEmail = c.clientEmail
            privateKeyId = c.privateKeyId
            tokenUri = c.tokenUri
            fingerprint = c.fingerprint
            sealedWith = c.serviceAccount.keyId
        }
    }
}
