import Contracts
import Foundation

/// Where pushes go: Apple's hosts per environment and Google's, unless the settings name others
/// (`PUSHLINE_APNS_URL`, `PUSHLINE_FCM_URL`: the mock servers in tests and local runs).
public struct ProviderEndpoints: Sendable, Equatable {
    public static let apnsProduction = "https://api.push.apple.com"
    public static let apnsSandbox = "https://api.sandbox.push.apple.com"
    public static let fcmDefault = "https://fcm.googleapis.com"
    /// Google's OAuth 2.0 token endpoint, the `token_uri` of every Google service account.
    public static let googleTokenURI = "https://oauth2.googleapis.com/token"

    /// One APNs base URL for both environments, instead of Apple's two.
    public var apnsOverride: String?
    public var fcm: String

    public init(apnsOverride: String? = nil, fcm: String = ProviderEndpoints.fcmDefault) {
        self.apnsOverride = apnsOverride
        self.fcm = fcm
    }

    public func apns(_ environment: APNsEnvironment) -> String {
        apnsOverride ?? (environment == .production ? Self.apnsProduction : Self.apnsSandbox)
    }

    /// Whether the sender may post a service account's signed assertion to `tokenURI`: Google's
    /// token endpoint, or an https URL on the origin (scheme, host and port) of the FCM endpoint
    /// the deployment names (`PUSHLINE_FCM_URL`: a mock server's). An app's credentials choose
    /// their `token_uri`; without this, whoever may set them could make the sender post to any
    /// host it reaches.
    public func allowsTokenURI(_ tokenURI: String) -> Bool {
        guard let url = URLComponents(string: tokenURI), url.scheme?.lowercased() == "https", url.host != nil else { return false }
        if tokenURI == Self.googleTokenURI { return true }
        guard let fcm = URLComponents(string: fcm) else { return false }
        return Self.origin(url) == Self.origin(fcm) && fcm.host != URLComponents(string: Self.fcmDefault)?.host
    }

    private static func origin(_ url: URLComponents) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }
}
