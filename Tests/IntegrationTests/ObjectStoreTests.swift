import Foundation
import TestSupport
import XCTest

/// The durable broker's object store (`scripts/s3-store`) must give Tansu's S3 engine what it
/// relies on, however many requests it serves at once (each object has a lock of its own). Tansu rewrites shared objects (its producers' sequence numbers, each partition's end)
/// with `If-Match: <the ETag it read>` and creates them with `If-None-Match: *`, retrying on 412: a
/// second writer that also wins overwrites the first one's update, and the broker later refuses a
/// producer's batch as out of order. And it finds a partition's records by listing them on every
/// fetch: a listing that misses an acknowledged write hides records from readers.
final class ObjectStoreTests: XCTestCase {
    private var root: URL!
    private var pid: pid_t?
    private var port = 0
    private var store: S3TestClient!

    override func setUp() async throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-s3-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        port = TestBroker.freePort()
        let log = root.appendingPathComponent("s3-store.log").path
        pid = try ProcessRunner.spawn(TestBroker.repositoryRoot.appendingPathComponent("scripts/s3-store").path,
                                      [root.appendingPathComponent("objects").path, "--port", "\(port)"],
                                      standardOutput: log, standardError: log, append: false)
        store = S3TestClient(endpoint: "http://127.0.0.1:\(port)", bucket: "tansu")
        for _ in 0..<600 {
            if (try? await store.createBucket()) == true { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        XCTFail("the store did not create its bucket; log: \((try? String(contentsOfFile: log, encoding: .utf8).suffix(2000)) ?? "")")
        throw CancellationError()
    }

    override func tearDown() async throws {
        if let pid {
            kill(pid, SIGKILL)  // as scripts/broker ends it; nothing of it is needed after the test
            _ = await ProcessRunner.waitForExit(pid)
        }
        try? FileManager.default.removeItem(at: root)
    }

    /// The statuses of `writers` PUTs of `key` sent at once, each with `headers`, in writer order.
    private func race(_ key: String, writers: Int, headers: [String: String]) async throws -> [Int] {
        try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for writer in 0..<writers {
                group.addTask { [store] in
                    (writer, try await store!.put(key, Data("writer \(writer)".utf8), headers: headers).status)
                }
            }
            var statuses = [Int](repeating: 0, count: writers)
            for try await (writer, status) in group { statuses[writer] = status }
            return statuses
        }
    }

    func testOfRacingConditionalWritesExactlyOneWinsAndTheOthersGet412() async throws {
        for round in 0..<10 {
            let created = try await race("clusters/c/create-\(round).json", writers: 8, headers: ["If-None-Match": "*"])
            XCTAssertEqual(created.filter { $0 == 200 }.count, 1, "If-None-Match: *, round \(round): \(created)")
            XCTAssertEqual(created.filter { $0 == 412 }.count, 7, "If-None-Match: *, round \(round): \(created)")

            let key = "clusters/c/update-\(round).json"
            let first = try await store.put(key, Data("first".utf8))
            XCTAssertEqual(first.status, 200)
            let etag = try XCTUnwrap(first.headers.first(name: "ETag"))
            let updated = try await race(key, writers: 8, headers: ["If-Match": etag])
            XCTAssertEqual(updated.filter { $0 == 200 }.count, 1, "If-Match, round \(round): \(updated)")
            XCTAssertEqual(updated.filter { $0 == 412 }.count, 7, "If-Match, round \(round): \(updated)")
            let winner = try XCTUnwrap(updated.firstIndex(of: 200))
            let stored = try await store.get(key)
            XCTAssertEqual(stored.text, "writer \(winner)", "the winner's write is what is stored")
            let late = try await store.put(key, Data("late".utf8), headers: ["If-Match": etag])
            XCTAssertEqual(late.status, 412, "the ETag the losers read no longer matches")
        }
    }

