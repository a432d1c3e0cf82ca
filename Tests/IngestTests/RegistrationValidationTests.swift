import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import XCTest

/// Structurally invalid registrations are a 400 naming the field, and nothing is published
/// (docs/API.md#errors-and-status-codes) — for a batch, not even its valid elements.
final class RegistrationValidationTests: XCTestCase {
    /// Sends each case to a fresh application and checks the 400's field and that nothing was published.
    func assertRejected(_ path: String, _ json: String, headers: HTTPFields = [:], field: String,
                        file: StaticString = #filePath, line: UInt = #line) async throws {
        let harness = Harness()
        let response = try await harness.test { client in
            try await client.post(path, json: json, headers: headers)
        }
        try assertProblem(response, .badRequest, field: field, file: file, line: line)
        await assertNothingPublished(harness.publisher, file: file, line: line)
    }

    func assertRejected(_ path: String, object: Any, headers: HTTPFields = [:], field: String,
                        file: StaticString = #filePath, line: UInt = #line) async throws {
        try await assertRejected(path, Fixture.json(object), headers: headers, field: field, file: file, line: line)
    }

    func testMalformedJSONIs400() async throws {
        try await assertRejected(Fixture.devices(), #"{"MobileAppId": "#, field: "body")
        try await assertRejected(Fixture.devices() + "/batch", "[{}", field: "body")
    }

    func testNonObjectWhereAnObjectIsExpectedIs400() async throws {
        try await assertRejected(Fixture.devices(), object: [Fixture.registration()], field: "body")
        try await assertRejected(Fixture.devices(), "\"text\"", field: "body")
        try await assertRejected(Fixture.devices() + "/batch", object: Fixture.registration(), field: "body")
        try await assertRejected(Fixture.devices() + "/batch", object: [Fixture.registration(), 42], field: "[1]")
    }

    func testMissingOrEmptyFieldsAre400NamingThem() async throws {
        try await assertRejected(Fixture.devices(), object: Fixture.registration(app: nil), field: "MobileAppId")
        try await assertRejected(Fixture.devices(), object: Fixture.registration(user: nil), field: "UserId")
        try await assertRejected(Fixture.devices(), object: Fixture.registration(user: ""), field: "UserId")
        try await assertRejected(Fixture.devices(), object: Fixture.registration(token: nil), field: "ApiToken")
        try await assertRejected(Fixture.devices(), object: Fixture.registration(token: ""), field: "ApiToken")
    }

    func testMobileAppIdMustBeAUUID() async throws {
        var body = Fixture.registration()
        body["MobileAppId"] = "my-app"
        try await assertRejected(Fixture.devices(), object: body, field: "MobileAppId")
    }

    func testFieldOfTheWrongJSONTypeIs400NamingIt() async throws {
        var body = Fixture.registration()
        body["UserId"] = 12345
        try await assertRejected(Fixture.devices(), object: body, field: "UserId")
    }

    func testBothOrNeitherDeviceTokenIs400() async throws {
        try await assertRejected(Fixture.devices(), object: Fixture.registration(apns: "ab", fcm: "cd"),
                                 field: "ApnsDeviceToken|FcmDeviceToken")
        try await assertRejected(Fixture.devices(), object: Fixture.registration(apns: nil, fcm: nil),
                                 field: "ApnsDeviceToken|FcmDeviceToken")
        try await assertRejected(Fixture.devices(), object: Fixture.registration(apns: "", fcm: ""),
                                 field: "ApnsDeviceToken|FcmDeviceToken")
    }

    func testBatchOfZeroOrMoreThan100Is400() async throws {
        try await assertRejected(Fixture.devices() + "/batch", "[]", field: "body")
        let tooMany = (0...100).map { Fixture.registration(user: "user-\($0)") }
        try await assertRejected(Fixture.devices() + "/batch", object: tooMany, field: "body")
    }

    func testInvalidBatchElementRejectsTheWholeBatchNamingTheElement() async throws {
        var batch = (0..<5).map { Fixture.registration(user: "user-\($0)") }
        batch[3]["UserId"] = nil
        try await assertRejected(Fixture.devices() + "/batch", object: batch, field: "[3].UserId")
        batch[3] = Fixture.registration(apns: nil)
        try await assertRejected(Fixture.devices() + "/batch", object: batch, field: "[3].ApnsDeviceToken|FcmDeviceToken")
        batch[3] = Fixture.registration(app: nil)
        try await assertRejected(Fixture.devices() + "/batch", object: batch, field: "[3].MobileAppId")
    }

    func testCallbackURLMustBeAnAbsoluteHTTPURLWithAHost() async throws {
        for url in ["/relative/path", "ftp://example.com/cb", "https://", "not a url", "mailto:ops@example.com",
                    "https://exa mple.com/cb"] {
            try await assertRejected(Fixture.devices(), object: Fixture.registration(), headers: [.xMsCallbackURL: url],
                                     field: "x-ms-callback-url")
        }
        try await assertRejected(Fixture.devices(), object: Fixture.registration(),
                                 headers: [.xMsStatusCallbackURL: "/relative"], field: "x-ms-status-callback-url")
        try await assertRejected(Fixture.devices() + "/batch", object: [Fixture.registration()],
                                 headers: [.xMsCallbackURL: "ftp://example.com"], field: "x-ms-callback-url")
    }

    func testCallbackHeadersMustBeAJSONObjectOfStrings() async throws {
        for headers in ["not json", #"["a", "b"]"#, #"{"x-count": 3}"#, #"{"x": {"y": "z"}}"#, #"{"bad name": "v"}"#,
                        #"{"x-a": "line\r\nInjected: yes"}"#] {
            try await assertRejected(Fixture.devices(), object: Fixture.registration(), headers: [
                .xMsCallbackURL: Fixture.callbackURL, .xMsCallbackURLHeaders: headers,
            ], field: "x-ms-callback-url-headers")
        }
    }

    func testOrgIdInThePathMustBeAUUID() async throws {
        try await assertRejected("/api/v1.0/orgs/acme/pushdeviceregistration/devices", object: Fixture.registration(),
                                 field: "orgId")
        try await assertRejected("/api/v1.0/orgs/acme/pushdeviceregistration/devices/status",
                                 object: ["RegistrationRequestIds": [String](), "MobileAppId": Fixture.appId.uuidString,
                                          "ApiToken": "t"], field: "orgId")
    }

    func testEmptyBodyIs400() async throws {
        try await assertRejected(Fixture.devices(), "", field: "body")
    }
}
