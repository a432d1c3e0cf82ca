import Contracts
import Foundation
import Kafka
import Logging
import Projections
import ProjectionStores
import Synchronization
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// Collects what the applier publishes to the outbound topic.
final class RecordingOutbound: OutboundPublisher {
    private let storage = Mutex<[OutboundMessage]>([])
    var messages: [OutboundMessage] { storage.withLock { $0 } }
    func publish(_ messages: [OutboundMessage]) async throws { storage.withLock { $0 += messages } }
}

/// Runs commands through the real applier into real SQLite stores, one file per run, in a
/// temporary directory removed afterwards: for checks that different arrival orders end in the
/// same tables.
class ApplierTestCase: XCTestCase {
    let topics = Topics()
    let at = Date(timeIntervalSince1970: 1_800_000_000)
    private(set) var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("applier-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    /// The command as the consumer would hand it over from `partition` at `offset`, written at
    /// `time` (default `at`).
    func record<C: Command>(_ command: C, partition: Int32, offset: Int64, at time: Date? = nil) throws -> ConsumedRecord {
        let encoded = try EncodedCommand(command, topics: topics, id: UUID(), at: time ?? at, encoder: WireJSON.encoder())
        return ConsumedRecord(partition: PartitionKey(topic: encoded.topic, partition: partition), offset: offset,
                              type: encoded.type, version: encoded.version, value: encoded.value)
    }

    /// Applies the batches in order to a new store `name` with `rules`; returns it and what was published.
    /// `outboundWindow`, `devicePageSize` and `fewUserSettings`: the applier's (by default, as a processor has them).
    func apply(_ batches: [[ConsumedRecord]], name: String, rules: DecisionRules = .default,
               outboundWindow: Int = BatchApplier.outboundWindow(forQueue: KafkaProducerConfiguration().queueBufferingMaxMessages),
               devicePageSize: Int = 10_000, fewUserSettings: Int = 10_000) async throws -> (store: any ProjectionStore, outbound: [OutboundMessage]) {
        let store = try await ProjectionStoreFactory.open("sqlite:" + directory.appendingPathComponent(name).path, logger: Logger(label: "test"))
        let outbound = RecordingOutbound()
        let applier = BatchApplier(store: store, outbound: outbound, verifier: TokenFormatVerifier(), logger: Logger(label: "test"),
                                   outboundWindow: outboundWindow, rules: rules, devicePageSize: devicePageSize,
                                   fewUserSettings: fewUserSettings)
        var positions: [PartitionKey: Int64] = [:]
        for batch in batches {
            for (k, v) in try await applier.apply(batch, expected: positions) { positions[k] = v }
        }
        return (store, outbound.messages)
    }
}
