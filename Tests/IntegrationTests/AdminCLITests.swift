#if canImport(Glibc)
import Glibc
#endif
import Contracts
import Foundation
import Logging
import Projections
import SQLiteProjections
import TestSupport
import WireCodec
import XCTest

/// The `pushline` admin CLI, run as the built binary against the real stack (Tansu, ingest,
/// processor, SQLite store), as an operator runs it.
final class AdminCLITests: XCTestCase {
    private var stack: PushlineStack!

    override func tearDown() async throws {
        await stack?.stop()
    }

    // MARK: - Running the binary

    /// Runs `pushline <arguments>` against the stack (its ingest URL, admin token, broker and
    /// store), with `environment` overriding those.
    private func pushline(_ arguments: [String], environment: [String: String] = [:]) async throws -> ProcessOutput {
        var base: [String: String] = ["PUSHLINE_LOG_LEVEL": "warning"]
        if let stack {
            base.merge(["PUSHLINE_INGEST_URL": stack.ingestURL, "PUSHLINE_ADMIN_TOKEN": stack.adminToken,
                        "PUSHLINE_KAFKA_BROKERS": stack.broker.bootstrapServers, "PUSHLINE_STORE": stack.storeLocation, "PUSHLINE_GROUP_ID": stack.groupId]) { $1 }
        }
        let executable = ServiceProcess.binDirectory.appendingPathComponent("pushline").path
        return try await ProcessRunner.run(executable, arguments, environment: base.merging(environment) { $1 })
    }

    /// Runs it and fails the test unless it exits 0.
    private func succeed(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) async throws -> String {
        let out = try await pushline(arguments)
        XCTAssertEqual(out.status, 0, "pushline \(arguments.joined(separator: " ")) failed: \(out.standardError)", file: file, line: line)
        return out.standardOutput
    }

    private func json<T: Decodable>(_ type: T.Type, _ arguments: [String]) async throws -> T {
        let text = try await succeed(arguments + ["--json"])
        return try WireJSON.decoder().decode(type, from: Data(text.utf8))
    }

    /// The answer of an authenticated client route for `token`: 404 (unknown delivery) when the
    /// token authenticates, 401 when it does not.
    private func clientRouteStatus(app: String, token: String) async throws -> Int {
        try await HTTPClientHelpers.get("\(stack.ingestURL)/v1/apps/\(app)/deliveries/\(UUID())",
                                        headers: ["Authorization": "Bearer \(token)"]).status
    }

    // MARK: - Help and usage

    func testHelpNamesEverySubcommandAndBadUsageExitsWith64() async throws {
        let help = try await pushline(["--help"])
        XCTAssertEqual(help.status, 0)
        for command in ["apps", "tokens", "lag", "rebuild", "dump"] {
            XCTAssertTrue(help.standardOutput.contains(command), "--help names \(command): \(help.standardOutput)")
        }
        let apps = try await pushline(["apps", "--help"])
        XCTAssertEqual(apps.status, 0)
        for command in ["create", "list", "show", "set"] {
            XCTAssertTrue(apps.standardOutput.contains(command), "apps --help names \(command): \(apps.standardOutput)")
        }
        // The rebuild command is the processor's own definition, options included.
        let rebuild = try await pushline(["rebuild", "--help"])
        XCTAssertEqual(rebuild.status, 0)
        XCTAssertTrue(rebuild.standardOutput.contains("--previous") && rebuild.standardOutput.contains("--switch"), rebuild.standardOutput)

        let header = try await pushline(["apps", "set", UUID().uuidString, "--callback-header", "no-equals-sign"])
        XCTAssertEqual(header.status, 64)
        XCTAssertTrue(header.standardError.contains("is not NAME=VALUE"), header.standardError)
        let contradiction = try await pushline(["apps", "set", UUID().uuidString, "--callback-url", "https://example.com/h",
                                                "--remove-callback-url"])
        XCTAssertEqual(contradiction.status, 64)
        let notUUID = try await pushline(["apps", "show", "not-a-uuid"])
        XCTAssertEqual(notUUID.status, 64)
        XCTAssertTrue(notUUID.standardError.contains("is not a UUID"), notUUID.standardError)
        let batch = try await pushline(["rebuild", "--batch", "0"])
        XCTAssertEqual(batch.status, 64)
        XCTAssertTrue(batch.standardError.contains("--batch must be between"), batch.standardError)
        let noToken = try await pushline(["apps", "show", UUID().uuidString], environment: ["PUSHLINE_ADMIN_TOKEN": ""])
        XCTAssertEqual(noToken.status, 1)
        XCTAssertTrue(noToken.standardError.contains("no admin token"), noToken.standardError)
    }

