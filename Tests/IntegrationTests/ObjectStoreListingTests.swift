import AsyncHTTPClient
import Foundation
import TestSupport
import XCTest

/// `scripts/s3-store` lists from an index of its own instead of walking the whole bucket for
/// every page (the durable broker lists a partition's objects on every fetch of it). It must
/// answer every listing exactly as `localbucket` does over the same folder, including right after
/// a write or a delete it acknowledged.
final class ObjectStoreListingTests: XCTestCase {
    private var root: URL!
    private var pids: [pid_t] = []

    override func setUp() async throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-s3-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("tansu"), withIntermediateDirectories: true)
    }

    override func tearDown() async throws {
        for pid in pids {
            kill(pid, SIGTERM)
            _ = await ProcessRunner.waitForExit(pid)
        }
        try? FileManager.default.removeItem(at: root)
    }

    /// Starts a store over `root` and answers its bucket's URL once it listens.
    private func start(_ arguments: [String]) async throws -> String {
        let port = TestBroker.freePort()
        let log = root.appendingPathComponent("store-\(port).log").path
        pids.append(try ProcessRunner.spawn("/usr/bin/env", arguments + [root.path, "--port", "\(port)"],
                                            standardOutput: log, standardError: log, append: false))
        let url = "http://127.0.0.1:\(port)/tansu"
        for _ in 0..<100 {
            if (try? await HTTPClientHelpers.get(url + "?list-type=2"))?.status == 200 { return url }
            try await Task.sleep(for: .milliseconds(100))
        }
        XCTFail("the store did not answer; log: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        throw CancellationError()
    }

    /// The keys, common prefixes, truncation and continuation of one listing page.
    private func page(_ bucket: String, _ query: String) async throws -> [String] {
        let answer = try await HTTPClientHelpers.get(bucket + "?" + query)
        XCTAssertEqual(answer.status, 200, query)
        let text = answer.text
        let tags = ["Key", "ETag", "Size", "LastModified", "Prefix", "IsTruncated", "NextContinuationToken", "KeyCount"]
        var found: [String] = []
        for tag in tags {
            var rest = text[...]
            while let open = rest.range(of: "<\(tag)>"), let close = rest.range(of: "</\(tag)>", range: open.upperBound..<rest.endIndex) {
                found.append("\(tag)=\(rest[open.upperBound..<close.lowerBound])")
                rest = rest[close.upperBound...]
            }
        }
        return found
    }

    func testListingsMatchLocalbucketsAfterEveryWriteAndDelete() async throws {
        let store = try await start([TestBroker.repositoryRoot.appendingPathComponent("scripts/s3-store").path])
        let plain = try await start(["python3", "-c", "import localbucket, sys; sys.argv[0] = 'localbucket'; localbucket.main()"])
        var generator = SystemRandomNumberGenerator()
        // Folder names and object names apart, as the broker's keys are: localbucket cannot store an
        // object where a folder is, or the other way round.
        let folders = ["clusters", "topics", "records", "a", "a-b", "é"]
        let names = ["00000000000000000001.batch", "00000000000000000010.batch", "watermark.json", "b", "a-c"]
        var written: [String] = []
        let queries = ["list-type=2", "list-type=2&prefix=clusters/", "list-type=2&prefix=clusters/topics/records/",
                       "list-type=2&prefix=a", "list-type=2&prefix=a/&delimiter=/", "list-type=2&delimiter=/",
                       "list-type=2&prefix=records/&max-keys=3", "list-type=2&prefix=a/records/&max-keys=2", "list-type=2&prefix=clusters/&start-after=clusters/records",
                       "list-type=2&prefix=../", "list-type=2&prefix=a//", "list-type=2&prefix=nothing/here/"]
        for round in 0..<6 {
            for _ in 0..<40 {
                let key = ((0..<Int.random(in: 0...3, using: &generator)).map { _ in folders.randomElement(using: &generator)! }
                    + [names.randomElement(using: &generator)!]).joined(separator: "/")
                let encoded = key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)!
                // An object written again in a later round changes: its listed ETag and size must too.
                let answer = try await HTTPClientHelpers.request(.PUT, store + "/" + encoded, body: Data((key + String(repeating: "+", count: round)).utf8),
                                                                  contentType: "application/octet-stream")
                XCTAssertEqual(answer.status, 200, key)
                written.append(encoded)
            }
            if round % 2 == 1, let victim = written.randomElement(using: &generator) {
                let answer = try await HTTPClientHelpers.request(.DELETE, store + "/" + victim)
                XCTAssertEqual(answer.status, 204)
            }
            for query in queries {
                var token: String?
                repeat {
                    let paged = query + (token.map { "&continuation-token=" + $0 } ?? "")
                    let expected = try await page(plain, paged)
                    let listed = try await page(store, paged)
                    XCTAssertEqual(listed, expected, "round \(round): \(paged)")
                    token = expected.first { $0.hasPrefix("NextContinuationToken=") }.map { String($0.dropFirst(22)) }
                } while token != nil
            }
        }
        let all = try await page(store, "list-type=2&max-keys=1000")
        XCTAssertTrue(all.contains { $0.hasPrefix("Key=") }, "the store lists what was written")
    }

    /// The broker's pattern: a partition folder of thousands of records listed page after page
    /// (1000 keys each) on every fetch, records appended at its end, and an object in it rewritten.
    func testAPartitionsPagesFollowAppendsAndRewrites() async throws {
        let folder = root.appendingPathComponent("tansu/clusters/c/topics/t/partitions/0000000000/records")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for offset in 0..<2500 {
            try Data("record \(offset)".utf8).write(to: folder.appendingPathComponent(String(format: "%020d.batch", offset)))
        }
        let store = try await start([TestBroker.repositoryRoot.appendingPathComponent("scripts/s3-store").path])
        let plain = try await start(["python3", "-c", "import localbucket, sys; sys.argv[0] = 'localbucket'; localbucket.main()"])
        let prefix = "clusters/c/topics/t/partitions/0000000000/records/"
        func listing(_ bucket: String) async throws -> [String] {
            var all: [String] = []
            var token: String?
            repeat {
                let page = try await self.page(bucket, "list-type=2&prefix=\(prefix)" + (token.map { "&continuation-token=" + $0 } ?? ""))
                all += page
                token = page.first { $0.hasPrefix("NextContinuationToken=") }.map { String($0.dropFirst(22)) }
            } while token != nil
            return all
        }
        var expectedKeys = 2500
        for step in 0..<6 {
            let listed = try await listing(store)
            let expected = try await listing(plain)
            XCTAssertEqual(listed, expected, "step \(step)")
            XCTAssertEqual(listed.filter { $0.hasPrefix("Key=") }.count, expectedKeys, "step \(step)")
            // Append one record, and rewrite one in the first page (as the broker rewrites its
            // watermark object), one in a full page and one on the last page.
            let key = prefix + String(format: "%020d.batch", 2500 + step)
            let answer = try await HTTPClientHelpers.request(.PUT, store + "/" + key, body: Data("appended".utf8),
                                                              contentType: "application/octet-stream")
            XCTAssertEqual(answer.status, 200)
            expectedKeys += 1
            let rewritten = prefix + String(format: "%020d.batch", [10, 1500, 2400, 2500, 42, 999][step])
            let again = try await HTTPClientHelpers.request(.PUT, store + "/" + rewritten, body: Data("rewritten \(step) longer".utf8),
                                                             contentType: "application/octet-stream")
            XCTAssertEqual(again.status, 200)
        }
    }
}
