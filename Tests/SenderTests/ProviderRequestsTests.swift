import Contracts
import Foundation
import OutboundRendering
@testable import Sender
import WireCodec
import XCTest

/// Outbound records as the processor renders them, turned into APNs and FCM requests.
final class ProviderRequestsTests: XCTestCase {
    let app = UUID(uuidString: "00000000-0000-0000-0000-0000000000a1")!
    let delivery = UUID(uuidString: "00000000-0000-0000-0000-0000000000d1")!
    let sentAt = Date(timeIntervalSince1970: 1_800_000_000)

    private func record(_ content: NotificationContent, platform: Platform, token: String, messageId: String = "m-1") throws -> OutboundPush {
        let send = NotificationRequested(deliveryId: delivery, mobileAppId: app, target: NotificationTarget(userIds: ["u"]), content: content)
        return try OutboundPush.read(OutboundRecord.notification(send, deviceToken: token, platform: platform, messageId: messageId,
                                                                 sentAt: sentAt, managedBadge: nil))
    }

    private func header(_ request: APNsRequest, _ name: String) -> String? {
        request.headers.first { $0.name == name }?.value
    }

    func testAnAlertGoesToItsDeviceWithTheBundleAsTopicAtPriority10() throws {
        let record = try record(NotificationContent(title: "Hi", body: "there", badge: 2), platform: .ios, token: "ab01")
        let request = try APNsRequest.make(record, bundleId: "com.example.app")
        XCTAssertEqual(request.path, "/3/device/ab01")
        XCTAssertEqual(header(request, "apns-topic"), "com.example.app")
        XCTAssertEqual(header(request, "apns-push-type"), "alert")
        XCTAssertEqual(header(request, "apns-priority"), "10")
        XCTAssertNil(header(request, "apns-expiration"))
        XCTAssertEqual(request.body, record.payload, "the rendered payload is the body, byte for byte")
        XCTAssertEqual(try JSONValue.parse(request.body)["aps"]?["alert"], .object(["title": .string("Hi"), "body": .string("there")]))
        let expiring = try APNsRequest.make(record, bundleId: "b", expiresAt: Date(timeIntervalSince1970: 1_800_003_600.9))
        XCTAssertEqual(header(expiring, "apns-expiration"), "1800003600")
    }

    func testAWakeUpWithoutAlertIsABackgroundPushAtPriority5() throws {
        let record = try record(NotificationContent(contentAvailable: true), platform: .ios, token: "ab01")
        let request = try APNsRequest.make(record, bundleId: "b")
        XCTAssertEqual(header(request, "apns-push-type"), "background")
        XCTAssertEqual(header(request, "apns-priority"), "5")
        let withSound = try APNsRequest.make(try self.record(NotificationContent(sound: "default", contentAvailable: true), platform: .ios,
                                                             token: "ab01"), bundleId: "b")
        XCTAssertEqual(header(withSound, "apns-push-type"), "alert")
    }

    func testTheSendsCollapseKeyPriorityAndTimeToLiveBecomeAPNsHeaders() throws {
        let record = try record(NotificationContent(title: "Hi", collapseKey: "scores", priority: .normal, timeToLive: 600),
                                platform: .ios, token: "ab01")
        let request = try APNsRequest.make(record, bundleId: "b", expiresAt: record.expiry)
        XCTAssertEqual(header(request, "apns-collapse-id"), "scores")
        XCTAssertEqual(header(request, "apns-priority"), "5", "normal priority: delivered with power considerations")
        XCTAssertEqual(header(request, "apns-expiration"), "1800000600")
        let urgent = try APNsRequest.make(try self.record(NotificationContent(title: "Hi", priority: .high), platform: .ios, token: "ab01"),
                                          bundleId: "b")
        XCTAssertEqual(header(urgent, "apns-priority"), "10")
        XCTAssertNil(header(urgent, "apns-collapse-id"))
    }

    func testTheAPNsIdIsAUUIDOfTheMessageIdSoARepeatIsTheSamePush() throws {
        let id = APNsRequest.apnsId(messageId: "m-1")
        let uuid = try XCTUnwrap(UUID(uuidString: id))
        XCTAssertEqual(uuid.uuidString.lowercased(), id)
        XCTAssertEqual(Array(id)[14], "8", "version 8")
        XCTAssertTrue("89ab".contains(Array(id)[19]), "RFC variant")
        XCTAssertEqual(APNsRequest.apnsId(messageId: "m-1"), id)
        XCTAssertNotEqual(APNsRequest.apnsId(messageId: "m-2"), id)
        let record = try record(NotificationContent(title: "x"), platform: .ios, token: "ab", messageId: "m-1")
        XCTAssertEqual(header(try APNsRequest.make(record, bundleId: "b"), "apns-id"), id)
    }

