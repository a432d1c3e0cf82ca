import AsyncHTTPClient
import Foundation
import Logging
import Projections
import ProjectionStores
import TestSupport
import XCTest
@testable import Processor
@testable import Handlers
@testable import ProcessorServer

/// A real webhook receiver on 127.0.0.1, a real SQLite store in a temporary directory and an
/// HTTP client, for tests that drive the dispatcher.
class DispatcherTestCase: XCTestCase {
    var directory: URL!
    var store: (any ProjectionStore)!
    var receiver: WebhookReceiver!
    var http: HTTPClient!

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("dispatcher-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        store = try await ProjectionStoreFactory.open("sqlite:" + directory.appendingPathComponent("store.sqlite").path, logger: Logger(label: "test"))
        receiver = WebhookReceiver()
        try await receiver.start()
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    override func tearDown() async throws {
        try await http?.shutdown()
        await receiver?.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
