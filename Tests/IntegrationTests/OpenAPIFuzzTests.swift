import Contracts
import Foundation
import TestSupport
import XCTest

/// Fuzzes every route of the running ingest with schemathesis, driven by the document ingest
/// serves at `/openapi.yaml`: no answer may be a 5xx, and every status, content type and body
/// must be one the document gives for that operation.
///
/// schemathesis comes from `scripts/schemathesis` (installed by `scripts/setup`), or from the
/// executable `PUSHLINE_SCHEMATHESIS` names. `PUSHLINE_FUZZ_EXAMPLES` sets the examples per
/// operation (default 100; `scripts/fuzz` runs a long one).
final class OpenAPIFuzzTests: XCTestCase {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let checks = ["not_a_server_error", "status_code_conformance", "content_type_conformance", "response_schema_conformance"]

    func testEveryOperationAnswersAsDocumentedUnderFuzzing() async throws {
        let schemathesis = try await Self.schemathesis()
        let examples = ProcessInfo.processInfo.environment["PUSHLINE_FUZZ_EXAMPLES"].flatMap { Int($0) } ?? 100
        // Generated requests come fast from one address and one app: no rate limit may refuse them.
        // A secrets key, as a deployment has one: push credentials are checked, not refused with 503.
        let stack = try await PushlineStack.start(ingestEnvironment: [
            "PUSHLINE_RATE_LIMIT_APP_PER_SECOND": "0",
            "PUSHLINE_RATE_LIMIT_SOURCE_PER_SECOND": "0",
            "PUSHLINE_SECRETS_KEY": TestPushKeys.secretsKey(),
        ])
        do {
            let app = try await stack.createApp(name: "fuzzed app")
            let deliveryId = try await Self.projectedDelivery(stack: stack, app: app)
            let config = stack.directory.appendingPathComponent("schemathesis.toml")
            try Self.configuration(stack: stack, app: app, deliveryId: deliveryId)
                .write(to: config, atomically: true, encoding: .utf8)
            let log = stack.directory.appendingPathComponent("schemathesis.log").path
            let started = ContinuousClock.now
            let pid = try ProcessRunner.spawn(schemathesis, [
                "--config-file", config.path, "--no-color",
                "run", "\(stack.ingestURL)/openapi.yaml", "--url", stack.ingestURL,
                "--checks", Self.checks.joined(separator: ","),
                "--max-examples", "\(examples)",
                // Two workers crash schemathesis 4.32.5 itself now and then (a KeyError in
                // Hypothesis's lambda-source cache, raised as a FlakyFailure), and one is enough here.
                "--workers", "1",
                "--request-timeout", "30",
            ], environment: [
                // Hypothesis keeps its caches in the working directory (the repository) unless told otherwise.
                "HYPOTHESIS_STORAGE_DIRECTORY": stack.directory.appendingPathComponent("hypothesis").path,
            ], standardOutput: log, standardError: log, append: false)
            let exit = Task { await ProcessRunner.waitForExit(pid) }
            let watchdog = Task {
                // A bound for a hang only: beside three other test jobs on two cores a run took 550 s.
                try await Task.sleep(for: .seconds(max(1800, examples * 10)))
                kill(pid, SIGKILL)
            }
            let status = await exit.value
            watchdog.cancel()
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            print("schemathesis (\(examples) examples per operation) took \(ContinuousClock.now - started), exit \(status)\n\(output)")
            XCTAssertEqual(status, 0, "schemathesis found answers that contradict Services/Ingest/Ops/openapi.yaml:\n\(output)\n\(stack.logs())")
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    /// A delivery of the app that the processor has projected (its statistics answer 200).
    static func projectedDelivery(stack: PushlineStack, app: AdminAPI.AppCreatedAnswer) async throws -> UUID {
        let deliveryId = try await stack.send(["deviceTokens": [Tokens.apns(1)], "title": "fuzz"], app: app)
        try await eventually("delivery \(deliveryId) projected") {
            try await stack.call(.GET, "/v1/apps/\(app.mobileAppId)/deliveries/\(deliveryId)", token: app.apiToken).status == 200
        }
        return deliveryId
    }

    /// The schemathesis executable; fails (rather than skips) when it is not installed.
    static func schemathesis() async throws -> String {
        if let path = ProcessInfo.processInfo.environment["PUSHLINE_SCHEMATHESIS"], !path.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw TestFailure("PUSHLINE_SCHEMATHESIS=\(path) is not an executable: run scripts/setup, or unset it")
            }
            return path
        }
        let wrapper = repository.appendingPathComponent("scripts/schemathesis").path
        let check = try await ProcessRunner.run(wrapper, ["--check"])
        guard check.status == 0 else {
            throw TestFailure("schemathesis is not installed (scripts/schemathesis --check failed): run scripts/setup")
        }
        return wrapper
    }

    /// The schemathesis configuration of one run: the app's token for the app routes, the admin
    /// token for the admin routes (matched by security scheme), the app's ids and one of its
    /// deliveries in the paths, so that requests reach the routes' own code rather than all
    /// stopping at authentication or at a 404.
    ///
    /// The registration API's registrations are sent with `x-ms-track-registration: true`: only
    /// then does their 202 have a body (`RegistrationRequestId`). Without it the 202 is empty and
    /// has no `Content-Type`, which OpenAPI cannot tell apart from the tracked answer of the same
    /// status, so content-type and schema checks would misjudge it.
    static func configuration(stack: PushlineStack, app: AdminAPI.AppCreatedAnswer, deliveryId: UUID) -> String {
        func quoted(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        return """
        [generation]
        database = "none"

        [cache]
        enabled = false

        [auth.openapi.AppBearer]
        bearer = \(quoted(app.apiToken))

        [auth.openapi.AdminBearer]
        bearer = \(quoted(stack.adminToken))

        [parameters]
        "path.mobileAppId" = \(quoted(app.mobileAppId.uuidString.lowercased()))
        "path.orgId" = \(quoted(app.orgId.uuidString.lowercased()))
        "path.deliveryId" = \(quoted(deliveryId.uuidString.lowercased()))

        [[operations]]
        include-operation-id-regex = "^registerDevices?$"
        parameters = { "header.x-ms-track-registration" = "true" }

        """
    }
}