    func testAnFCMDataMessageCarriesItsPriorityCollapseKeyAndTTLAsAndroidOptions() throws {
        let content = NotificationContent(title: "Hi", collapseKey: "scores", priority: .high, custom: ["k": "v"])
        let record = try record(content, platform: .android, token: "fcm-token")
        let request = try FCMRequest.make(record, projectId: "my-project", expiresAt: sentAt.addingTimeInterval(90.2), now: sentAt)
        XCTAssertEqual(request.path, "/v1/projects/my-project/messages:send")
        let message = try XCTUnwrap(try JSONValue.parse(request.body)["message"])
        XCTAssertEqual(message["token"], .string("fcm-token"))
        XCTAssertEqual(message["data"], try JSONValue.parse(record.payload)["data"])
        XCTAssertEqual(message["data"]?["k"], .string("v"))
        XCTAssertEqual(message["android"], .object(["priority": .string("HIGH"), "collapse_key": .string("scores"), "ttl": .string("91s")]))
        XCTAssertNil(message["notification"], "a data message")
    }

    func testARecordWrittenBeforeTheRecordCarriedItsOptionsTakesThemFromThePayload() throws {
        let send = NotificationRequested(deliveryId: delivery, mobileAppId: app, target: NotificationTarget(userIds: ["u"]),
                                         content: NotificationContent(title: "Hi", collapseKey: "sc\"ores", priority: .normal))
        var w = JSONWriter()
        OutboundRecord.encode(mobileAppId: app, deviceToken: "fcm-token", platform: .android, deliveryId: delivery, messageId: "m-1",
                              into: &w) { w in
            PushPayload.render(send, platform: .android, messageId: "m-1", sentAt: sentAt, managedBadge: nil, into: &w)
        }
        let record = try OutboundPush.read(w.data)
        XCTAssertNil(record.collapseKey)
        let message = try XCTUnwrap(try JSONValue.parse(try FCMRequest.make(record, projectId: "p").body)["message"])
        XCTAssertEqual(message["android"], .object(["priority": .string("NORMAL"), "collapse_key": .string("sc\"ores")]))
        XCTAssertEqual(message["data"]?["title"], .string("Hi"))
    }

    func testABadgeUpdateIsAPlainDataMessage() throws {
        let view = try OutboundPush.read(OutboundRecord.badgeUpdate(mobileAppId: app, deviceToken: "fcm-token", platform: .android,
                                                                    ackId: UUID(), badge: 3))
        let message = try XCTUnwrap(try JSONValue.parse(try FCMRequest.make(view, projectId: "p").body)["message"])
        XCTAssertEqual(message, .object(["token": .string("fcm-token"), "data": .object(["badge": .string("3")])]))
    }

