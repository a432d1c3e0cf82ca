import ArgumentParser
import Contracts
import Foundation
import WireCodec
import XCTest
@testable import PushlineCLI

/// The admin CLI's parsing and wording, without a stack: `--callback-header` arguments, the
/// one-line messages for each kind of refused admin call, the PATCH body `apps set` sends.
final class PushlineCLITests: XCTestCase {
    func testCallbackHeadersSplitAtTheFirstEqualsSignAndKeepTheValueAsGiven() throws {
        XCTAssertEqual(try HeaderArgument.parse(["X-Key=a=b", "X-Empty=", "Authorization=Bearer  x "]),
                       ["X-Key": "a=b", "X-Empty": "", "Authorization": "Bearer  x "])
    }

    func testCallbackHeaderWithoutEqualsSignOrWithABadOrRepeatedNameIsAUsageError() {
        for bad in [["X-Key"], ["=value"], ["Bad Name=v"], ["X-Ké=v"], ["X-Key=1", "x-key=2"]] {
            XCTAssertThrowsError(try HeaderArgument.parse(bad), "\(bad)") { error in
                XCTAssertTrue(error is ValidationError, "\(bad): \(error)")
            }
        }
    }

    func testRefusedAdminTokenIsNamedAsTheCause() {
        for status in [401, 403] {
            let message = AdminClient.failure(status: status, body: Data(#"{"error":"unauthorized"}"#.utf8), retryAfter: nil,
                                              subject: .none).description
            XCTAssertTrue(message.contains("admin token was refused (HTTP \(status))"), message)
        }
    }

    func testARefusedAPITokenIsNamedWithTheProblem() {
        for status in [401, 403] {
            let message = AdminClient.failure(status: status, body: Data(#"{"error":"lacks the server scope","code":"scope_missing"}"#.utf8),
                                              retryAfter: nil, subject: .apiToken).description
            XCTAssertEqual(message, "the API token was refused (HTTP \(status)): lacks the server scope [scope_missing]; "
                           + "check PUSHLINE_API_TOKEN or --token")
        }
    }

    func testSendTakesExactlyOneTargetAndBecomesItsToObject() throws {
        let app = UUID().uuidString
        XCTAssertEqual(try Send.parse([app, "--topic", "news", "--title", "Goal"]).request(),
                       NotificationAPI.SendRequest(to: NotificationAPI.Target(topic: "news"), title: "Goal"))
        XCTAssertEqual(try Send.parse([app, "--all", "--body", "b"]).request().to, NotificationAPI.Target(all: true))
        XCTAssertEqual(try Send.parse([app, "--user", "a", "--user", "b", "--body", "b"]).request().to, NotificationAPI.Target(users: ["a", "b"]))
        XCTAssertEqual(try Send.parse([app, "--audience", "tag:vip", "--body", "b"]).request().to, NotificationAPI.Target(audience: "tag:vip"))
        XCTAssertThrowsError(try Send.parse([app, "--all", "--topic", "news", "--body", "b"]), "two targets")
        XCTAssertThrowsError(try Send.parse([app, "--body", "b"]), "no target")
        XCTAssertThrowsError(try Send.parse([app, "--all"]), "no text")
        XCTAssertThrowsError(try Send.parse(["not-an-app", "--all", "--body", "b"]))
        XCTAssertEqual(try Send.parse([app, "--all", "--body", "b", "--at", "2026-12-01T09:00:00Z"]).request().sendAt, "2026-12-01T09:00:00Z")
        XCTAssertThrowsError(try Send.parse([app, "--all", "--body", "b", "--at", "tomorrow"]), "not a time")
        XCTAssertEqual(try Scheduled.List.parse([app]).path(), "/v1/apps/\(app.lowercased())/notifications?schedule=waiting&limit=100")
        XCTAssertEqual(try Scheduled.List.parse([app, "--state", "cancelled", "--limit", "5", "--after", "1800000000000_x"]).path(),
                       "/v1/apps/\(app.lowercased())/notifications?schedule=cancelled&limit=5&after=1800000000000%5Fx")
        XCTAssertThrowsError(try Scheduled.List.parse([app, "--state", "someday"]))
        XCTAssertThrowsError(try Scheduled.Cancel.parse([app, "not-a-delivery"]))
        XCTAssertEqual(try Scheduled.List.parse([app, "--state", "sending"]).path(), "/v1/apps/\(app.lowercased())/notifications?schedule=sending&limit=100")
    }

    func testSendTakesALocalTimeQuietHoursAPriorityAndCapOptions() throws {
        let app = UUID().uuidString
        let local = try Send.parse([app, "--all", "--title", "Bom dia", "--local", "2026-12-01T09:00", "--quiet-hours", "drop",
                                    "--priority", "critical", "--cap-category", "marketing", "--cap-exempt"]).request()
        XCTAssertEqual([local.sendAtLocal, local.quietHours, local.priority, local.capCategory], ["2026-12-01T09:00", "drop", "critical", "marketing"])
        XCTAssertEqual(local.capExempt, true)
        XCTAssertNil(try Send.parse([app, "--all", "--body", "b"]).request().capExempt, "not exempt unless asked")
        for bad in [["--local", "2026-12-01 09:00"], ["--local", "2026-12-01T09:00", "--at", "2026-12-01T09:00:00Z"], ["--quiet-hours", "skip"],
                    ["--priority", "urgent"], ["--cap-category", "Marketing!"]] {
            XCTAssertThrowsError(try Send.parse([app, "--all", "--body", "b"] + bad), "\(bad)")
        }
    }

    func testAppsSetTakesATimeZoneQuietHoursAndCapsAndUsersSettingsTheirOwn() throws {
        let app = UUID().uuidString
        let time = try Apps.Change.parse([app, "--time-zone", "America/Sao_Paulo", "--quiet-hours", "22:00-08:00", "--cap", "marketing=3/24",
                                          "--cap", "*=10/24"]).update()
        XCTAssertEqual(time, AdminAPI.UpdateApp(timeZone: "America/Sao_Paulo", quietHours: "22:00-08:00", frequencyCaps: [
            AdminAPI.Cap(category: "marketing", limit: 3, windowHours: 24), AdminAPI.Cap(limit: 10, windowHours: 24),
        ]))
        XCTAssertEqual(try Apps.Change.parse([app, "--no-quiet-hours", "--no-caps"]).update(), AdminAPI.UpdateApp(quietHours: "", frequencyCaps: []))
        for bad in [["--quiet-hours", "22-08"], ["--cap", "marketing=3"], ["--cap", "*=0/24"], ["--cap", "x=1/721"], ["--cap", "a=1/1", "--no-caps"],
                    ["--quiet-hours", "22:00-08:00", "--no-quiet-hours"]] {
            XCTAssertThrowsError(try Apps.Change.parse([app] + bad), "\(bad)")
        }
        XCTAssertNil(try Users.Settings.parse([app, "alice"]).change(), "reads")
        XCTAssertEqual(try Users.Settings.parse([app, "alice", "--quiet-hours", "23:00-07:00"]).change(),
                       NotificationAPI.UserSettings(quietHours: "23:00-07:00"))
        XCTAssertEqual(try Users.Settings.parse([app, "alice", "--no-quiet-hours"]).change(), NotificationAPI.UserSettings(quietHours: ""))
        XCTAssertThrowsError(try Users.Settings.parse([app, "alice", "--quiet-hours", "7"]))
    }

    func testADevicesChangeSendsOnlyWhatItsOptionsGive() throws {
        let app = UUID().uuidString
        XCTAssertEqual(try Devices.Change.parse([app, "--user", "u-42", "--add-tag", "vip", "--add-tag", "beta", "--subscribe", "news"]).change(),
                       DevicesAPI.Change(userId: "u-42", tags: DevicesAPI.TagChange(add: ["vip", "beta"]),
                                         topics: DevicesAPI.TopicChange(subscribe: ["news"])))
        XCTAssertEqual(try Devices.Change.parse([app, "--device", "tok", "--locale", "pt-BR", "--remove-tag", "trial"]).change(),
                       DevicesAPI.Change(deviceToken: "tok", locale: "pt-BR", tags: DevicesAPI.TagChange(remove: ["trial"])))
        XCTAssertThrowsError(try Devices.Change.parse([app, "--locale", "pt"]), "no device or user")
    }

    func testNotFoundSaysWhichAppOrTokenIsUnknown() {
        let app = UUID(), token = UUID()
        let appMissing = AdminClient.failure(status: 404, body: Data(#"{"error":"no such app","field":"mobileAppId"}"#.utf8),
                                             retryAfter: nil, subject: .token(app: app, token: token)).description
        XCTAssertTrue(appMissing.hasPrefix("unknown app \(app)"), appMissing)
        let tokenMissing = AdminClient.failure(status: 404, body: Data(#"{"error":"no such API token","field":"tokenId"}"#.utf8),
                                               retryAfter: nil, subject: .token(app: app, token: token)).description
        XCTAssertEqual(tokenMissing, "unknown API token \(token) of app \(app) (HTTP 404)")
        let noList = AdminClient.failure(status: 404, body: Data(#"{"error":"no such route"}"#.utf8), retryAfter: nil,
                                         subject: .appList).description
        XCTAssertTrue(noList.contains("predates GET /admin/v1/apps"), noList)
    }

    func testProblemBodyIsShownWithItsFieldAndOtherBodiesAsText() {
        let problem = AdminClient.failure(status: 400, body: Data(#"{"error":"callbackUrl must be an absolute http(s) URL","field":"callbackUrl"}"#.utf8),
                                          retryAfter: nil, subject: .app(UUID())).description
        XCTAssertEqual(problem, "ingest refused the request (HTTP 400): callbackUrl must be an absolute http(s) URL (field callbackUrl)",
                       "an older server's problem has no code")
        let coded = AdminClient.failure(status: 400, body: Data(#"{"error":"name must not be empty","field":"name","code":"field_invalid"}"#.utf8),
                                        retryAfter: nil, subject: .app(UUID())).description
        XCTAssertEqual(coded, "ingest refused the request (HTTP 400): name must not be empty (field name) [field_invalid]")
        let unavailable = AdminClient.failure(status: 503, body: Data(#"{"error":"broker did not acknowledge"}"#.utf8), retryAfter: "2",
                                              subject: .none).description
        XCTAssertEqual(unavailable, "ingest could not complete the change (HTTP 503, retry after 2s): broker did not acknowledge")
        let html = AdminClient.failure(status: 502, body: Data("<html>Bad Gateway</html>".utf8), retryAfter: nil, subject: .none)
        XCTAssertEqual(html.description, "ingest refused the request (HTTP 502): <html>Bad Gateway</html>")
    }

    func testAppsSetSendsOnlyTheSettingsGiven() throws {
        let app = UUID().uuidString
        let remove = try Apps.Change.parse([app, "--remove-callback-url", "--clear-callback-headers"]).update()
        XCTAssertEqual(remove, AdminAPI.UpdateApp(callbackUrl: "", callbackHeaders: [:]))
        let retries = try Apps.Change.parse([app, "--webhook-retries", "0"]).update()
        XCTAssertEqual(retries, AdminAPI.UpdateApp(webhookRetries: 0))
        XCTAssertThrowsError(try Apps.Change.parse([app]), "nothing to change")
        XCTAssertThrowsError(try Apps.Change.parse([app, "--webhook-retries", "11"]))
        XCTAssertThrowsError(try Apps.Change.parse([app, "--callback-header", "A=1", "--clear-callback-headers"]))
    }

    func testAppsSetListsWebhookHostsOrOpensThem() throws {
        let app = UUID().uuidString
        let hosts = try Apps.Change.parse([app, "--webhook-host", "hooks.example.com", "--webhook-host", "*.example.net"]).update()
        XCTAssertEqual(hosts, AdminAPI.UpdateApp(webhookHosts: ["hooks.example.com", "*.example.net"]))
        XCTAssertEqual(try Apps.Change.parse([app, "--open-webhook-hosts"]).update(), AdminAPI.UpdateApp(webhookHosts: []))
        XCTAssertThrowsError(try Apps.Change.parse([app, "--webhook-host", "a.example", "--open-webhook-hosts"]))
    }

    func testAppsShowSaysWhenStatusWebhooksAreOpen() {
        func show(_ hosts: [String]?) -> String {
            Output.describe(AdminAPI.AppView(orgId: UUID(), mobileAppId: UUID(), name: "a", callbackUrl: nil, callbackHeaders: ["X-Key": "redacted"],
                                             webhookRetries: 0, tokens: [], webhookHosts: hosts))
        }
        XCTAssertTrue(show(nil).contains("OPEN"), show(nil))
        XCTAssertTrue(show(["hooks.example.com"]).contains("webhookHosts     hooks.example.com"), show(["hooks.example.com"]))
        XCTAssertFalse(show(["hooks.example.com"]).contains("OPEN"))
        XCTAssertTrue(show(nil).contains("X-Key (values redacted)"), show(nil))
    }

    func testTablesAlignNumbersRightAndTextLeft() {
        XCTAssertEqual(Output.table(["TOPIC", "LAG"], [["a", "5"], ["longer", "12"]], rightAligned: [1]),
                       "TOPIC   LAG\na         5\nlonger   12")
    }

    func testTokensIssueNeedsScopesAndTakesThemRepeatedOrAsAList() throws {
        let app = UUID().uuidString
        XCTAssertEqual(try Tokens.Issue.parse([app, "--scope", "client"]).scopes(), [.client])
        XCTAssertEqual(try Tokens.Issue.parse([app, "--scope", "server", "--scope", "client"]).scopes(), [.client, .server])
        XCTAssertEqual(try Tokens.Issue.parse([app, "--scope", "server,client,server"]).scopes(), [.client, .server])
        XCTAssertThrowsError(try Tokens.Issue.parse([app]), "a token's scopes are always chosen")
        XCTAssertThrowsError(try Tokens.Issue.parse([app, "--scope", "admin"]))
        XCTAssertThrowsError(try Tokens.Issue.parse([app, "--scope", ""]))
    }

    func testAppsCreateSaysWhichTokenShipsInTheApp() {
        let id = UUID()
        let text = Output.describe(AdminAPI.AppCreatedAnswer(
            orgId: id, mobileAppId: id, apiToken: "SERVER-TOKEN", tokenId: id, apiTokenScopes: [.client, .server],
            clientToken: "CLIENT-TOKEN", clientTokenId: id, clientTokenScopes: [.client]))
        let lines = text.split(separator: "\n").map(String.init)
        let client = try? XCTUnwrap(lines.firstIndex { $0.contains("client token") && $0.contains("CLIENT-TOKEN") })
        let server = try? XCTUnwrap(lines.firstIndex { $0.contains("server token") && $0.contains("SERVER-TOKEN") })
        XCTAssertNotNil(client, text)
        XCTAssertNotNil(server, text)
        XCTAssertTrue(lines[(client ?? 0) + 2].contains("ships inside the mobile app"), text)
        XCTAssertTrue(lines[(server ?? 0) + 2].contains("keep it on your servers"), text)
        XCTAssertTrue(text.contains("shown only this once"), text)
    }

    func testAppsShowListsEachTokensScopesAndMarksLegacyOnes() {
        let legacy = UUID(), client = UUID()
        let text = Output.describe(AdminAPI.AppView(
            orgId: UUID(), mobileAppId: UUID(), name: "a", callbackUrl: nil, callbackHeaders: [:], webhookRetries: 0,
            tokens: [AdminAPI.TokenView(tokenId: legacy, revoked: false, scopes: [.client, .server], legacy: true),
                     AdminAPI.TokenView(tokenId: client, revoked: true, scopes: [.client], legacy: false)]))
        let legacyLine = text.split(separator: "\n").first { $0.contains(legacy.uuidString) }.map(String.init) ?? ""
        let clientLine = text.split(separator: "\n").first { $0.contains(client.uuidString) }.map(String.init) ?? ""
        XCTAssertTrue(legacyLine.contains("client,server") && legacyLine.contains("LEGACY"), legacyLine)
        XCTAssertTrue(clientLine.contains("revoked") && clientLine.hasSuffix(" client"), clientLine)
        XCTAssertFalse(clientLine.contains("LEGACY"), clientLine)
    }

    func testAppsShowSaysWhetherUserIdentityIsVerifiedAndWhatItMeansWhenNot() {
        func shown(_ identity: AdminAPI.UserIdentityView) -> String {
            let text = Output.describe(AdminAPI.AppView(orgId: UUID(), mobileAppId: UUID(), name: "a", callbackUrl: nil, callbackHeaders: [:],
                                                        webhookRetries: 0, tokens: [], userIdentity: identity))
            return text.split(separator: "\n").first { $0.hasPrefix("userIdentity") }.map(String.init) ?? ""
        }
        let off = shown(AdminAPI.UserIdentityView(required: false, secretSealedWith: nil))
        XCTAssertTrue(off.contains("NOT VERIFIED") && off.contains("any user id"), off)
        let on = shown(AdminAPI.UserIdentityView(required: true, secretSealedWith: "k1"))
        XCTAssertTrue(on.contains("verified (identity secret sealed with k1)") && !on.contains("NOT"), on)
        XCTAssertEqual(try Apps.Identity.Require.parse([UUID().uuidString]).mobileAppId.isEmpty, false)
        XCTAssertThrowsError(try Apps.Identity.NewSecret.parse(["not-a-uuid"]))
    }

    func testAnOldAnswerWithoutScopesReadsAsLegacy() throws {
        let id = UUID().uuidString.lowercased()
        let view = try JSONDecoder().decode(AdminAPI.TokenView.self, from: Data(#"{"tokenId":"\#(id)","revoked":false}"#.utf8))
        XCTAssertTrue(view.legacy)
        XCTAssertEqual(view.scopes, [.client, .server])
    }

    func testAuditOptionsBecomeTheRoutesFiltersAndBadOnesAreUsageErrors() throws {
        let app = UUID()
        let audit = try Audit.parse(["--app", app.uuidString, "--actor", "bootstrap", "--type", "admin.app-created",
                                     "--since", "2026-11-01T00:00:00+01:00", "--limit", "5"])
        XCTAssertEqual(audit.queryItems(pageSize: 5), [
            URLQueryItem(name: "limit", value: "5"), URLQueryItem(name: "app", value: app.lowercasedString),
            URLQueryItem(name: "actor", value: "bootstrap"), URLQueryItem(name: "type", value: "admin.app-created"),
            URLQueryItem(name: "since", value: "2026-11-01T00:00:00+01:00"),
        ])
        for bad in [["--app", "x"], ["--actor", "alice"], ["--since", "yesterday"], ["--limit", "0"]] {
            XCTAssertThrowsError(try Audit.parse(bad), "\(bad)")
        }
        XCTAssertThrowsError(try AdminTokens.Revoke.parse(["not-a-uuid"]))
    }

    func testAnAuditEntryIsOneRowWithItsActorOutcomeAndChanges() {
        let id = UUID(), app = UUID()
        let entry = AdminAPI.AuditEntry(id: UUID(), at: Date(timeIntervalSince1970: 1_800_000_000), type: "admin.api-token-revoked",
                                        mobileAppId: app, actor: AdminActor(id: id, name: "alice"), requestId: "req-1",
                                        outcome: "rejected", reason: "unknown-token", changes: .object(["tokenId": .string("t")]))
        XCTAssertEqual(Output.auditRow(entry), ["2027-01-15T08:00:00.000Z", "admin.api-token-revoked", app.lowercasedString,
                                                "alice (\(id.lowercasedString))", "rejected: unknown-token", "req-1", #"{"tokenId":"t"}"#])
        let bootstrap = AdminAPI.AuditEntry(id: UUID(), at: Date(timeIntervalSince1970: 1_800_000_000), type: "admin.admin-token-issued",
                                            mobileAppId: nil, actor: .bootstrap, requestId: nil, outcome: "applied", reason: nil,
                                            changes: .object([:]))
        XCTAssertEqual(Array(Output.auditRow(bootstrap)[2...5]), ["-", "bootstrap", "applied", "-"])
    }

    func testAnUnknownAdminTokenIsNamed() {
        let id = UUID()
        let message = AdminClient.failure(status: 404, body: Data(#"{"error":"no such admin token","field":"adminTokenId"}"#.utf8),
                                          retryAfter: nil, subject: .adminToken(id)).description
        XCTAssertEqual(message, "unknown admin token \(id.lowercasedString) (HTTP 404)")
    }

    func testAProcessorsShareIsReadFromTheLagGaugesOfItsMetrics() {
        let metrics = """
            # TYPE pushline_processor_consumer_lag gauge
            pushline_processor_consumer_lag{topic="pushline.commands.admin",partition="3"} 2
            pushline_processor_consumer_lag{topic="pushline.commands.registration",partition="3"} 40
            pushline_processor_consumer_lag{topic="pushline.commands.registration",partition="7"} 0
            pushline_processor_records_consumed_total 1234
            pushline_processor_active 1
            """
        let share = ProcessorLag.parse(url: "http://p:8081", metrics: metrics)
        XCTAssertEqual(share.shards, [3, 7])
        XCTAssertEqual(share.lag, 42)
        XCTAssertEqual(share.applied, 1234)
        XCTAssertTrue(share.reachable)
        XCTAssertEqual(ProcessorLag.parse(url: "http://p:8081", metrics: "").shards, [], "one that holds no shard")
    }

    func testTheTimeToCatchUpIsTheLagOverTheRate() {
        XCTAssertEqual(Lag.eta(lag: 0, rate: nil), "0s")
        XCTAssertEqual(Lag.eta(lag: 10, rate: nil), "-", "one sample: no rate yet")
        XCTAssertEqual(Lag.eta(lag: 10, rate: 0), "stalled")
        XCTAssertEqual(Lag.eta(lag: 9_000, rate: 100), "1m30s")
        XCTAssertEqual(Lag.trend(lag: 9_000, rate: 4_500), "4,500 records/s, ETA 2s")
    }
}
