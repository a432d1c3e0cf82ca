import Foundation
import TestSupport
import XCTest

/// The README's quickstart runs as written: its code block, taken from `README.md` itself, runs
/// as a shell script in a directory laid out like the checkout (its `scripts/`, `Makefile` and
/// README), so `make run` and `scripts/push-mocks start` start a stack and mock servers of its
/// own there, from this build's binaries (`PUSHLINE_BIN_DIR`), on free ports. Only the
/// ingest port in the block's `BASE=` line is changed, to the one this stack listens on. The
/// audience walkthrough's block then runs on the same stack.
final class QuickstartTests: XCTestCase {
    private static let base = "BASE=http://127.0.0.1:8080"

    /// The first `sh` block after the "## Quickstart" heading.
    static func quickstartBlock(of readme: String) throws -> String {
        let section = try XCTUnwrap(readme.range(of: "\n## Quickstart\n"), "README has no Quickstart section")
        let rest = readme[section.upperBound...]
        let open = try XCTUnwrap(rest.range(of: "```sh\n"), "the Quickstart section has no sh block")
        let close = try XCTUnwrap(rest[open.upperBound...].range(of: "\n```"), "the Quickstart's sh block is not closed")
        return String(rest[open.upperBound..<close.lowerBound]) + "\n"
    }

    /// The `sh` block of the audience walkthrough, which continues from the quickstart's.
    static func audienceBlock(of readme: String) throws -> String {
        let section = try XCTUnwrap(readme.range(of: "\n## Walkthrough: tags, topics and audiences\n"), "README has no audience walkthrough")
        let rest = readme[section.upperBound...]
        let open = try XCTUnwrap(rest.range(of: "```sh\n"), "the audience walkthrough has no sh block")
        let close = try XCTUnwrap(rest[open.upperBound...].range(of: "\n```"), "the audience walkthrough's sh block is not closed")
        return String(rest[open.upperBound..<close.lowerBound]) + "\n"
    }

    func testTheReadmeQuickstartRunsAsWrittenAndItsSendIsDelivered() async throws {
        let root = TestBroker.repositoryRoot
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let block = try Self.quickstartBlock(of: readme)
        let audiences = try Self.audienceBlock(of: readme)
        XCTAssertTrue(block.hasPrefix("scripts/push-mocks start"), "the quickstart starts with the mocks:\n\(block)")
        XCTAssertTrue(block.contains("\nmake run"), "the quickstart starts the stack with make run:\n\(block)")
        XCTAssertTrue(block.contains(Self.base), "the quickstart names its ingest with \(Self.base):\n\(block)")

        let ports = (ingest: TestBroker.freePort(), processor: TestBroker.freePort(),
                     sender: TestBroker.freePort(), broker: TestBroker.freePort())
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-quickstart-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for name in ["scripts", "Makefile", "README.md"] {
            try FileManager.default.createSymbolicLink(at: directory.appendingPathComponent(name),
                                                       withDestinationURL: root.appendingPathComponent(name))
        }
        let environment = [
            "PUSHLINE_BIN_DIR": ServiceProcess.binDirectory.path,
            "PUSHLINE_INGEST_PORT": String(ports.ingest), "PUSHLINE_PROCESSOR_PORT": String(ports.processor),
            "PUSHLINE_SENDER_PORT": String(ports.sender), "PUSHLINE_BROKER_PORT": String(ports.broker),
        ]
        do {
            try await Self.runQuickstart(block, audiences: audiences, in: directory, ingestPort: ports.ingest, environment: environment)
        } catch {
            await Self.stop(directory, environment: environment)
            throw error
        }
        await Self.stop(directory, environment: environment)
    }

    /// Stops exactly what the block started, by the PIDs the scripts recorded there.
    private static func stop(_ directory: URL, environment: [String: String]) async {
        _ = try? await shell("scripts/stop; scripts/push-mocks stop", in: directory, environment: environment)
        try? FileManager.default.removeItem(at: directory)
    }

