import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
@testable import Ingest
import XCTest

/// Refusals before any decoding (413, 415, 404) and the 503 when the broker does not acknowledge
/// (docs/ARCHITECTURE.md#acknowledged-means-durable): never a false 2xx, nothing published on a
/// 4xx.
final class TransportTests: XCTestCase {
    func testBodyOverOneMebibyteIs413AndPublishesNothing() async throws {
        let harness = await Harness.withClientApps()
        let token = String(repeating: "a", count: 1_048_576)
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration(apns: nil, fcm: token))
        }
        try assertProblem(response, .contentTooLarge, field: "body", code: .bodyTooLarge)
        await assertNothingPublished(harness.publisher)
    }

    func testBodyLimitIsEnforcedWhileCollectingWhenNoLengthIsDeclared() async throws {
        let chunks = AsyncStream<ByteBuffer> { continuation in
            for _ in 0..<4 { continuation.yield(ByteBuffer(repeating: UInt8(ascii: " "), count: 400)) }
            continuation.finish()
        }
        let request = Request(
            head: HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: "/x",
                              headerFields: [.contentType: "application/json"]),
            body: RequestBody(asyncSequence: chunks))
        do {
            _ = try await JSONBody.collect(request, limit: 1_000)
            XCTFail("a 1600-byte body passed a 1000-byte limit")
        } catch IngestError.rejected(let status, let problem) {
            XCTAssertEqual(status, .contentTooLarge)
            XCTAssertEqual(problem.field, "body")
        }
    }

    func testDeclaredContentLengthOverTheLimitIs413BeforeTheBodyIsRead() async throws {
        // The body stream would fail if read: only the declared length can have caused the 413.
        struct NotToBeRead: Error {}
        let unread = AsyncThrowingStream<ByteBuffer, any Error> { $0.finish(throwing: NotToBeRead()) }
        let request = Request(
            head: HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: "/x",
                              headerFields: [.contentType: "application/json", .contentLength: "2000"]),
            body: RequestBody(asyncSequence: unread))
        do {
            _ = try await JSONBody.collect(request, limit: 1_000)
            XCTFail("a body declared at 2000 bytes passed a 1000-byte limit")
        } catch IngestError.rejected(let status, _) {
            XCTAssertEqual(status, .contentTooLarge)
        }
    }

    func testANulCharacterInAnyStringIs400AndPublishesNothing() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration(user: "user\u{0}1"))
        }
        try assertProblem(response, .badRequest, field: "body", code: .bodyMalformed)
        XCTAssertTrue(String(buffer: response.body).contains("NUL character"), String(buffer: response.body))
        await assertNothingPublished(harness.publisher)
    }

    func testConfiguredBodyLimitApplies() async throws {
        var harness = await Harness.withClientApps()
        harness.configuration.maxBodyBytes = 64
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration())
        }
        XCTAssertEqual(response.status, .contentTooLarge)
        await assertNothingPublished(harness.publisher)
    }

    func testContentTypeOtherThanJSONIs415() async throws {
        let harness = await Harness.withClientApps()
        try await harness.test { client in
            for contentType in ["text/plain", "application/x-www-form-urlencoded", "application/json; charset=iso-8859-1"] {
                let response = try await client.post(Fixture.devices(), object: Fixture.registration(),
                                                     headers: [.contentType: contentType])
                try assertProblem(response, .unsupportedMediaType, field: "Content-Type", code: .mediaTypeUnsupported)
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    func testMissingContentTypeOnABodyIs415() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.execute(uri: Fixture.devices(), method: .post,
                                     body: ByteBuffer(string: try Fixture.json(Fixture.registration())))
        }
        try assertProblem(response, .unsupportedMediaType, field: "Content-Type")
        await assertNothingPublished(harness.publisher)
    }

    func testJSONWithUTF8CharsetParameterIsAccepted() async throws {
        let harness = await Harness.withClientApps()
        try await harness.test { client in
            for contentType in ["application/json; charset=utf-8", "Application/JSON;charset=\"UTF-8\""] {
                let response = try await client.post(Fixture.devices(), object: Fixture.registration(),
                                                     headers: [.contentType: contentType])
                XCTAssertEqual(response.status, .accepted, contentType)
            }
        }
        let calls = await harness.publisher.calls
        XCTAssertEqual(calls.count, 2)
    }

    func testUnknownRouteIs404Problem() async throws {
        let harness = await Harness.withClientApps()
        try await harness.test { client in
            try assertProblem(try await client.execute(uri: "/nope", method: .get), .notFound, field: nil, code: .notFound)
            try assertProblem(try await client.post(Fixture.base() + "/phones", object: Fixture.registration()),
                              .notFound, field: nil)
        }
        await assertNothingPublished(harness.publisher)
    }

    func testPublishFailureIs503WithRetryAfterNeverA2xx() async throws {
        var harness = await Harness.withClientApps()
        harness.configuration.retryAfterSeconds = 7
        await harness.publisher.failEveryPublish(with: PublishUnavailable(reason: "broker timed out"))
        try await harness.test { client in
            let responses = [
                try await client.post(Fixture.devices(), object: Fixture.registration(), headers: [.xMsTrackRegistration: "true"]),
                try await client.post(Fixture.devices() + "/batch", object: [Fixture.registration(), Fixture.registration()]),
                try await client.post(Fixture.devices() + "/cleanup", object: Fixture.cleanup()),
                try await client.post(Fixture.devices() + "/cleanup/batch", object: [Fixture.cleanup()]),
                try await client.admin(.post, "/admin/v1/apps", json: #"{"name": "shop"}"#),
            ]
            for response in responses {
                try assertProblem(response, .serviceUnavailable, field: nil, code: .unavailable)
                XCTAssertEqual(response.headers[.retryAfter], "7")
                XCTAssertFalse(String(buffer: response.body).contains("RegistrationRequestId"))
            }
        }
        let calls = await harness.publisher.calls
        XCTAssertEqual(calls.count, 5, "every request reached the publisher")
    }

    func testAnyPublisherErrorIs503() async throws {
        struct Boom: Error {}
        let harness = await Harness.withClientApps()
        await harness.publisher.failEveryPublish(with: Boom())
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration())
        }
        try assertProblem(response, .serviceUnavailable, field: nil)
        XCTAssertEqual(response.headers[.retryAfter], "1")
    }

    func testIngestNeverWritesTheProjectionStore() async throws {
        let harness = await Harness.withClientApps()
        _ = await harness.seedApp()
        try await harness.test { client in
            _ = try await client.post(Fixture.devices(), object: Fixture.registration())
            _ = try await client.post(Fixture.devices() + "/cleanup", object: Fixture.cleanup())
            _ = try await client.admin(.post, "/admin/v1/apps/\(Fixture.appId)/tokens", json: #"{"scopes": ["client"]}"#)
            _ = try await client.admin(.patch, "/admin/v1/apps/\(Fixture.appId)", json: #"{"name": "n"}"#)
        }
        let commits = await harness.store.commitCount
        XCTAssertEqual(commits, 0)
        let calls = await harness.publisher.calls
        XCTAssertEqual(calls.count, 4)
    }
}
