import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Projections
import XCTest

/// An app's webhook host list at ingest (docs/API.md#webhook-hosts): a registration whose status
/// webhook would go elsewhere is refused before anything is written, and the admin API sets the
/// list and says when there is none.
final class WebhookHostsTests: XCTestCase {
    private func makeHarness(hosts: [String]?) async -> Harness {
        let harness = Harness()
        await harness.store.seed(app: AppRow(appId: Fixture.appId, orgId: Fixture.orgId, name: "app", createdAt: Date(), webhookHosts: hosts))
        _ = await harness.seedToken(rawToken: Fixture.rawToken, scopes: [.client])
        return harness
    }

    func testARegistrationToAHostNotListedIs400NamingItsHeaderAndWritesNothing() async throws {
        let harness = await makeHarness(hosts: ["hooks.example.com", "*.example.net"])
        try await harness.test { client in
            for header in [DeviceRegistrationAPI.callbackURLHeader, DeviceRegistrationAPI.statusCallbackURLHeader] {
                func fields(_ url: String) -> HTTPFields {
                    header == DeviceRegistrationAPI.callbackURLHeader ? [.xMsCallbackURL: url] : [.xMsStatusCallbackURL: url]
                }
                let single = try await client.post(Fixture.devices(), object: Fixture.registration(), headers: fields("https://relay.attacker.test/x"))
                try assertProblem(single, .badRequest, field: header, code: .webhookHostNotAllowed)
                let batch = try await client.post(Fixture.devices() + "/batch", object: [Fixture.registration(), Fixture.registration(user: "u2")],
                                                  headers: fields("https://hooks.example.com.attacker.test/x"))
                try assertProblem(batch, .badRequest, field: header)
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    func testARegistrationToAListedHostOrWithoutAWebhookIsWritten() async throws {
        let harness = await makeHarness(hosts: ["hooks.example.com", "*.example.net"])
        try await harness.test { client in
            for url in ["https://HOOKS.example.com:8443/status", "https://a.b.example.net/status", nil] {
                let headers: HTTPFields = url.map { [.xMsCallbackURL: $0] } ?? [:]
                let answer = try await client.post(Fixture.devices(), object: Fixture.registration(), headers: headers)
                XCTAssertEqual(answer.status, HTTPResponse.Status.accepted, url ?? "no webhook")
            }
        }
        let written = try await harness.published(DeviceRegistrationRequested.self)
        XCTAssertEqual(written.map { $0.callback?.url }, ["https://HOOKS.example.com:8443/status", "https://a.b.example.net/status", nil])
    }

    func testWithoutAListAnyHostIsWrittenAsTheSeedDoes() async throws {
        let harness = await makeHarness(hosts: nil)
        let answer = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration(),
                                  headers: [.xMsCallbackURL: "https://anywhere.test/x"])
        }
        XCTAssertEqual(answer.status, .accepted)
        let written = try await harness.published(DeviceRegistrationRequested.self)
        XCTAssertEqual(written.count, 1)
    }

    func testPatchingWebhookHostsNormalizesThemAndRefusesWhatIsNoHost() async throws {
        let harness = await makeHarness(hosts: nil)
        try await harness.test { client in
            try assertProblem(try await client.admin(.patch, "/admin/v1/apps/\(Fixture.appId)",
                                                     json: #"{"webhookHosts": ["hooks.example.com", "https://x.test/path"]}"#),
                              .badRequest, field: "webhookHosts[1]")
            let tooMany = "[" + (0...WebhookHosts.maxEntries).map { "\"h\($0).example\"" }.joined(separator: ",") + "]"
            try assertProblem(try await client.admin(.patch, "/admin/v1/apps/\(Fixture.appId)", json: #"{"webhookHosts": \#(tooMany)}"#),
                              .badRequest, field: "webhookHosts")
        }
        await assertNothingPublished(harness.publisher)
        let answer = try await harness.test { client in
            try await client.admin(.patch, "/admin/v1/apps/\(Fixture.appId)", json: #"{"webhookHosts": ["Hooks.Example.com.", "hooks.example.com", "*.Example.net"]}"#)
        }
        XCTAssertEqual(answer.status, .accepted)
        let command = try await harness.onlyPublished(AppSettingsChanged.self)
        XCTAssertEqual(command.webhookHosts, ["hooks.example.com", "*.example.net"])
    }

    func testTheAppViewSaysWhetherStatusWebhooksAreOpenAndNeverShowsCallbackHeaderValues() async throws {
        for (hosts, expected) in [(nil, "open"), (["hooks.example.com"], "restricted")] as [([String]?, String)] {
            let harness = Harness()
            await harness.store.seed(app: AppRow(appId: Fixture.appId, orgId: Fixture.orgId, name: "app", callbackHeaders: ["x-secret": "s3cr3t-value"],
                                                 createdAt: Date(), webhookHosts: hosts))
            let (one, list) = try await harness.test { client in
                (try await client.admin(.get, "/admin/v1/apps/\(Fixture.appId)"), try await client.admin(.get, "/admin/v1/apps"))
            }
            let view = try decodeBody(AdminAPI.AppView.self, one)
            XCTAssertEqual(view.statusWebhooks, expected)
            XCTAssertEqual(view.webhookHosts, hosts)
            XCTAssertEqual(view.callbackHeaders, ["x-secret": "redacted"])
            XCTAssertEqual(view.statusWebhooksNote, hosts == nil ? AdminAPI.AppView.openNote : AdminAPI.AppView.restrictedNote)
            for answer in [one, list] {
                XCTAssertFalse(String(buffer: answer.body).contains("s3cr3t-value"))
            }
        }
    }
}