    // MARK: - Admin tokens and the audit log

    /// An operator issues a named admin token, works with it, lists and revokes it, and reads
    /// who did what in `pushline audit`.
    /// Every example `pushline --help` prints runs as shown, in its order, as an operator on
    /// `make run`'s stack runs it: `pushline` on the PATH, `$APP` an app of the stack, and
    /// `var/admin-token` holding its admin token, which the first example exports.
    func testEveryExampleTheHelpPrintsRunsAsShown() async throws {
        stack = try await PushlineStack.start()
        let app = try await stack.createApp(name: "examples")
        let help = try await pushline(["--help"])
        XCTAssertEqual(help.status, 0)
        let afterHeading = try XCTUnwrap(help.standardOutput.components(separatedBy: "Examples:\n").dropFirst().first,
                                         help.standardOutput)
        let examples = afterHeading.components(separatedBy: "\n\n")[0].split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
        XCTAssertGreaterThanOrEqual(examples.count, 8, help.standardOutput)
        XCTAssertTrue(examples.allSatisfy { $0.hasPrefix("pushline ") || $0.hasPrefix("export ") }, "\(examples)")

        let directory = stack.directory.appendingPathComponent("operator")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("var"), withIntermediateDirectories: true)
        try stack.adminToken.write(to: directory.appendingPathComponent("var/admin-token"), atomically: true, encoding: .utf8)
        let environment = ["PUSHLINE_LOG_LEVEL": "warning", "PUSHLINE_INGEST_URL": stack.ingestURL, "PUSHLINE_ADMIN_TOKEN": "",
                           "PUSHLINE_KAFKA_BROKERS": stack.broker.bootstrapServers, "PUSHLINE_STORE": stack.storeLocation,
                           "PUSHLINE_GROUP_ID": stack.groupId, "APP": app.mobileAppId.uuidString,
                           "PATH": ServiceProcess.binDirectory.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")]
        let exports = examples.filter { $0.hasPrefix("export ") }.joined(separator: "\n")
        for example in examples where example.hasPrefix("pushline ") {
            let out = try await ProcessRunner.run("/bin/bash", ["-c", "set -e; cd \"$0\"\n\(exports)\n\(example)", directory.path],
                                                  environment: environment)
            XCTAssertEqual(out.status, 0, "`\(example)` failed:\n\(out.standardOutput)\n\(out.standardError)")
        }
    }

