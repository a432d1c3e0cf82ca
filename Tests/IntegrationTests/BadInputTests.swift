import Contracts
import Foundation
import NIOHTTP1
import TestSupport
import XCTest

/// Every structurally bad request gets its 4xx and writes nothing to Kafka
/// (docs/ARCHITECTURE.md#limits-on-hostile-input).
final class BadInputTests: XCTestCase {
    typealias API = DeviceRegistrationAPI
    private var stack: PushlineStack!

    override func setUp() async throws {
        stack = try await PushlineStack.start()
    }

    override func tearDown() async throws {
        await stack?.stop()
    }

    func testBadRequestsAreRejectedAndNothingReachesKafka() async throws {
        let app = try await stack.createApp()
        let org = app.orgId, appId = app.mobileAppId.uuidString
        let good = API.Registration(MobileAppId: appId, UserId: "u", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(1))
        let encoder = JSONEncoder()
        func json<T: Encodable>(_ v: T) -> Data { try! encoder.encode(v) }
        let devices = stack.registrationURL(org: org, "devices")
        let batch = stack.registrationURL(org: org, "devices/batch")
        let cleanup = stack.registrationURL(org: org, "devices/cleanup")
        let cleanupBatch = stack.registrationURL(org: org, "devices/cleanup/batch")

        struct Case { var name: String; var url: String; var body: Data; var headers: [String: String] = [:]; var contentType: String? = "application/json"; var status: Int; var field: String? }
        var both = good; both.FcmDeviceToken = Tokens.fcm(1)
        var neither = good; neither.ApnsDeviceToken = nil
        var noUser = good; noUser.UserId = nil
        var noToken = good; noToken.ApiToken = nil
        var badApp = good; badApp.MobileAppId = "not-a-uuid"
        let cases: [Case] = [
            Case(name: "malformed JSON", url: devices, body: Data("{\"MobileAppId\": ".utf8), status: 400, field: nil),
            Case(name: "array for single", url: devices, body: json([good]), status: 400, field: nil),
            Case(name: "missing UserId", url: devices, body: json(noUser), status: 400, field: "UserId"),
            Case(name: "missing ApiToken", url: devices, body: json(noToken), status: 400, field: "ApiToken"),
            Case(name: "MobileAppId not a UUID", url: devices, body: json(badApp), status: 400, field: "MobileAppId"),
            Case(name: "both device tokens", url: devices, body: json(both), status: 400, field: nil),
            Case(name: "neither device token", url: devices, body: json(neither), status: 400, field: nil),
            Case(name: "empty batch", url: batch, body: json([API.Registration]()), status: 400, field: nil),
            Case(name: "batch of 101", url: batch, body: json(Array(repeating: good, count: 101)), status: 400, field: nil),
            Case(name: "bad element in batch", url: batch, body: json([good, good, noUser]), status: 400, field: "[2].UserId"),
            Case(name: "relative callback URL", url: devices, body: json(good), headers: [API.callbackURLHeader: "/hook"], status: 400, field: nil),
            Case(name: "ftp callback URL", url: devices, body: json(good), headers: [API.callbackURLHeader: "ftp://example.test/x"], status: 400, field: nil),
            Case(name: "callback headers not an object", url: devices, body: json(good),
                 headers: [API.callbackURLHeader: "http://127.0.0.1:1/x", API.callbackURLHeadersHeader: "[1,2]"], status: 400, field: nil),
            Case(name: "callback header values not strings", url: devices, body: json(good),
                 headers: [API.callbackURLHeader: "http://127.0.0.1:1/x", API.callbackURLHeadersHeader: #"{"a":1}"#], status: 400, field: nil),
            Case(name: "cleanup without UserId", url: cleanup, body: json(API.Cleanup(MobileAppId: appId, ApiToken: app.apiToken, UserId: nil)), status: 400, field: "UserId"),
            Case(name: "cleanup batch of 101", url: cleanupBatch,
                 body: json(Array(repeating: API.Cleanup(MobileAppId: appId, ApiToken: app.apiToken, UserId: "u"), count: 101)), status: 400, field: nil),
            Case(name: "body over 1 MiB", url: batch, body: Data(repeating: 0x20, count: (1 << 20) + 10), status: 413, field: nil),
            Case(name: "text/plain", url: devices, body: json(good), contentType: "text/plain", status: 415, field: nil),
            Case(name: "no content type", url: devices, body: json(good), contentType: nil, status: 415, field: nil),
        ]
        for c in cases {
            let answer = try await HTTPClientHelpers.request(.POST, c.url, body: c.body, headers: c.headers, contentType: c.contentType)
            XCTAssertEqual(answer.status, c.status, "\(c.name): \(answer.text)")
            if c.status == 400 {
                let problem = try? answer.decode(Problem.self)
                XCTAssertNotNil(problem, "\(c.name) answers a JSON problem: \(answer.text)")
                if let field = c.field { XCTAssertEqual(problem?.field, field, c.name) }
            }
        }
        let unknownRoute = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "nowhere"), json: good)
        XCTAssertEqual(unknownRoute.status, 404)

        // One good registration as a marker: once it is in the topic, everything before it is too.
        let marker = try await HTTPClientHelpers.post(devices, json: good)
        XCTAssertEqual(marker.status, 202)
        let registrations = try await stack.countRecords(topic: stack.topics.registration)
        XCTAssertEqual(registrations, 1, "only the marker reached Kafka")
        let admin = try await stack.countRecords(topic: stack.topics.admin)
        XCTAssertEqual(admin, 1, "only the app creation reached Kafka")
    }

    func testAdminRoutesRequireTheAdminToken() async throws {
        let none = try await HTTPClientHelpers.post("\(stack.ingestURL)/admin/v1/apps", json: AdminAPI.CreateApp(name: "x"))
        XCTAssertEqual(none.status, 401)
        let wrong = try await HTTPClientHelpers.post("\(stack.ingestURL)/admin/v1/apps", json: AdminAPI.CreateApp(name: "x"),
                                                     headers: ["Authorization": "Bearer nope"])
        XCTAssertEqual(wrong.status, 401)
        let admin = try await stack.countRecords(topic: stack.topics.admin)
        XCTAssertEqual(admin, 0)
    }
}
