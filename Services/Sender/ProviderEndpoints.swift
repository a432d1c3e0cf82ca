import Contracts

/// Where pushes go: Apple's hosts per environment and Google's, unless the settings name others
/// (`PUSHLINE_APNS_URL`, `PUSHLINE_FCM_URL`: the mock servers in tests and local runs).
public struct ProviderEndpoints: Sendable, Equatable {
    public static let apnsProduction = "https://api.push.apple.com"
    public static let apnsSandbox = "https://api.sandbox.push.apple.com"
    public static let fcmDefault = "https://fcm.googleapis.com"

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
}
