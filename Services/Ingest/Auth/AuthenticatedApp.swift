import Contracts
import Foundation
import Projections

/// The app a Bearer route acts for, set by `AppAuthMiddleware`: its projected row (the org is
/// needed by registration commands), the hash of the token that was presented (commands
/// carry it so that the processor can judge it again; the raw token goes nowhere) and the
/// scope the route needed (the token has it; the per-app rate limit is kept per scope).
struct AuthenticatedApp: Sendable {
    var app: AppRow
    var tokenHash: String
    var scope: ApiTokenScope

    var mobileAppId: UUID { app.appId }
    var orgId: UUID { app.orgId }
}

/// Thrown when a route that needs `AppAuthMiddleware` is mounted without it: a programming
/// error, answered 500.
struct MissingAppAuthentication: Error {}

extension IngestRequestContext {
    /// The app authenticated by `AppAuthMiddleware`.
    func authenticated() throws -> AuthenticatedApp {
        guard let authenticatedApp else { throw MissingAppAuthentication() }
        return authenticatedApp
    }
}

extension DeviceRegistrationRequested {
    /// A registration through a Bearer route (BW, KF5): the app's org, the presented token's hash,
    /// and neither status tracking nor a status webhook (only the registration API has them).
    init(authenticated auth: AuthenticatedApp, userId: String, platform: Platform, deviceToken: String, timeZone: String? = nil,
         properties: DeviceProperties? = nil) {
        self.init(registrationRequestId: .random(), orgId: auth.orgId, mobileAppId: auth.mobileAppId, userId: userId,
                  platform: platform, deviceToken: deviceToken, apiTokenHash: auth.tokenHash, trackStatus: false,
                  callback: nil, timeZone: timeZone, locale: properties?.locale, appVersion: properties?.appVersion, tags: properties?.tags,
                  topics: properties?.topics)
    }
}

extension DeviceCleanupRequested {
    /// A cleanup of one device of a user through a Bearer route (BW, KF5).
    init(authenticated auth: AuthenticatedApp, userId: String, deviceToken: String) {
        self.init(orgId: auth.orgId, mobileAppId: auth.mobileAppId, userId: userId, deviceToken: deviceToken,
                  apiTokenHash: auth.tokenHash)
    }
}
