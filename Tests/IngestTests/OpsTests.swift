import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Ingest
import XCTest

/// `/health`, `/metrics`, `/noop`.
final class OpsTests: XCTestCase {
    func testHealthIs200WhenTheBrokerIsReady() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in try await client.execute(uri: "/health", method: .get) }
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(String(buffer: response.body), #"{"status":"ok"}"#)
    }

    func testHealthIs503WhenTheBrokerIsNotReady() async throws {
        let harness = await Harness.withClientApps()
        await harness.publisher.setReady(false)
        let response = try await harness.test { client in try await client.execute(uri: "/health", method: .get) }
        XCTAssertEqual(response.status, .serviceUnavailable)
        XCTAssertEqual(String(buffer: response.body), #"{"status":"unavailable"}"#)
    }

    func testNoopIs204WithoutBody() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in try await client.execute(uri: "/noop", method: .get) }
        XCTAssertEqual(response.status, .noContent)
        XCTAssertEqual(response.body.readableBytes, 0)
        await assertNothingPublished(harness.publisher)
    }

    func testMetricsCountRequestsAndPublishedCommands() async throws {
        let harness = await Harness.withClientApps()
        let requestLine = #"pushline_ingest_requests_total{route="/api/v1.0/orgs/{orgId}/pushdeviceregistration/devices",status="202"}"#
        let publishedLine = #"pushline_ingest_commands_published_total{type="registration.device-registration-requested"}"#
        let (before, after) = try await harness.test { client in
            let before = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
            for _ in 0..<2 {
                let response = try await client.post(Fixture.devices(), object: Fixture.registration())
                XCTAssertEqual(response.status, .accepted)
            }
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            XCTAssertEqual(metrics.status, .ok)
            XCTAssertEqual(metrics.headers[.contentType], "text/plain; version=0.0.4; charset=utf-8")
            return (before, String(buffer: metrics.body))
        }
        XCTAssertEqual(Self.value(of: requestLine, in: after), Self.value(of: requestLine, in: before) + 2, after)
        XCTAssertEqual(Self.value(of: publishedLine, in: after), Self.value(of: publishedLine, in: before) + 2, after)
        XCTAssertTrue(after.contains("pushline_ingest_publish_duration_seconds"))
    }

    func testMetricsCountPublishFailures() async throws {
        let harness = await Harness.withClientApps()
        await harness.publisher.failEveryPublish(with: PublishUnavailable(reason: "down"))
        let line = "pushline_ingest_publish_failures_total"
        let (before, after) = try await harness.test { client in
            let before = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
            let response = try await client.post(Fixture.devices(), object: Fixture.registration())
            XCTAssertEqual(response.status, .serviceUnavailable)
            return (before, String(buffer: try await client.execute(uri: "/metrics", method: .get).body))
        }
        XCTAssertEqual(Self.value(of: line, in: after), Self.value(of: line, in: before) + 1, after)
    }

    /// The value of the sample whose name and labels are exactly `series` (0 when absent).
    static func value(of series: String, in text: String) -> Double {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1)) ?? .nan
        }
        return 0
    }
}
