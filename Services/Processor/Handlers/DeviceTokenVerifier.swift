import Contracts

/// Decides whether a device token can receive pushes: the registration API's "dry run"
/// (`DryRunSendingFailed`, docs/API.md#registration-outcomes).
///
/// The default checks the platform's token format; a deployment that holds APNs/FCM
/// credentials may plug in a verifier that sends a real invisible notification.
public protocol DeviceTokenVerifier: Sendable {
    func verify(token: String, platform: Platform) -> Bool
}

/// The platform's token format (`DeviceTokenFormat`), the same rule ingest applies.
public struct TokenFormatVerifier: DeviceTokenVerifier {
    public init() {}

    public func verify(token: String, platform: Platform) -> Bool {
        DeviceTokenFormat.isValid(token, platform: platform)
    }
}