    func testAdminTokensAndTheAuditLogThroughTheCLI() async throws {
        stack = try await PushlineStack.start()
        let created = try await json(AdminAPI.AdminTokenCreated.self, ["admin-tokens", "create", "ci-bot"])
        XCTAssertEqual(created.name, "ci-bot")
        let bad = try await pushline(["admin-tokens", "create", "bootstrap"])
        XCTAssertEqual(bad.status, 1)
        XCTAssertTrue(bad.standardError.contains("HTTP 400") && bad.standardError.contains("(field name)"), bad.standardError)

        // The named token as the CLI's admin token: its change is recorded under its name.
        let asBot = try await pushline(["apps", "create", "--name", "Made by CI", "--json"], environment: ["PUSHLINE_ADMIN_TOKEN": created.token])
        XCTAssertEqual(asBot.status, 0, asBot.standardError)
        let app = try WireJSON.decoder().decode(AdminAPI.AppCreatedAnswer.self, from: Data(asBot.standardOutput.utf8))

        let listed = try await succeed(["admin-tokens", "list"])
        XCTAssertTrue(listed.contains(created.id.lowercasedString) && listed.contains("ci-bot") && listed.contains("active"), listed)
        XCTAssertFalse(listed.contains(created.token), "the list never shows a token")

        let table = try await succeed(["audit"])
        let lines = table.split(separator: "\n")
        XCTAssertEqual(lines.count, 3, table)  // the header, the app (newest first), the admin token
        XCTAssertTrue(lines[1].contains("admin.app-created") && lines[1].contains("ci-bot (\(created.id.lowercasedString))")
                      && lines[1].contains(app.mobileAppId.lowercasedString), table)
        XCTAssertTrue(lines[2].contains("admin.admin-token-issued") && lines[2].contains("bootstrap"), table)
        XCTAssertFalse(table.contains(created.token) || table.contains(app.apiToken), "no token in the audit log")
        let byBot = try await json(AdminAPI.AuditPage.self, ["audit", "--actor", created.id.uuidString, "--limit", "10"])
        XCTAssertEqual(byBot.entries.map(\.type), ["admin.app-created"])
        let ofType = try await json(AdminAPI.AuditPage.self, ["audit", "--type", "admin.admin-token-issued"])
        XCTAssertEqual(ofType.entries.map { $0.actor?.name }, ["bootstrap"])

        _ = try await succeed(["admin-tokens", "revoke", created.id.uuidString])
        let refused = try await pushline(["apps", "list"], environment: ["PUSHLINE_ADMIN_TOKEN": created.token])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.standardError.contains("admin token was refused"), refused.standardError)
        let unknown = try await pushline(["admin-tokens", "revoke", UUID().uuidString])
        XCTAssertTrue(unknown.standardError.contains("unknown admin token"), unknown.standardError)
    }

    // MARK: - Apps and tokens

    func testAppsAndTokensThroughTheAdminAPI() async throws {
        stack = try await PushlineStack.start()

        // Created in text: both tokens are printed, said to be shown once, the client token said to
        // ship in the app; the server token authenticates on a server route, the client token not.
        let text = try await succeed(["apps", "create", "--name", "CLI app"])
        XCTAssertTrue(text.contains("shown only this once"), text)
        XCTAssertTrue(text.contains("ships inside the mobile app") && text.contains("keep it on your servers only"), text)
        let fields = Dictionary(text.split(separator: "\n").compactMap { line -> (String, String)? in
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count >= 2 else { return nil }
            return (parts.dropLast().joined(separator: " "), String(parts.last!))
        }, uniquingKeysWith: { first, _ in first })
        let app = try XCTUnwrap(fields["mobileAppId"], text)
        let token = try XCTUnwrap(fields["server token"], text)
        let clientToken = try XCTUnwrap(fields["client token"], text)
        let wrong = try await clientRouteStatus(app: app, token: "wrong-token-\(UUID())")
        XCTAssertEqual(wrong, 401, "sanity: the route refuses a token it does not know")
        try await eventually("the created app's token authenticates") { try await self.clientRouteStatus(app: app, token: token) == 404 }
        let clientOnServerRoute = try await clientRouteStatus(app: app, token: clientToken)
        XCTAssertEqual(clientOnServerRoute, 403, "the client token cannot read delivery statistics")

        // Shown once projected, in text and JSON, with each token's scopes.
        let view = try await json(AdminAPI.AppView.self, ["apps", "show", app])
        XCTAssertEqual(view.name, "CLI app")
        XCTAssertEqual(view.tokens.map(\.revoked), [false, false])
        XCTAssertEqual(Set(view.tokens.map(\.scopes)), [[.client], [.client, .server]])
        XCTAssertEqual(view.tokens.map(\.legacy), [false, false])
        let serverTokenId = try XCTUnwrap(view.tokens.first { $0.scopes.contains(.server) }?.tokenId)
        let shown = try await succeed(["apps", "show", app])
        XCTAssertTrue(shown.contains("CLI app") && shown.contains(serverTokenId.uuidString) && shown.contains("active")
                      && shown.contains("client,server"), shown)
        XCTAssertFalse(shown.contains("LEGACY"), shown)

        // An org given is kept.
        let org = UUID()
        let second = try await json(AdminAPI.AppCreatedAnswer.self, ["apps", "create", "--name", "second", "--org-id", org.uuidString])
        XCTAssertEqual(second.orgId, org)

        // Listed once projected; one app per page makes the CLI follow `next` to the end.
        let expected = [UUID(uuidString: app)!, second.mobileAppId].sorted { $0.uuidString < $1.uuidString }
        var listed: [UUID] = []
        try await eventually("both apps listed") {
            listed = try await self.json(AdminAPI.AppList.self, ["apps", "list", "--page-size", "1"]).apps.map(\.mobileAppId)
            return listed.count == 2
        }
        XCTAssertEqual(Set(listed), Set(expected))
        let whole = try await json(AdminAPI.AppList.self, ["apps", "list"])
        XCTAssertEqual(whole.apps.map(\.mobileAppId), expected, "ordered by mobileAppId")
        XCTAssertNil(whole.next, "the whole list, not a page")
        let list = try await succeed(["apps", "list", "--page-size", "1"])
        XCTAssertTrue(list.contains(app) && list.contains(second.mobileAppId.uuidString) && list.contains("CLI app")
                      && list.contains("2 apps"), list)
        let badPage = try await pushline(["apps", "list", "--page-size", "0"])
        XCTAssertEqual(badPage.status, 64)

        // Settings: callback URL and headers, retries, name; then the URL removed.
        let set = try await succeed(["apps", "set", app, "--callback-url", "https://example.com/pushline",
                                     "--callback-header", "X-Key=a=b", "--callback-header", "X-Other=", "--webhook-retries", "3",
                                     "--name", "renamed"])
        XCTAssertTrue(set.contains("accepted"), set)
        var changed = view
        try await eventually("the settings projected") {
            changed = try await self.json(AdminAPI.AppView.self, ["apps", "show", app])
            return changed.callbackUrl != nil
        }
        XCTAssertEqual(changed.callbackUrl, "https://example.com/pushline")
        XCTAssertEqual(changed.callbackHeaders, ["X-Key": "redacted", "X-Other": "redacted"], "header values are never shown")
        XCTAssertEqual(changed.webhookRetries, 3)
        XCTAssertEqual(changed.name, "renamed")
        let shownWithCallback = try await succeed(["apps", "show", app])
        XCTAssertTrue(shownWithCallback.contains("https://example.com/pushline"), shownWithCallback)
        XCTAssertFalse(shownWithCallback.contains("a=b"), "header values stay out of the text output: \(shownWithCallback)")
        _ = try await succeed(["apps", "set", app, "--remove-callback-url"])
        try await eventually("the callback URL removed") {
            try await self.json(AdminAPI.AppView.self, ["apps", "show", app]).callbackUrl == nil
        }

        // A refused PATCH shows the ingest's problem body.
        let refused = try await pushline(["apps", "set", app, "--callback-url", "ftp://example.com/x"])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.standardError.contains("HTTP 400") && refused.standardError.contains("callbackUrl"), refused.standardError)

        // Tokens: a new one authenticates; the first, revoked, stops authenticating.
        let noScope = try await pushline(["tokens", "issue", app])
        XCTAssertEqual(noScope.status, 64, "a token's scopes are always chosen")
        XCTAssertTrue(noScope.standardError.contains("--scope"), noScope.standardError)
        let issued = try await json(AdminAPI.TokenIssuedAnswer.self, ["tokens", "issue", app, "--scope", "server"])
        XCTAssertEqual(issued.scopes, [.server])
        try await eventually("the issued token authenticates") { try await self.clientRouteStatus(app: app, token: issued.apiToken) == 404 }
        let issuedText = try await succeed(["tokens", "issue", app, "--scope", "client"])
        XCTAssertTrue(issuedText.contains("scopes     client") && issuedText.contains("ships inside the mobile app"), issuedText)
        let revoked = try await succeed(["tokens", "revoke", app, serverTokenId.uuidString])
        XCTAssertTrue(revoked.contains("accepted"), revoked)
        try await eventually("the revoked token is refused") { try await self.clientRouteStatus(app: app, token: token) == 401 }
        let other = try await clientRouteStatus(app: app, token: issued.apiToken)
        XCTAssertEqual(other, 404, "the other token still works")
        let tokens = try await json(AdminAPI.AppView.self, ["apps", "show", app]).tokens
        XCTAssertEqual(tokens.count, 4)
        XCTAssertEqual(tokens.first { $0.tokenId == serverTokenId }?.revoked, true)
        XCTAssertEqual(tokens.first { $0.tokenId == issued.tokenId }?.revoked, false)

        // Failures: one line on standard error, exit status 1.
        let unknown = UUID()
        let missing = try await pushline(["apps", "show", unknown.uuidString])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.standardError.contains("unknown app \(unknown)"), missing.standardError)
        let missingToken = try await pushline(["tokens", "revoke", app, unknown.uuidString])
        XCTAssertEqual(missingToken.status, 1)
        XCTAssertTrue(missingToken.standardError.contains("unknown API token \(unknown)"), missingToken.standardError)
        let wrongToken = try await pushline(["apps", "show", app], environment: ["PUSHLINE_ADMIN_TOKEN": "not-the-admin-token"])
        XCTAssertEqual(wrongToken.status, 1)
        XCTAssertTrue(wrongToken.standardError.contains("admin token was refused"), wrongToken.standardError)
        XCTAssertFalse(wrongToken.standardError.contains("not-the-admin-token"), "the admin token is never printed")
        let closedPort = TestBroker.freePort()
        let unreachable = try await pushline(["apps", "show", app, "--ingest-url", "http://127.0.0.1:\(closedPort)"])
        XCTAssertEqual(unreachable.status, 1)
        XCTAssertTrue(unreachable.standardError.contains("cannot reach ingest at http://127.0.0.1:\(closedPort)"), unreachable.standardError)
        XCTAssertEqual(unreachable.standardError.split(separator: "\n").count, 1, "one line: \(unreachable.standardError)")
    }

    // MARK: - Lag

    private struct LagReport: Decodable {
        struct Row: Decodable {
            var topic: String
            var partition: Int32
            var endOffset: Int64?
            var appliedOffset: Int64?
            var lag: Int64?
        }

        struct Group: Decodable {
            struct Member: Decodable {
                var client: String
                var host: String
                var shards: [Int32]
                var lag: Int64
            }

            var group: String
            var processors: [Member]
        }

        var partitions: [Row]
        var totalLag: Int64
        var group: Group?
        var groupError: String?
    }

    func testLagShowsEveryCommandPartitionZeroWhenCaughtUpAndTheBacklogWhileTheProcessorIsStopped() async throws {
        // Admin changes made while the processor is stopped are not applied: answered 503 after 5 s.
        stack = try await PushlineStack.start(ingestEnvironment: ["PUSHLINE_ADMIN_APPLY_TIMEOUT_MS": "5000"])
        _ = try await stack.createApp()

        var report = try await json(LagReport.self, ["lag"])
        XCTAssertEqual(Set(report.partitions.map { "\($0.topic)[\($0.partition)]" }),
                       Set(stack.topics.commandTopics.flatMap { topic in (0..<6).map { "\(topic)[\($0)]" } }),
                       "every command topic partition (6 each in the test stack)")
        try await eventually("lag 0 once the processor caught up") {
            report = try await self.json(LagReport.self, ["lag"])
            return report.totalLag == 0
        }
        let adminCommands = try await stack.countRecords(topic: stack.topics.admin)
        XCTAssertEqual(adminCommands, 1, "the app's one admin command (beside the processor's progress marks)")
        XCTAssertTrue(report.partitions.allSatisfy { $0.lag == 0 && $0.endOffset == ($0.appliedOffset ?? 0) }, "\(report.partitions)")

        // Stopped: two admin commands wait in the log. Their creation is not answered 2xx, since
        // nothing applies them; the CLI says what was written.
        try await stack.processor.stop()
        for name in ["while stopped 1", "while stopped 2"] {
            let created = try await pushline(["apps", "create", "--name", name])
            XCTAssertEqual(created.status, 1)
            XCTAssertTrue(created.standardError.contains("HTTP 503") && created.standardError.contains("is in the log, but no processor applied it"),
                          created.standardError)
        }
        report = try await json(LagReport.self, ["lag"])
        XCTAssertEqual(report.totalLag, 2, "\(report.partitions)")
        try await eventually("the stopped processor left the group: it has no member") {
            try await self.json(LagReport.self, ["lag"]).group?.processors.isEmpty == true
        }
        let behind = report.partitions.filter { ($0.lag ?? 0) > 0 }
        XCTAssertEqual(Set(behind.map(\.topic)), [stack.topics.admin])
        XCTAssertEqual(behind.map { $0.endOffset! - ($0.appliedOffset ?? 0) }, behind.map { $0.lag! })
        let table = try await succeed(["offsets"])
        XCTAssertTrue(table.contains("LAG") && table.contains("total lag: 2 records on \(behind.count) of \(stack.topics.commandTopics.count * 6) partitions"), table)

        try stack.processor.start()
        try await stack.processor.waitHealthy("\(stack.processorURL)/health")
        try await eventually("lag 0 again after the restart") { try await self.json(LagReport.self, ["lag"]).totalLag == 0 }
        let caughtUp = try await succeed(["lag"])
        XCTAssertTrue(caughtUp.contains("total lag: 0 records (caught up)"), caughtUp)

        // The group, as the broker describes it: the one processor holds all six shards.
        var group: LagReport.Group?
        try await eventually("the processor group is described with its one member") {
            let report = try await self.json(LagReport.self, ["lag"])
            group = report.group
            return report.group?.processors.count == 1
        }
        XCTAssertEqual(group?.group, stack.groupId)
        XCTAssertEqual(group?.processors.map(\.shards), [Array(0..<6)])
        XCTAssertEqual(group?.processors.map(\.lag), [0])
        XCTAssertTrue(group?.processors.first?.client.hasPrefix("pushline-processor-") == true, "\(String(describing: group))")
        let described = try await succeed(["lag"])
        XCTAssertTrue(described.contains("processor group \(stack.groupId) (") && described.contains("1 member"), described)

        // Watched: per shard, and the processor's share read from its metrics (one processor
        // holds all six shards of the test stack).
        let watched = try await succeed(["lag", "--watch", "--interval", "1", "--samples", "2", "--processor", stack.processorURL])
        XCTAssertEqual(watched.components(separatedBy: "total lag 0 records").count - 1, 2, "two samples:\n\(watched)")
        XCTAssertTrue(watched.contains("rate after the next sample") && watched.contains("0 records/s, ETA 0s"), watched)
        XCTAssertTrue(watched.contains("SHARD") && watched.contains("APPLIED/S"), watched)
        XCTAssertTrue(watched.contains("\(stack.processorURL)  0,1,2,3,4,5"), watched)
        XCTAssertTrue(watched.contains("PROCESSOR") && watched.contains("  0,1,2,3,4,5  "), watched)

        let noStore = try await pushline(["lag", "--store", "sqlite:\(stack.directory.path)/missing.sqlite"])
        XCTAssertEqual(noStore.status, 1)
        XCTAssertTrue(noStore.standardError.contains("no SQLite store at"), noStore.standardError)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(stack.directory.path)/missing.sqlite"), "lag creates no store")
    }

    // MARK: - Rebuild

    func testRebuildIntoAFreshStorePrintsProgressAndEqualsTheLiveStore() async throws {
        stack = try await PushlineStack.start()
        let app = try await stack.createApp()
        let batch = (0..<50).map { n in
            DeviceRegistrationAPI.Registration(MobileAppId: app.mobileAppId.uuidString, UserId: "u-\(n)", ApiToken: app.apiToken,
                                               ApnsDeviceToken: Tokens.apns(n))
        }
        let answer = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices/batch"), json: batch,
                                                      headers: [DeviceRegistrationAPI.trackRegistrationHeader: "true"])
        XCTAssertEqual(answer.status, 202)
        let ids = try answer.decode([DeviceRegistrationAPI.RegistrationAccepted].self).map(\.RegistrationRequestId)
        _ = try await stack.decidedStatuses(org: app.orgId, app: app.mobileAppId, token: app.apiToken, ids: ids)
        _ = try await succeed(["apps", "set", app.mobileAppId.uuidString, "--webhook-retries", "2"])
        var report = try await json(LagReport.self, ["lag"])
        try await eventually("everything applied") {
            report = try await self.json(LagReport.self, ["lag"])
            return report.totalLag == 0
        }
        let records = report.partitions.compactMap(\.endOffset).reduce(0, +)
        XCTAssertGreaterThanOrEqual(records, 52, "the app, 50 registrations, the settings change")

        try await stack.waitUntilTheChangelogIsPublished()
        let path = stack.directory.appendingPathComponent("rebuilt.sqlite").path
        let out = try await pushline(["rebuild", "--store", "sqlite:\(path)"])
        XCTAssertEqual(out.status, 0, out.standardError)
        XCTAssertTrue(out.standardError.contains("rebuild: ") && out.standardError.contains("changelog records")
                      && out.standardError.contains("done in"), "progress: \(out.standardError)")
        let replayedPath = stack.directory.appendingPathComponent("replayed.sqlite").path
        let replay = try await pushline(["rebuild", "--from", "commands", "--store", "sqlite:\(replayedPath)"])
        XCTAssertEqual(replay.status, 0, replay.standardError)
        XCTAssertTrue(replay.standardError.contains("\(records)/\(records) records"), "every record replayed: \(replay.standardError)")

        let live = try await stack.openStore().dump()
        let rebuilt = try await SQLiteProjectionStore(path: path, logger: Logger(label: "test")).dump()
        let replayed = try await SQLiteProjectionStore(path: replayedPath, logger: Logger(label: "test")).dump()
        XCTAssertTrue(live.contains("u-49"), "sanity: the dump holds the devices")
        ScaleOutTests.assertSameDump(rebuilt, live, "restored by `pushline rebuild` vs live store")
        ScaleOutTests.assertSameDump(replayed, live, "replayed by `pushline rebuild --from commands` vs live store")

        // `pushline dump` prints the same text, so that scripts can compare stores too.
        let dumped = try await succeed(["dump", "--store", "sqlite:\(path)"])
        XCTAssertEqual(dumped, rebuilt, "pushline dump prints the store's dump")
        let dumpedLive = try await succeed(["dump"])
        ScaleOutTests.assertSameDump(dumpedLive, live, "pushline dump of the live store (PUSHLINE_STORE)")
        let unpublished = try await succeed(["dump", "--unpublished-changelog"])
        XCTAssertEqual(unpublished.trimmingCharacters(in: .whitespacesAndNewlines), "0")
        let missing = try await pushline(["dump", "--store", "sqlite:\(stack.directory.path)/missing.sqlite"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.standardError.contains("no SQLite store at"), missing.standardError)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(stack.directory.path)/missing.sqlite"), "dump creates no store")

        let again = try await pushline(["rebuild", "--store", "sqlite:\(path)"])
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.standardError.contains("already holds consumed offsets"), again.standardError)
    }

    // MARK: - Push credentials

    /// Credentials set with the CLI reach the store through the admin topic with their secrets
    /// sealed: the keys' text is nowhere in Kafka (commands and changelog), the store's files or
    /// the services' logs, and the stored seal opens with the deployment key to the very key.
    func testPushCredentialsAreSealedEverywhereButShownWithoutSecrets() async throws {
        let secretsKey = TestPushKeys.secretsKey()
        stack = try await PushlineStack.start(processorEnvironment: ["PUSHLINE_LOG_LEVEL": "debug"],
                                              ingestEnvironment: ["PUSHLINE_SECRETS_KEY": secretsKey, "PUSHLINE_LOG_LEVEL": "debug"])
        let keys = TestPushKeys(projectId: "pushline-it-42")
        let app = try await stack.createApp()
        let appId = app.mobileAppId.uuidString
        let p8 = stack.directory.appendingPathComponent("AuthKey.p8")
        try keys.apnsPEM.write(to: p8, atomically: true, encoding: .utf8)
        let accountFile = stack.directory.appendingPathComponent("service-account.json")
        try JSONSerialization.data(withJSONObject: keys.serviceAccount()).write(to: accountFile)

        let apns = try await json(AdminAPI.APNsCredentialsView.self, [
            "apps", "credentials", "set-apns", appId, "--team-id", "ABCDE12345", "--key-id", "KEY1234567",
            "--bundle-id", "com.example.it", "--private-key-file", p8.path, "--environment", "sandbox"])
        let fcm = try await json(AdminAPI.FCMCredentialsView.self, [
            "apps", "credentials", "set-fcm", appId, "--service-account-file", accountFile.path])
        XCTAssertEqual(fcm.projectId, "pushline-it-42")
        let badFile = try await pushline(["apps", "credentials", "set-apns", appId, "--team-id", "ABCDE12345", "--key-id", "KEY1234567",
                                          "--bundle-id", "com.example.it", "--private-key-file", accountFile.path])
        XCTAssertNotEqual(badFile.status, 0)
        XCTAssertTrue(badFile.standardError.contains("privateKey"), badFile.standardError)

        try await eventually("credentials projected") {
            let view = try await HTTPClientHelpers.get("\(stack.ingestURL)/admin/v1/apps/\(appId)", headers: stack.adminHeaders)
                .decode(AdminAPI.AppView.self)
            return view.pushCredentials == AdminAPI.PushCredentialsView(apns: apns, fcm: fcm)
        }
        let shown = try await succeed(["apps", "credentials", "show", appId, "apns"])
        XCTAssertTrue(shown.contains(apns.fingerprint) && shown.contains("sandbox"), shown)
        let appShown = try await succeed(["apps", "show", appId])
        XCTAssertTrue(appShown.contains("project pushline-it-42"), appShown)

        let stored = try await stack.openStore()
        let storedApp = try await stored.app(app.mobileAppId)
        let credentials = try XCTUnwrap(storedApp?.pushCredentials)
        await stored.close()
        let keyring = try SecretsKeyring(current: secretsKey)
        let opened = try keyring.open(XCTUnwrap(credentials.apns).privateKey,
                                      context: SecretsKeyring.context(app: app.mobileAppId, provider: .apns))
        XCTAssertEqual(String(decoding: opened, as: UTF8.self), keys.apnsPEM)

        // The secrets, searched for: every 40-character piece of each key's text.
        let needles = [keys.apnsPEM, keys.rsaPEM].flatMap { pem -> [String] in
            let body = Array(TestPushKeys.pemBody(pem))
            return stride(from: 0, to: body.count - 40, by: 40).map { String(body[$0..<$0 + 40]) }
        } + ["PRIVATE KEY"]
        let admin = try await stack.broker.kcat(["-C", "-t", stack.topics.admin, "-o", "beginning", "-e", "-q"])
        try await stack.waitUntilTheChangelogIsPublished()
        let changelog = try await stack.broker.kcat(["-C", "-t", stack.topics.changelog, "-o", "beginning", "-e", "-q"])
        var haystacks = ["the admin topic": admin, "the changelog topic": changelog,
                         "ingest's log": try String(contentsOf: stack.ingest.logURL, encoding: .utf8),
                         "the processor's log": try String(contentsOf: stack.processor.logURL, encoding: .utf8)]
        for suffix in ["", "-wal"] {
            if let bytes = FileManager.default.contents(atPath: stack.storePath + suffix) {
                haystacks["the store file\(suffix)"] = String(decoding: bytes, as: UTF8.self)
            }
        }
        XCTAssertTrue(admin.contains("admin.push-credentials-set") && admin.contains(apns.fingerprint), "the search reads the records")
        XCTAssertTrue(haystacks["ingest's log"]!.contains("push credentials set"), "the search reads the log")
        XCTAssertTrue(haystacks.filter { $0.key.hasPrefix("the store file") }.values.contains { $0.contains(fcm.fingerprint) },
                      "the search reads the store")
        for (place, text) in haystacks {
            for needle in needles {
                XCTAssertFalse(text.contains(needle), "\(place) holds a piece of a private key in clear: \(needle)")
            }
        }

        _ = try await succeed(["apps", "credentials", "remove", appId, "apns"])
        try await eventually("removal projected") {
            let view = try await HTTPClientHelpers.get("\(stack.ingestURL)/admin/v1/apps/\(appId)", headers: stack.adminHeaders)
                .decode(AdminAPI.AppView.self)
            return view.pushCredentials == AdminAPI.PushCredentialsView(fcm: fcm)
        }
        let gone = try await pushline(["apps", "credentials", "show", appId, "apns"])
        XCTAssertNotEqual(gone.status, 0)
    }
}
