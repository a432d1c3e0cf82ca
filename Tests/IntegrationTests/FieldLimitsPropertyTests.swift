import Contracts
import Foundation
import NIOHTTP1
import Projections
import TestSupport
import XCTest

/// Hostile input is normal input: every client route, sent fields of the largest size its limit
/// allows and one past it (in ASCII, multi-byte characters and characters JSON must escape),
/// through a real ingest and processor, on SQLite and on PostgreSQL. Property: each request is a
/// 4xx, or it is written and applied — and the pipeline goes on: every partition's lag returns to
/// 0, no record is dead-lettered, and the processor stays healthy. Seeded (`PUSHLINE_PROPERTY_SEED`
/// repeats a run); the seed is printed on failure.
final class FieldLimitsPropertyTests: XCTestCase {
    private var stack: PushlineStack?
    private var database: String?

    override func tearDown() async throws {
        await stack?.stop()
        if let database { try await PostgresServer.shared().dropDatabase(database) }
    }

    /// A string of exactly `bytes` UTF-8 bytes (or as close below as whole characters allow), of one kind.
    private static func text(_ bytes: Int, kind: Int) -> String {
        let unit: String = switch kind {
        case 0: "a"
        case 1: "é"            // 2 bytes
        case 2: "😀"           // 4 bytes
        default: "\"\\\u{1}"   // escaped by JSON: 3 bytes that become 10
        }
        var out = String(repeating: unit, count: bytes / unit.utf8.count)
        out += String(repeating: "a", count: bytes - out.utf8.count)
        return out
    }

    private struct Case {
        var name: String
        var limit: Int
        /// Whether one byte past `limit` is a 400: the registration API takes a longer token and
        /// decides it asynchronously (`DeviceTokenTooLong`, docs/API.md#registration-outcomes).
        var pastIsRefused = true
        var send: @Sendable (PushlineStack, AdminAPI.AppCreatedAnswer, String, Int) async throws -> HTTPClientHelpers.Answer
    }

