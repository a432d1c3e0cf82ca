import Contracts
import Foundation
@testable import Projections

/// Mutations of every row kind with fixed values, whose entry bytes as written before row
/// columns came from the catalog (tags 1–42) are kept in `ChangelogTests`: entries already
/// published must stay readable.
enum LegacyChangelogFixtures {
    static let app = UUID(uuidString: "6F1C1A52-52D4-4F0B-9A43-6B3F8F3E2A10")!
    static let other = UUID(uuidString: "0A9E2F3B-1C4D-4E5F-8A6B-7C8D9E0F1A2B")!
    static let at = Date(timeIntervalSince1970: 1_763_800_000.123_456)

    static var mutations: [Mutation] {
        var scoped = ApiTokenRow(tokenId: other, appId: app, tokenHash: "hash", createdAt: at)
        scoped.scopes = [.client]
        return [
            .upsertApp(AppRow(appId: app, orgId: other, name: "app", callbackUrl: "https://example.test/cb", callbackHeaders: ["X-A": "1"],
                              webhookRetries: 2, createdAt: at)),
            .upsertApp(AppRow(appId: app, orgId: other, name: "with credentials", createdAt: at,
                              pushCredentials: Fixture.pushCredentials(2))),
            .upsertApiToken(ApiTokenRow(tokenId: other, appId: app, tokenHash: "hash", revoked: true, createdAt: at)),
            .upsertApiToken(scoped),
            .upsertDevice(DeviceRow(appId: app, deviceToken: "token", userId: "user", platform: .android, version: 3, updatedAt: at)),
            .putRegistrationStatus(RegistrationStatusRow(requestId: other, appId: app, status: .Failed, failureReason: .DeviceTokenTooLong,
                                                         decidedAt: at)),
            .enqueueOutbox(OutboxJob(id: "job", kind: "registration-status", appId: app, url: "https://example.test/h", headers: ["A": "b"],
                                     body: Data([0, 1, 255]), maxAttempts: 3, nextAttemptAt: at, createdAt: at)),
            .restoreOutbox(OutboxJob(id: "job2", kind: "callback", appId: nil, url: "u", headers: [:], body: Data(), maxAttempts: 1,
                                     attempts: 1, nextAttemptAt: at, state: .failed, lastStatus: 500, lastError: "boom", createdAt: at)),
            .putPending(PendingNotificationRow(appId: app, deviceToken: "token", notificationId: "n1", deliveryId: other, sentAt: at,
                                               text: "hello", businessId: "b")),
            .putAck(AckRow(appId: app, deviceToken: "token", notificationId: "n1", businessId: nil, ackedAt: at)),
            .putDelivery(DeliveryRow(appId: app, deliveryId: other, kind: .alert, managed: true, tracking: false, sent: 4, createdAt: at)),
            .putDelivery(DeliveryRow(appId: app, deliveryId: other, kind: .ticket, managed: false, tracking: true, sent: 4, createdAt: at,
                                     delivered: 1, failed: 2, unregistered: 1)),
            .putDelivery(DeliveryRow(appId: app, deliveryId: other, kind: .im, managed: false, tracking: false, sent: 1, createdAt: at,
                                     idempotencyKey: "key", requestHash: "hash", duplicates: 2, conflicts: 1)),
            .putDeliveryOutcome(DeliveryOutcomeRow(appId: app, deliveryId: other, messageIndex: 7, deviceToken: "token", outcome: .failed,
                                                   reason: "BadDeviceToken", reportedAt: at)),
            .upsertAdminToken(AdminTokenRow(adminTokenId: other, name: "ops", tokenHash: "h", revoked: true, createdAt: at, revokedAt: at)),
            .putAuditEntry(AuditEntryRow(commandId: other, at: at, type: "AppCreated", appId: app, actorId: nil, actorName: "ops",
                                         requestId: "r", outcome: "applied", reason: nil, changes: "{}")),
            .putIdempotencyKey(IdempotencyKeyRow(scope: "apps", key: "k", resourceId: app, requestHash: "h", firstAt: at)),
        ]
    }
}