    /// The broker's own pattern: writers read an object, change it and write it back with the ETag
    /// they read, and read again on 412. No update may be lost.
    func testReadModifyWriteWithIfMatchLosesNoUpdate() async throws {
        let key = "clusters/c/meta.json"
        let created = try await store.put(key, Data("0".utf8), headers: ["If-None-Match": "*"])
        XCTAssertEqual(created.status, 200)
        let writers = 5, increments = 12
        let retries = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<writers {
                group.addTask { [store] in
                    var retries = 0
                    for _ in 0..<increments {
                        while true {
                            let read = try await store!.get(key)
                            let next = (Int(read.text) ?? -1_000_000) + 1
                            let written = try await store!.put(key, Data("\(next)".utf8),
                                                               headers: ["If-Match": read.headers.first(name: "ETag") ?? ""])
                            if written.status == 200 { break }
                            XCTAssertEqual(written.status, 412)
                            retries += 1
                        }
                    }
                    return retries
                }
            }
            return try await group.reduce(0, +)
        }
        let final = try await store.get(key).text
        XCTAssertEqual(final, "\(writers * increments)", "every increment applied once (\(retries) writes refused and retried)")
    }

    /// A read racing writes of the same object answers one version: the content with its own
    /// ETag (the MD5 of the content). A read that paired old content with a new ETag let its
    /// reader's next `If-Match` write pass and undo the write it had not seen. Writes of other
    /// objects run beside them all the while.
    func testAReadRacingWritesAnswersContentWithItsOwnETag() async throws {
        let key = "clusters/c/topics/t/partitions/0000000000/watermark.json"
        let start = try await store.put(key, Data("start".utf8))
        XCTAssertEqual(start.status, 200)
        let mismatches = try await withThrowingTaskGroup(of: [String].self) { group in
            for writer in 0..<3 {
                group.addTask { [store] in
                    for n in 0..<60 {
                        let body = Data(String(repeating: "\(writer)-\(n);", count: 1 + (n * 37) % 400).utf8)
                        let written = try await store!.put(writer == 0 ? key : "clusters/c/other-\(writer).json", body)
                        XCTAssertEqual(written.status, 200)
                    }
                    return []
                }
            }
            for _ in 0..<3 {
                group.addTask { [store] in
                    var mismatches: [String] = []
                    for _ in 0..<60 {
                        let read = try await store!.get(key)
                        XCTAssertEqual(read.status, 200)
                        let etag = (read.headers.first(name: "ETag") ?? "").replacingOccurrences(of: "\"", with: "")
                        let md5 = S3TestClient.md5(read.body)
                        if etag != md5 { mismatches.append("ETag \(etag) for content of MD5 \(md5)") }
                    }
                    return mismatches
                }
            }
            return try await group.reduce([], +)
        }
        XCTAssertEqual(mismatches, [], "reads whose ETag is not their content's")
    }

    func testAListingRightAfterAnAcknowledgedWriteIncludesIt() async throws {
        let prefix = "clusters/c/topics/t/partitions/0000000000/records/"
        let writers = 6, perWriter = 25
        let missed = try await withThrowingTaskGroup(of: [String].self) { group in
            for writer in 0..<writers {
                group.addTask { [store] in
                    var missed: [String] = []
                    for n in 0..<perWriter {
                        let key = prefix + String(format: "%02d-%020d.batch", writer, n)
                        let written = try await store!.put(key, Data(repeating: UInt8(n), count: 200))
                        XCTAssertEqual(written.status, 200, key)
                        // Small pages, so that later pages are read while others write too.
                        if !(try await store!.keys(under: prefix, pageSize: 40)).contains(key) { missed.append(key) }
                    }
                    return missed
                }
            }
            return try await group.reduce([], +)
        }
        XCTAssertEqual(missed, [], "acknowledged writes missing from the listing that followed them")
        let listed = try await store.keys(under: prefix, pageSize: 40)
        XCTAssertEqual(listed.count, writers * perWriter)
        XCTAssertEqual(listed, listed.sorted(), "in key order")
    }
}
