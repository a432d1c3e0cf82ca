/// Hooks run on every rebalance, before any message of a newly assigned partition is delivered.
///
/// Both hooks run one at a time, while the consumer fetches nothing (its poller thread
/// waits for them). `onRevoke` can run while the application is still processing the
/// batch it received last: it should wait for that work if it needs to. Batches handed
/// out after `onRevoke` returned contain no message of a revoked partition. The hooks
/// must not call `KafkaConsumer.close()`, which waits for them.
public struct KafkaRebalanceHandler: Sendable {
    /// Returns the offset to start reading each newly assigned partition at; a partition missing
    /// from the answer starts at its beginning. If it throws, the error ends the batches sequence.
    public var onAssign: @Sendable ([TopicPartition]) async throws -> [TopicPartition: Int64]
    /// Called with the partitions this member gives up, before another member may read them.
    public var onRevoke: @Sendable ([TopicPartition]) async -> Void

    public init(
        onAssign: @escaping @Sendable ([TopicPartition]) async throws -> [TopicPartition: Int64],
        onRevoke: @escaping @Sendable ([TopicPartition]) async -> Void
    ) {
        self.onAssign = onAssign
        self.onRevoke = onRevoke
    }

    /// Hooks that do nothing, for a consumer that never rebalances.
    static let none = KafkaRebalanceHandler(onAssign: { _ in [:] }, onRevoke: { _ in })
}
