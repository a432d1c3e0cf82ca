import Foundation

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

    /// `201` answer of `POST /admin/v1/apps`; the token is shown only here.
    public struct AppCreatedAnswer: Codable, Sendable, Equatable {
        @LowercaseUUID public var orgId: UUID
        @LowercaseUUID public var mobileAppId: UUID
        public var apiToken: String
        @LowercaseUUID public var tokenId: UUID
        public init(orgId: UUID, mobileAppId: UUID, apiToken: String, tokenId: UUID) {
            self.orgId = orgId
            self.mobileAppId = mobileAppId
            self.apiToken = apiToken
            self.tokenId = tokenId
        }
    }

    /// `201` answer of `POST /admin/v1/apps/{id}/tokens`.
    public struct TokenIssuedAnswer: Codable, Sendable, Equatable {
        @LowercaseUUID public var tokenId: UUID
        public var apiToken: String
        public init(tokenId: UUID, apiToken: String) {
            self.tokenId = tokenId
            self.apiToken = apiToken
        }
    }

    /// `PATCH /admin/v1/apps/{id}`: fields present are set; `callbackUrl: ""` removes it.
    public struct UpdateApp: Codable, Sendable, Equatable {
        public var name: String?
        public var callbackUrl: String?
        public var callbackHeaders: [String: String]?
        public var webhookRetries: Int?
        public init(name: String? = nil, callbackUrl: String? = nil, callbackHeaders: [String: String]? = nil, webhookRetries: Int? = nil) {
            self.name = name
            self.callbackUrl = callbackUrl
            self.callbackHeaders = callbackHeaders
            self.webhookRetries = webhookRetries
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
        public init(orgId: UUID, mobileAppId: UUID, name: String, callbackUrl: String?, callbackHeaders: [String: String],
                    webhookRetries: Int, tokens: [TokenView], pushCredentials: PushCredentialsView? = nil) {
            self.orgId = orgId
            self.mobileAppId = mobileAppId
            self.name = name
            self.callbackUrl = callbackUrl
            self.callbackHeaders = callbackHeaders
            self.webhookRetries = webhookRetries
            self.tokens = tokens
            self.pushCredentials = pushCredentials
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

    public struct TokenView: Codable, Sendable, Equatable {
        @LowercaseUUID public var tokenId: UUID
        public var revoked: Bool
        public init(tokenId: UUID, revoked: Bool) {
            self.tokenId = tokenId
            self.revoked = revoked
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
