/// The type names of every command Pushline writes to Kafka. The raw value is the envelope's
/// `type` and the record header `type`.
public enum CommandType: String, Sendable, CaseIterable, Codable {
    case appCreated = "admin.app-created"
    case apiTokenIssued = "admin.api-token-issued"
    case apiTokenRevoked = "admin.api-token-revoked"
    case appSettingsChanged = "admin.app-settings-changed"
    case pushCredentialsSet = "admin.push-credentials-set"
    case pushCredentialsRemoved = "admin.push-credentials-removed"
    case deviceRegistrationRequested = "registration.device-registration-requested"
    case deviceCleanupRequested = "registration.device-cleanup-requested"
    case deviceChangeRequested = "registration.device-change-requested"
    case notificationRequested = "notification.requested"
    case notificationAcknowledged = "notification.acknowledged"
    case notificationCancelled = "notification.cancelled"
    case userSettingsChanged = "notification.user-settings-changed"
    case trackingReported = "tracking.reported"
    case deliveryResultReported = "delivery.result-reported"
    case adminTokenIssued = "admin.admin-token-issued"
    case adminTokenRevoked = "admin.admin-token-revoked"
    case userIdentityChanged = "admin.user-identity-changed"
}
