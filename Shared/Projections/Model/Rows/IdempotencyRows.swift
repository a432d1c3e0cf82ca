import Foundation

/// The first request of an `Idempotency-Key` on an admin route that creates something (an app,
/// a token): what it created and its body's hash, so that ingest answers a retry with it and
/// refuses the key with another body (docs/API.md#idempotency-keys). Sends keep theirs on the
/// delivery (`DeliveryRow.idempotencyKey`).
public struct IdempotencyKeyRow: Sendable, Equatable, Codable {
    /// Whose key it is and on which route, e.g. `admin:bootstrap:apps` or
    /// `admin:<admin token id>:apps/<app id>/tokens`: keys of different callers never meet.
    public var scope: String
    public var key: String
    /// What the first request created (the app or the token).
    public var resourceId: UUID
    /// `IdempotencyKeys.requestHash` of the first request's body.
    public var requestHash: String
    /// The first request's time in the log: the key's window starts there.
    public var firstAt: Date

    public init(scope: String, key: String, resourceId: UUID, requestHash: String, firstAt: Date) {
        self.scope = scope
        self.key = key
        self.resourceId = resourceId
        self.requestHash = requestHash
        self.firstAt = firstAt
    }
}
