import Projections
@testable import Processor
@testable import Handlers

extension BatchApplier {
    /// Applies consumed records in the order given, each with its `at` as its event time: what
    /// the apply loop does with a batch the event order released.
    func apply(_ records: [ConsumedRecord], expected: [PartitionKey: Int64]) async throws -> [PartitionKey: Int64] {
        let decoded = await decode(records).map { record in
            var record = record
            record.eventTime = record.at ?? 0
            return record
        }
        return try await apply(decoded, expected: expected)
    }
}