    func testARecordWhosePayloadIsNotAnObjectIsRefused() throws {
        let view = try OutboundPush.read(Data(#"{"mobileAppId":"\#(app)","deviceToken":"t","platform":"ios","messageId":"m","payload":"x"}"#.utf8))
        XCTAssertThrowsError(try APNsRequest.make(view, bundleId: "b"))
        XCTAssertThrowsError(try FCMRequest.make(view, projectId: "p"))
    }
}

/// What each provider answer means.
final class ProviderAnswersTests: XCTestCase {
    private func body(_ json: String) -> Data { Data(json.utf8) }

    func testAPNsAnswers() {
        XCTAssertEqual(ProviderAnswers.apns(status: 200, body: Data()), .delivered)
        XCTAssertEqual(ProviderAnswers.apns(status: 410, body: body(#"{"reason":"Unregistered","timestamp":1800000000123}"#)),
                       .unregistered(reason: "Unregistered", since: Date(timeIntervalSince1970: 1_800_000_000.123)))
        XCTAssertEqual(ProviderAnswers.apns(status: 400, body: body(#"{"reason":"BadDeviceToken"}"#)),
                       .unregistered(reason: "BadDeviceToken", since: nil))
        XCTAssertEqual(ProviderAnswers.apns(status: 400, body: body(#"{"reason":"DeviceTokenNotForTopic"}"#)),
                       .failed(status: 400, reason: "DeviceTokenNotForTopic"))
        for reason in ["InvalidProviderToken", "ExpiredProviderToken", "MissingProviderToken"] {
            XCTAssertEqual(ProviderAnswers.apns(status: 403, body: body(#"{"reason":"\#(reason)"}"#)), .credentialsRejected(reason: reason))
        }
        XCTAssertEqual(ProviderAnswers.apns(status: 429, body: body(#"{"reason":"TooManyRequests"}"#), retryAfter: "7"),
                       .retry(reason: "TooManyRequests", retryAfter: 7))
        XCTAssertEqual(ProviderAnswers.apns(status: 503, body: body("not json")), .retry(reason: "HTTP 503", retryAfter: nil))
        XCTAssertEqual(ProviderAnswers.apns(status: 413, body: body(#"{"reason":"PayloadTooLarge"}"#)),
                       .failed(status: 413, reason: "PayloadTooLarge"))
    }

    func testFCMAnswers() {
        func google(_ code: Int, _ status: String, _ message: String = "m", errorCode: String? = nil) -> Data {
            let details = errorCode.map { #","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#($0)"}]"# } ?? ""
            return Data(#"{"error":{"code":\#(code),"message":"\#(message)","status":"\#(status)"\#(details)}}"#.utf8)
        }
        XCTAssertEqual(ProviderAnswers.fcm(status: 200, body: body(#"{"name":"projects/p/messages/1"}"#)), .delivered)
        XCTAssertEqual(ProviderAnswers.fcm(status: 404, body: google(404, "NOT_FOUND", errorCode: "UNREGISTERED")),
                       .unregistered(reason: "UNREGISTERED", since: nil))
        XCTAssertEqual(ProviderAnswers.fcm(status: 400, body: google(400, "INVALID_ARGUMENT",
                                                                     "The registration token is not a valid FCM registration token",
                                                                     errorCode: "INVALID_ARGUMENT")),
                       .unregistered(reason: "INVALID_ARGUMENT", since: nil))
        XCTAssertEqual(ProviderAnswers.fcm(status: 400, body: google(400, "INVALID_ARGUMENT", "Invalid JSON payload", errorCode: "INVALID_ARGUMENT")),
                       .failed(status: 400, reason: "INVALID_ARGUMENT"), "a bad payload is not a dead token")
        XCTAssertEqual(ProviderAnswers.fcm(status: 401, body: google(401, "UNAUTHENTICATED")), .credentialsRejected(reason: "UNAUTHENTICATED"))
        XCTAssertEqual(ProviderAnswers.fcm(status: 403, body: google(403, "PERMISSION_DENIED")), .credentialsRejected(reason: "PERMISSION_DENIED"))
        XCTAssertEqual(ProviderAnswers.fcm(status: 403, body: google(403, "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH")),
                       .failed(status: 403, reason: "SENDER_ID_MISMATCH"))
        XCTAssertEqual(ProviderAnswers.fcm(status: 429, body: google(429, "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED"), retryAfter: "30"),
                       .retry(reason: "QUOTA_EXCEEDED", retryAfter: 30))
        XCTAssertEqual(ProviderAnswers.fcm(status: 500, body: google(500, "INTERNAL")), .retry(reason: "INTERNAL", retryAfter: nil))
    }

    func testRetryAfterIsReadInSecondsOrAsAnHTTPDate() {
        let now = Date(timeIntervalSince1970: 1_445_412_480)  // Wed, 21 Oct 2015 07:28:00 GMT
        XCTAssertEqual(ProviderAnswers.parseRetryAfter(" 120 ", now: now), 120)
        XCTAssertEqual(ProviderAnswers.parseRetryAfter("Wed, 21 Oct 2015 07:30:00 GMT", now: now), 120)
        XCTAssertEqual(ProviderAnswers.parseRetryAfter("Wed, 21 Oct 2015 07:00:00 GMT", now: now), 0, "a past date means now")
        XCTAssertNil(ProviderAnswers.parseRetryAfter("-5", now: now))
        XCTAssertNil(ProviderAnswers.parseRetryAfter("soon", now: now))
    }

    func testBackOffGrowsWithJitterUnderItsCapAndHonoursRetryAfter() {
        var random = SystemRandomNumberGenerator()
        let policy = RetryPolicy(base: 1, cap: 60)
        for attempt in 1...12 {
            let ceiling = min(60, pow(2, Double(attempt - 1)))
            let delays = (0..<200).map { _ in policy.delay(afterAttempt: attempt, retryAfter: nil, using: &random) }
            XCTAssertTrue(delays.allSatisfy { (0...ceiling).contains($0) }, "attempt \(attempt)")
            if attempt >= 4 { XCTAssertGreaterThan(Set(delays).count, 100, "jittered") }
        }
        let honoured = (0..<200).map { _ in policy.delay(afterAttempt: 1, retryAfter: 30, using: &random) }
        XCTAssertTrue(honoured.allSatisfy { (30...33).contains($0) })
    }
}
