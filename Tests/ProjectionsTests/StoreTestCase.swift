import Contracts
import Foundation
import Logging
@testable import Projections
import XCTest

/// Gives each test its own temporary directory for real SQLite files, removed afterwards.
class StoreTestCase: XCTestCase {
    private(set) var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushline-projections-\(UUID().uuidString.lowercased())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        if let directory {
            try FileManager.default.removeItem(at: directory)
        }
    }

    func path(_ name: String = "store.sqlite") -> String {
        directory.appendingPathComponent(name).path
    }

    func openStore(_ name: String = "store.sqlite") throws -> SQLiteProjectionStore {
        var logger = Logger(label: "projections-test")
        logger.logLevel = .warning
        return try SQLiteProjectionStore(path: path(name), logger: logger)
    }

    /// Asserts that `body` throws exactly `expected`.
    func assertThrows(_ expected: ProjectionStoreError, file: StaticString = #filePath, line: UInt = #line,
                      _ body: () async throws -> Void) async {
        do {
            try await body()
            XCTFail("expected \(expected), nothing was thrown", file: file, line: line)
        } catch let error as ProjectionStoreError {
            XCTAssertEqual(error, expected, file: file, line: line)
        } catch {
            XCTFail("expected \(expected), got \(error)", file: file, line: line)
        }
    }
}

/// Rows and dates for tests. Dates have whole milliseconds, the precision the store keeps.
enum Fixture {
    static let t0 = Date(timeIntervalSince1970: 1_763_800_000.123)

    static func at(_ seconds: Double) -> Date {
        t0.addingTimeInterval(seconds)
    }

    static func app(_ appId: UUID = UUID(), name: String = "app", callbackUrl: String? = nil,
                    headers: [String: String] = [:], retries: Int = 0) -> AppRow {
        AppRow(appId: appId, orgId: UUID(), name: name, callbackUrl: callbackUrl, callbackHeaders: headers,
               webhookRetries: retries, createdAt: t0)
    }

    static func token(app appId: UUID, revoked: Bool = false, at seconds: Double = 0) -> ApiTokenRow {
        ApiTokenRow(tokenId: UUID(), appId: appId, tokenHash: ApiTokens.hash(ApiTokens.generate()), revoked: revoked,
                    createdAt: at(seconds))
    }

    static func device(app appId: UUID, token: String, user: String, platform: Platform = .ios, version: Int64 = 1) -> DeviceRow {
        DeviceRow(appId: appId, deviceToken: token, userId: user, platform: platform, version: version, updatedAt: at(1))
    }

    static func status(app appId: UUID, request: UUID = UUID(), status: DeviceRegistrationAPI.Status = .Success,
                       reason: DeviceRegistrationAPI.FailureReason? = nil) -> RegistrationStatusRow {
        RegistrationStatusRow(requestId: request, appId: appId, status: status, failureReason: reason, decidedAt: at(2))
    }

    static func job(_ id: String, app appId: UUID? = nil, body: String = #"{"Status":"Success"}"#, maxAttempts: Int = 3,
                    due seconds: Double = 0) -> OutboxJob {
        OutboxJob(id: id, kind: "registration-status", appId: appId, url: "https://example.test/hook",
                  headers: ["x-extra": "1"], body: Data(body.utf8), maxAttempts: maxAttempts,
                  nextAttemptAt: at(seconds), createdAt: at(seconds))
    }

    static func pending(app appId: UUID, token: String, nid: String, delivery: UUID = UUID(), sent seconds: Double = 3,
                        text: String = "hello", business: String? = nil) -> PendingNotificationRow {
        PendingNotificationRow(appId: appId, deviceToken: token, notificationId: nid, deliveryId: delivery, sentAt: at(seconds),
                               text: text, businessId: business)
    }

    static func ack(app appId: UUID, token: String, nid: String, business: String? = nil, at seconds: Double = 4) -> AckRow {
        AckRow(appId: appId, deviceToken: token, notificationId: nid, businessId: business, ackedAt: at(seconds))
    }

    static func delivery(app appId: UUID, id: UUID = UUID(), kind: NotificationKind = .alert, managed: Bool = true,
                         tracking: Bool = false, sent: Int = 2) -> DeliveryRow {
        DeliveryRow(appId: appId, deliveryId: id, kind: kind, managed: managed, tracking: tracking, sent: sent, createdAt: at(3))
    }

    static func partition(_ number: Int32, topic: String = "pushline.commands.registration") -> PartitionKey {
        PartitionKey(topic: topic, partition: number)
    }
}
