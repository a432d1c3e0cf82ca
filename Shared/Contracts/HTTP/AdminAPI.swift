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
        public init(orgId: UUID, mobileAppId: UUID, name: String, callbackUrl: String?, callbackHeaders: [String: String],
                    webhookRetries: Int, tokens: [TokenView]) {
            self.orgId = orgId
            self.mobileAppId = mobileAppId
            self.name = name
            self.callbackUrl = callbackUrl
            self.callbackHeaders = callbackHeaders
            self.webhookRetries = webhookRetries
            self.tokens = tokens
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
}
