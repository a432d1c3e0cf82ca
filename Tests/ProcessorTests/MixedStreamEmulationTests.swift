import Contracts
import Foundation
import TestSupport
import XCTest

/// `MixedStream.emulatedPart` (what `scripts/bench-app-split` times): each part of a split reads
/// what that split says, and the parts together cover the whole stream's work exactly once.
final class MixedStreamEmulationTests: XCTestCase {
    private let sizes = MixedStream.Sizes.about(3_000)

    /// (type, the payload's device token or "-", its user or "-") of each command of a phase.
    private func summary(_ stream: MixedStream, _ phase: MixedStream.Phase) throws -> [(type: String, token: String, user: String)] {
        try stream.commands(phase).map { command in
            let envelope = try XCTUnwrap(JSONSerialization.jsonObject(with: command.value) as? [String: Any])
            let payload = envelope["payload"] as? [String: Any] ?? [:]
            return (command.type, payload["deviceToken"] as? String ?? "-", payload["userId"] as? String ?? "-")
        }
    }

    private func parts(_ count: Int, _ emulation: MixedStream.Emulation) -> [MixedStream] {
        (0..<count).map { index in
            var stream = MixedStream(seed: 7, sizes: sizes)
            stream.emulatedPart = (index, count, emulation)
            return stream
        }
    }

    func testWithoutAPartTheStreamIsTheWholeOne() throws {
        var stream = MixedStream(seed: 7, sizes: sizes)
        let whole = try stream.commands(.registration).map(\.value)
        stream.emulatedPart = nil
        XCTAssertEqual(try stream.commands(.registration).map(\.value), whole)
        XCTAssertEqual(try MixedStream(seed: 7, sizes: sizes).commands(.notification).map(\.value),
                       try stream.commands(.notification).map(\.value))
    }

    func testASplitByTokenGivesEachDeviceToOnePartAndEverySendToEvery() throws {
        let whole = MixedStream(seed: 7, sizes: sizes)
        let registrations = try summary(whole, .registration).filter { $0.type == DeviceRegistrationRequested.type.rawValue }
        let acks = try summary(whole, .notification).filter { $0.type == NotificationAcknowledged.type.rawValue }
        let sends = try summary(whole, .notification).filter { $0.type == NotificationRequested.type.rawValue }
        var registered: [String] = [], acked: [String] = []
        for part in parts(3, .token) {
            let own = try summary(part, .registration).filter { $0.type == DeviceRegistrationRequested.type.rawValue }
            XCTAssertFalse(own.isEmpty)
            registered += own.map(\.token)
            let notification = try summary(part, .notification)
            acked += notification.filter { $0.type == NotificationAcknowledged.type.rawValue }.map(\.token)
            XCTAssertEqual(notification.filter { $0.type == NotificationRequested.type.rawValue }.count, sends.count, "every send reaches every part")
        }
        XCTAssertEqual(registered.sorted(), registrations.map(\.token).sorted(), "each registration in exactly one part")
        XCTAssertEqual(acked.sorted(), acks.map(\.token).sorted(), "each ack in exactly one part")
    }

    func testASplitByUserClaimsTheOtherPartsTokensAndReadsEveryAck() throws {
        let whole = MixedStream(seed: 7, sizes: sizes)
        let registrations = try summary(whole, .registration).filter { $0.type == DeviceRegistrationRequested.type.rawValue }
        let acks = try summary(whole, .notification).filter { $0.type == NotificationAcknowledged.type.rawValue }
        var registered: [String] = []
        for part in parts(2, .user) {
            let registration = try summary(part, .registration)
            let own = registration.filter { $0.type == DeviceRegistrationRequested.type.rawValue }
            let claims = registration.filter { $0.type == NotificationAcknowledged.type.rawValue }
            registered += own.map(\.token)
            XCTAssertEqual(own.count + claims.count, registrations.count, "every other registration reaches this part as a claim")
            XCTAssertEqual(try summary(part, .notification).filter { $0.type == NotificationAcknowledged.type.rawValue }.count, acks.count)
        }
        XCTAssertEqual(registered.sorted(), registrations.map(\.token).sorted())

        for part in parts(2, .ideal) {
            XCTAssertTrue(try summary(part, .registration).allSatisfy { $0.type != NotificationAcknowledged.type.rawValue }, "no claims")
            XCTAssertLessThan(try summary(part, .notification).filter { $0.type == NotificationAcknowledged.type.rawValue }.count, acks.count)
        }
    }
}