    private static let cases: [Case] = [
        Case(name: "registration UserId", limit: FieldLimits.userIdBytes) { stack, app, value, n in
            try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices"), json: DeviceRegistrationAPI.Registration(
                MobileAppId: app.mobileAppId.uuidString, UserId: value, ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(n)))
        },
        Case(name: "registration FcmDeviceToken", limit: FieldLimits.deviceTokenBytes, pastIsRefused: false) { stack, app, value, _ in
            try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices"), json: DeviceRegistrationAPI.Registration(
                MobileAppId: app.mobileAppId.uuidString, UserId: "u", ApiToken: app.apiToken, FcmDeviceToken: value))
        },
        Case(name: "registration cleanup UserId", limit: FieldLimits.userIdBytes) { stack, app, value, _ in
            try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices/cleanup"), json: DeviceRegistrationAPI.Cleanup(
                MobileAppId: app.mobileAppId.uuidString, ApiToken: app.apiToken, UserId: value))
        },
        Case(name: "registration cleanup DeviceToken", limit: FieldLimits.deviceTokenBytes) { stack, app, value, _ in
            try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices/cleanup"), json: DeviceRegistrationAPI.Cleanup(
                MobileAppId: app.mobileAppId.uuidString, ApiToken: app.apiToken, UserId: "u", DeviceToken: value))
        },
        Case(name: "BW e-mail", limit: 254 - "@example.com".utf8.count) { stack, app, value, n in
            try await stack.call(.PUT, "/bwmi/v1/apps/\(app.mobileAppId)/devices",
                                 json: ["deviceId": Tokens.apns(n), "type": "IOS", "user": ["email": value + "@example.com"]], token: app.apiToken)
        },
        Case(name: "ack did", limit: FieldLimits.deviceTokenBytes) { stack, app, value, _ in
            try await stack.call(.PUT, "/bwmi/v1/apps/\(app.mobileAppId)/acks", json: ["nid": UUID().uuidString, "did": value], token: app.apiToken)
        },
        Case(name: "ack bid", limit: FieldLimits.shortTextBytes) { stack, app, value, _ in
            try await stack.call(.PUT, "/bwmi/v1/apps/\(app.mobileAppId)/acks",
                                 json: ["nid": UUID().uuidString, "did": Tokens.apns(0), "bid": value], token: app.apiToken)
        },
        Case(name: "KF5 userToken", limit: FieldLimits.userIdBytes) { stack, app, value, n in
            try await stack.call(.POST, "/kf5/v1/apps/\(app.mobileAppId)/tokens", json: ["userToken": value, "deviceToken": Tokens.apns(n)],
                                 token: app.apiToken)
        },
        Case(name: "KF5 deviceToken", limit: FieldLimits.deviceTokenBytes) { stack, app, value, _ in
            try await stack.call(.POST, "/kf5/v1/apps/\(app.mobileAppId)/tokens", json: ["userToken": "k", "deviceToken": value, "type": "ANDROID"],
                                 token: app.apiToken)
        },
        Case(name: "send userId", limit: FieldLimits.userIdBytes) { stack, app, value, _ in
            try await stack.call(.POST, "/v1/apps/\(app.mobileAppId)/notifications", json: ["userId": value, "title": "t", "managed": true],
                                 token: app.apiToken)
        },
        Case(name: "send businessId", limit: FieldLimits.shortTextBytes) { stack, app, value, _ in
            try await stack.call(.POST, "/v1/apps/\(app.mobileAppId)/notifications",
                                 json: ["userId": "u-0", "title": "t", "managed": true, "businessId": value], token: app.apiToken)
        },
        Case(name: "send im message", limit: FieldLimits.messageBytes) { stack, app, value, _ in
            try await stack.call(.POST, "/v1/apps/\(app.mobileAppId)/notifications",
                                 json: ["userId": "u-0", "kind": "im", "message": value], token: app.apiToken)
        },
        Case(name: "tracking broadlogId", limit: FieldLimits.broadlogIdBytes) { stack, app, value, _ in
            try await stack.call(.POST, "/v1/apps/\(app.mobileAppId)/tracking",
                                 json: ["deliveryId": UUID().uuidString, "broadlogId": value, "action": "7"], token: app.apiToken)
        },
        Case(name: "callback header value", limit: FieldLimits.callbackHeaderValueBytes) { stack, app, value, n in
            let headers = String(decoding: try JSONSerialization.data(withJSONObject: ["X-Key": value]), as: UTF8.self)
            return try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices"), json: DeviceRegistrationAPI.Registration(
                MobileAppId: app.mobileAppId.uuidString, UserId: "cb", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(n)),
                headers: [DeviceRegistrationAPI.callbackURLHeader: "http://127.0.0.1:9/hook", DeviceRegistrationAPI.callbackURLHeadersHeader: headers])
        },
    ]

    private func run(store: String?) async throws {
        let seed = ProcessInfo.processInfo.environment["PUSHLINE_PROPERTY_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
        var random = SplitMix64(seed: seed)
        let stack = try await PushlineStack.start(store: store)
        self.stack = stack
        let app = try await stack.createApp()
        var outcomes: [String] = []
        for n in 1...40 {
            let item = Self.cases[random.next(Self.cases.count)]
            let past = random.next(2) == 1
            let kind = random.next(4)
            let value = Self.text(item.limit + (past ? 1 : 0), kind: kind)
            let answer = try await item.send(stack, app, value, 1_000 + n)
            outcomes.append("\(item.name) \(past ? "limit+1" : "limit") kind \(kind): \(answer.status)")
            XCTAssertTrue((200..<300).contains(answer.status) || (400..<500).contains(answer.status),
                          "seed \(seed): \(item.name), \(value.utf8.count) bytes of kind \(kind): \(answer.status) \(answer.text)")
            if past && item.pastIsRefused {
                // One byte past the limit is refused (escaping only lengthens the record, not the field).
                XCTAssertTrue((400..<500).contains(answer.status), "seed \(seed): \(item.name) past its limit answered \(answer.status)")
            }
        }
        // The pipeline went on: every command partition applied to its end, nothing set aside.
        let partitions = stack.topics.commandTopics.count * 6
        try await eventually("every command partition applied to its end (seed \(seed))", timeout: .seconds(120)) {
            let text = try await HTTPClientHelpers.get("\(stack.processorURL)/metrics").text
            let lag = text.split(separator: "\n").filter { $0.hasPrefix("pushline_processor_consumer_lag{") }
            return lag.count == partitions && lag.allSatisfy { $0.hasSuffix(" 0.0") }
        }
        let letters = try await stack.openStore().deadLetters(after: nil, limit: 10)
        XCTAssertEqual(letters.map(\.reason), [], "seed \(seed): \(outcomes.joined(separator: "\n"))")
        let health = try await HTTPClientHelpers.get("\(stack.processorURL)/health")
        XCTAssertEqual(health.status, 200, "seed \(seed): \(health.text)")
    }

    func testLargestAndOnePastLargestFieldsOnSQLite() async throws {
        try await run(store: nil)
    }

    func testLargestAndOnePastLargestFieldsOnPostgreSQL() async throws {
        let server = try await PostgresServer.shared()
        let database = "pushline_limits_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        self.database = database
        try await run(store: try await server.createDatabase(database))
    }
}
