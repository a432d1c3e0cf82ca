import Contracts
import Foundation
@testable import Projections
import XCTest

final class ReadTests: StoreTestCase {
    func testRegistrationStatusesNeverReturnAnotherAppsRows() async throws {
        let store = try openStore()
        let mine = UUID()
        let theirs = UUID()
        let myStatus = Fixture.status(app: mine, status: .Success)
        let theirStatus = Fixture.status(app: theirs, status: .Failed, reason: .DuplicateExists)
        try await store.commit(mutations: [.putRegistrationStatus(myStatus), .putRegistrationStatus(theirStatus)], offsets: [])

        let statuses = try await store.registrationStatuses(app: mine, requestIds: [myStatus.requestId, theirStatus.requestId])
        let theirsSeen = try await store.registrationStatuses(app: theirs, requestIds: [theirStatus.requestId])

        XCTAssertEqual(statuses, [myStatus.requestId: myStatus])
        XCTAssertEqual(theirsSeen, [theirStatus.requestId: theirStatus])
    }

    func testRegistrationStatusesLeaveOutUnknownIdsAndTolerateRepeats() async throws {
        let store = try openStore()
        let app = UUID()
        let stored = (0..<70).map { _ in Fixture.status(app: app) }
        try await store.commit(mutations: stored.map(Mutation.putRegistrationStatus), offsets: [])
        let unknown = UUID()

        let statuses = try await store.registrationStatuses(app: app, requestIds: [unknown] + stored.map(\.requestId) + [stored[0].requestId])

        XCTAssertEqual(statuses.count, 70)
        XCTAssertNil(statuses[unknown])
        XCTAssertEqual(statuses[stored[69].requestId], stored[69])
    }

    func testReadsOfMissingRowsAnswerNothing() async throws {
        let store = try openStore()

        let app = try await store.app(UUID())
        let tokens = try await store.apiTokens(app: UUID())
        let device = try await store.device(DeviceKey(appId: UUID(), deviceToken: "none"))
        let devices = try await store.devices(app: UUID(), user: "none")
        let statuses = try await store.registrationStatuses(app: UUID(), requestIds: [])
        let job = try await store.outboxJob("none")
        let due = try await store.nextOutboxDue()

        XCTAssertNil(app)
        XCTAssertEqual(tokens, [])
        XCTAssertNil(device)
        XCTAssertEqual(devices, [])
        XCTAssertEqual(statuses, [:])
        XCTAssertNil(job)
        XCTAssertNil(due)
    }

    func testDevicesOfAUserAreListedByToken() async throws {
        let store = try openStore()
        let app = UUID()
        let devices = ["c", "a", "b"].map { Fixture.device(app: app, token: $0, user: "u") }
        try await store.commit(mutations: devices.map(Mutation.upsertDevice), offsets: [])

        let listed = try await store.devices(app: app, user: "u")

        XCTAssertEqual(listed.map(\.deviceToken), ["a", "b", "c"])
    }
}