    private static func runQuickstart(_ block: String, audiences: String, in directory: URL, ingestPort: Int,
                                      environment: [String: String]) async throws {
        let script = block.replacingOccurrences(of: Self.base, with: "BASE=http://127.0.0.1:\(ingestPort)")
        try ("set -euo pipefail\n" + script).write(to: directory.appendingPathComponent("quickstart.sh"), atomically: true, encoding: .utf8)
        let quickstart = try await shell("timeout 600 bash quickstart.sh", in: directory, environment: environment)
        XCTAssertEqual(quickstart.status, 0, "the quickstart failed:\n\(quickstart.standardOutput)\n\(quickstart.standardError)")
        let delivery = try XCTUnwrap(quickstart.standardOutput.split(separator: "\n").last, quickstart.standardOutput)
        XCTAssertTrue(delivery.contains(#""delivered":1"#) && delivery.contains(#""sent":1"#),
                      "the last line printed is not the delivered send: \(delivery)")

        // The audience walkthrough, on the same stack, with the quickstart's names.
        let walkthrough = #"""
            set -euo pipefail
            BASE=http://127.0.0.1:\#(ingestPort)
            field() { python3 -c "import json,sys;print(json.load(sys.stdin)['$1'])"; }
            APP=$(field mobileAppId < app.json); CLIENT=$(field clientToken < app.json); SERVER=$(field apiToken < app.json)

            """# + audiences
        try walkthrough.write(to: directory.appendingPathComponent("audiences.sh"), atomically: true, encoding: .utf8)
        let walked = try await shell("timeout 600 bash audiences.sh", in: directory, environment: environment)
        XCTAssertEqual(walked.status, 0, "the audience walkthrough failed:\n\(walked.standardOutput)\n\(walked.standardError)")
        for expected in [#"{"accepted":2}"#, #""sentByLocale":{"pt":1}"#,
                         #""outcomesByLocale":{"pt":{"delivered":1,"expired":0,"failed":0,"unregistered":0}}"#, #"{"audience":"locale:pt","devices":2}"#,
                         #""code":"audience_invalid""#, #""position":11"#, #""schedule":"waiting""#, #""schedule":"cancelled""#,
                         #""schedule":"fired""#, #"{"quietHours":""#, #""dropped":1"#, #""sendAtLocal":""#] {
            XCTAssertTrue(walked.standardOutput.contains(expected), "the walkthrough printed no \(expected):\n\(walked.standardOutput)")
        }
        XCTAssertEqual(walked.standardOutput.components(separatedBy: #""delivered":1,"deliveryId""#).count - 1, 4,
                       "the topic, expression, localized and scheduled sends each delivered once:\n\(walked.standardOutput)")

        // Mocks started again after the stack (new ports, new keys): `make run` again restarts the
        // sender, which then pushes to them once the app has their credentials, as the README says.
        let again = #"""
            set -euo pipefail
            scripts/push-mocks stop >/dev/null && scripts/push-mocks start >/dev/null
            make run
            BASE=http://127.0.0.1:\#(ingestPort)
            field() { python3 -c "import json,sys;print(json.load(sys.stdin)['$1'])"; }
            APP=$(field mobileAppId < app.json); SERVER=$(field apiToken < app.json)
            ADMIN="Authorization: Bearer $(cat var/admin-token)"
            curl -s -X PUT $BASE/admin/v1/apps/$APP/credentials/fcm -H "$ADMIN" -H 'Content-Type: application/json' \
                 -d "{\"serviceAccount\": $(cat var/mocks/fcm-service-account.json)}"
            D=$(curl -s -X POST $BASE/v1/apps/$APP/notifications -H "Authorization: Bearer $SERVER" \
                 -H 'Content-Type: application/json' -d '{"userId": "alice", "title": "Again"}' | field deliveryId)
            for _ in $(seq 240); do
              answer=$(curl -s $BASE/v1/apps/$APP/deliveries/$D -H "Authorization: Bearer $SERVER")
              case "$answer" in *'"delivered":1'*) echo "$answer"; exit 0 ;; esac
              sleep 1
            done
            echo "not delivered: $answer"; exit 1
            """#
        try again.write(to: directory.appendingPathComponent("again.sh"), atomically: true, encoding: .utf8)
        let restarted = try await shell("bash again.sh", in: directory, environment: environment)
        XCTAssertEqual(restarted.status, 0, "a send after the mocks' restart failed:\n\(restarted.standardOutput)\n\(restarted.standardError)")
        XCTAssertTrue(restarted.standardOutput.contains("restarting the sender"), restarted.standardOutput)
        XCTAssertTrue(restarted.standardOutput.contains("sends to the local mock servers"), restarted.standardOutput)
    }

    private static func shell(_ command: String, in directory: URL, environment: [String: String]) async throws -> ProcessOutput {
        try await ProcessRunner.run("/bin/bash", ["-c", "cd \"$0\" && \(command)", directory.path], environment: environment)
    }
}
