import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Projections
import XCTest
@testable import Ingest

/// `Idempotency-Key` on `POST …/notifications` (docs/API.md#idempotency-keys): the delivery id is
/// the key's, a retry of an applied send is answered from the store without a write, another body
/// with an applied key is a 422, and a key past its window names a new delivery.
final class IdempotencyKeyTests: XCTestCase {
    private let body = #"{"userId": "u1", "title": "Gate change"}"#

    private func send(_ json: String, key: String?, harness: Harness) async throws -> TestResponse {
        try await harness.test { client in
            var headers: HTTPFields = [.authorization: "Bearer \(Fixture.rawToken)", .contentType: "application/json"]
            if let key { headers[.idempotencyKey] = key }
            return try await client.execute(uri: Fixture.notifications(), method: .post, headers: headers, body: ByteBuffer(string: json))
        }
    }

    private func deliveryId(_ response: TestResponse) throws -> UUID {
        XCTAssertEqual(response.status, .accepted, String(buffer: response.body))
        return try XCTUnwrap(UUID(uuidString: decodeBody(NotificationAPI.SendAccepted.self, response).deliveryId))
    }

    /// The applied first send of `key` with `body`, as the processor would have stored it.
    private func seedApplied(_ harness: Harness, key: String, body: String, at: Date, id: UUID? = nil) async {
        let row = DeliveryRow(appId: Fixture.appId, deliveryId: id ?? IdempotencyKeys.deliveryId(app: Fixture.appId, key: key),
                              kind: .alert, managed: false, tracking: true, sent: 1, createdAt: at, idempotencyKey: key,
                              requestHash: IdempotencyKeys.requestHash(Array(body.utf8)))
        await harness.store.seed(stats: DeliveryStatsRow(delivery: row))
    }

    func testAKeyedSendCarriesTheKeysDeliveryIdAndTheBodysHash() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let id = try deliveryId(try await send(body, key: "order-42", harness: harness))
        XCTAssertEqual(id, IdempotencyKeys.deliveryId(app: Fixture.appId, key: "order-42"))
        let command = try await harness.onlyPublished(NotificationRequested.self)
        XCTAssertEqual(command.deliveryId, id)
        XCTAssertEqual(command.idempotencyKey, "order-42")
        XCTAssertEqual(command.requestHash, IdempotencyKeys.requestHash(Array(body.utf8)))
    }

    /// Before the first send is applied, a retry is written again with the same id (the processor
    /// sends one of them): that is what makes a retry on another instance safe.
    func testARetryBeforeTheFirstIsAppliedIsWrittenWithTheSameId() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let first = try deliveryId(try await send(body, key: "k", harness: harness))
        let second = try deliveryId(try await send(body, key: "k", harness: harness))
        XCTAssertEqual(first, second)
        let commands = try await harness.published(NotificationRequested.self)
        XCTAssertEqual(commands.map(\.deliveryId), [first, first])
    }

    func testARetryOfAnAppliedSendIsAnsweredWithoutAWrite() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        await seedApplied(harness, key: "k", body: body, at: Date().addingTimeInterval(-3600))
        let response = try await send(body, key: "k", harness: harness)
        XCTAssertEqual(try deliveryId(response), IdempotencyKeys.deliveryId(app: Fixture.appId, key: "k"))
        XCTAssertEqual(response.headers[.idempotentReplayed], "true")
        let published = await harness.publisher.commands
        XCTAssertTrue(published.isEmpty)
    }

    func testTheKeyOfAnAppliedSendWithAnotherBodyIs422() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        await seedApplied(harness, key: "k", body: body, at: Date().addingTimeInterval(-60))
        let response = try await send(#"{"userId": "u2", "title": "Gate change"}"#, key: "k", harness: harness)
        try assertProblem(response, .unprocessableContent, field: "Idempotency-Key", code: .idempotencyKeyReused)
        XCTAssertTrue(try decodeBody(Problem.self, response).error.contains("different request"))
        let published = await harness.publisher.commands
        XCTAssertTrue(published.isEmpty)
    }

    /// Past the window (24 h by default), the key names a new send: the next id of its chain,
    /// whose own retries again agree on it.
    func testAKeyPastItsWindowNamesTheNextDelivery() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let firstId = IdempotencyKeys.deliveryId(app: Fixture.appId, key: "k")
        await seedApplied(harness, key: "k", body: body, at: Date().addingTimeInterval(-25 * 3600))
        let next = IdempotencyKeys.nextId(after: firstId, key: "k")
        let reuse = try await send(#"{"userId": "u1", "title": "other"}"#, key: "k", harness: harness)
        XCTAssertEqual(try deliveryId(reuse), next)
        await seedApplied(harness, key: "k", body: body, at: Date().addingTimeInterval(-60), id: next)
        let replay = try await send(body, key: "k", harness: harness)
        XCTAssertEqual(try deliveryId(replay), next)
        XCTAssertEqual(replay.headers[.idempotentReplayed], "true")
    }

    func testMalformedKeysAre400AndWriteNothing() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        for key in ["", "has space", String(repeating: "k", count: 256), "tab\tin", "é"] {
            let response = try await send(body, key: key, harness: harness)
            XCTAssertEqual(response.status, .badRequest, "key \(key.debugDescription)")
            XCTAssertEqual(try decodeBody(Problem.self, response).field, "Idempotency-Key")
        }
        let published = await harness.publisher.commands
        XCTAssertTrue(published.isEmpty)
        let longest = try await send(body, key: String(repeating: "~", count: 255), harness: harness)
        XCTAssertEqual(try deliveryId(longest), IdempotencyKeys.deliveryId(app: Fixture.appId, key: String(repeating: "~", count: 255)))
    }

    func testAStoreThatCannotBeReadIs503AndWritesNothing() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        _ = try deliveryId(try await send(body, key: "warm", harness: harness))  // the app's token is cached now
        await harness.store.failEveryRead()
        let response = try await send(body, key: "k", harness: harness)
        XCTAssertEqual(response.status, .serviceUnavailable)
        let published = await harness.publisher.commands
        XCTAssertEqual(published.count, 1)
    }
}
