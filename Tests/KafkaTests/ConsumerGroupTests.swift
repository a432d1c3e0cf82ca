import Foundation
import Kafka
import Synchronization
import TestSupport
import XCTest

/// Two members of one group, with the application's offset store played by `Store`.
final class ConsumerGroupTests: XCTestCase {
    private var broker: TestBroker!

    override func setUp() async throws {
        broker = try await TestBroker.start()
    }

    override func tearDown() async throws {
        try await broker?.stop()
    }

    /// What the members processed: the next offset per partition (what `onAssign`
    /// answers, as a projection store would) and every record seen, by member.
    private final class Store: Sendable {
        private let state = Mutex<(next: [TopicPartition: Int64], seen: [String: Set<String>], revoked: [String: [TopicPartition]])>(
            ([:], [:], [:])
        )

        func record(_ batch: [KafkaConsumerMessage], by member: String) {
            state.withLock { state in
                for message in batch {
                    state.next[message.topicPartition] = max(state.next[message.topicPartition] ?? 0, message.offset + 1)
                    state.seen[member, default: []].insert("\(message.partition)/\(message.offset)")
                }
            }
        }

        func startOffsets(_ partitions: [TopicPartition]) -> [TopicPartition: Int64] {
            state.withLock { state in state.next.filter { partitions.contains($0.key) } }
        }

        func revoked(_ partitions: [TopicPartition], from member: String) {
            state.withLock { $0.revoked[member, default: []] += partitions }
        }

        var seen: [String: Set<String>] { state.withLock { $0.seen } }
        var revoked: [String: [TopicPartition]] { state.withLock { $0.revoked } }
    }

    private func member(_ name: String, store: Store, group: String) throws -> KafkaConsumer {
        try KafkaConsumer(
            configuration: KafkaTestSupport.consumerConfiguration(broker, group: group),
            topics: ["shared"],
            rebalance: KafkaRebalanceHandler(
                onAssign: { store.startOffsets($0) },
                onRevoke: { store.revoked($0, from: name) }
            ),
            logger: KafkaTestSupport.logger
        )
    }

    private func iterate(_ consumer: KafkaConsumer, as name: String, into store: Store) -> Task<Void, any Error> {
        Task {
            for try await batch in consumer.batches() {
                store.record(batch, by: name)
            }
        }
    }

    func testTwoMembersSplitThePartitionsAndConsumeEverythingAndCloseLeavesTheGroup() async throws {
        try await KafkaAdmin.createTopics([("shared", 4)], bootstrapServers: broker.bootstrapServers)
        let producer = try KafkaProducer.make(broker)
        let reports = try await producer.send(KafkaTestSupport.records(topic: "shared", count: 200))
        let allPartitions = Set((0..<4).map { TopicPartition(topic: "shared", partition: Int32($0)) })
        let store = Store()
        let a = try member("a", store: store, group: "pair")
        let b = try member("b", store: store, group: "pair")
        let iterateA = iterate(a, as: "a", into: store)
        let iterateB = iterate(b, as: "b", into: store)

        try await KafkaTestSupport.eventually(within: .seconds(30), "both members hold disjoint partitions covering all") {
            let (ownedByA, ownedByB) = (a.assignment, b.assignment)
            return !ownedByA.isEmpty && !ownedByB.isEmpty && ownedByA.isDisjoint(with: ownedByB)
                && ownedByA.union(ownedByB) == allPartitions
        }
        // Records produced now can only be read by the member owning their partition.
        let later = try await producer.send(KafkaTestSupport.records(topic: "shared", count: 200, prefix: "later-"))
        let expected = Set((reports + later).map { "\($0.partition)/\($0.offset)" })
        try await KafkaTestSupport.eventually("every record is consumed by one of the members") {
            store.seen.values.reduce(into: Set<String>()) { $0.formUnion($1) } == expected
        }
        XCTAssertFalse(store.seen["a", default: []].isEmpty)
        XCTAssertFalse(store.seen["b", default: []].isEmpty)

        let ownedByA = a.assignment
        await a.close()
        try await iterateA.value

        XCTAssertEqual(Set(store.revoked["a", default: []]), ownedByA, "closing ran the revocation hook")
        XCTAssertEqual(a.assignment, [])
        try await KafkaTestSupport.eventually(within: .seconds(30), "the remaining member takes over every partition") {
            b.assignment == allPartitions
        }
        await b.close()
        try await iterateB.value
        await producer.shutdown()
    }

    /// The coordinator describes the group: its members, each with the partitions it holds when
    /// the coordinator reports them (Tansu reports member ids only: no client id, host or
    /// assignment); once both left, no member.
    func testDescribeGroupListsTheMembersAndWhatTheCoordinatorSaysOfThem() async throws {
        try await KafkaAdmin.createTopics([("shared", 4)], bootstrapServers: broker.bootstrapServers)
        let store = Store()
        let a = try member("a", store: store, group: "described")
        let b = try member("b", store: store, group: "described")
        let iterateA = iterate(a, as: "a", into: store)
        let iterateB = iterate(b, as: "b", into: store)
        try await KafkaTestSupport.eventually(within: .seconds(30), "both members hold partitions") {
            !a.assignment.isEmpty && !b.assignment.isEmpty && a.assignment.union(b.assignment).count == 4
        }

        var description = try await KafkaAdmin.describeGroup("described", bootstrapServers: broker.bootstrapServers)
        try await KafkaTestSupport.eventually(within: .seconds(30), "the coordinator describes both members") {
            description = (try? await KafkaAdmin.describeGroup("described", bootstrapServers: self.broker.bootstrapServers)) ?? description
            return description.members.count == 2
        }
        XCTAssertEqual(description.groupId, "described")
        XCTAssertEqual(description.state, "Stable")
        XCTAssertEqual(Set(description.members.map(\.memberId)).count, 2, "\(description.members)")
        XCTAssertTrue(description.members.allSatisfy { $0.memberId.hasPrefix("pushline-") }, "the coordinator's ids start with the client.id")
        let reported = description.members.map { Set($0.assignment) }
        XCTAssertTrue(reported == [[], []] || Set(reported) == [a.assignment, b.assignment],
                      "what is reported is what the members hold: \(description.members)")

        let other = try await KafkaAdmin.describeGroup("nobody-joined", bootstrapServers: broker.bootstrapServers)
        XCTAssertEqual(other.members, [], "a group nobody joined has no members")

        await a.close()
        await b.close()
        try await iterateA.value
        try await iterateB.value
        try await KafkaTestSupport.eventually(within: .seconds(30), "no member once both left") {
            (try? await KafkaAdmin.describeGroup("described", bootstrapServers: self.broker.bootstrapServers))?.members.isEmpty ?? false
        }
    }

    /// A member that stops after its first batch closes while the records it fetched ahead
    /// still wait in its queue. Closing serves them (and drops them) with the group's last
    /// callbacks; serving them as callbacks only once aborted the process inside librdkafka.
    /// Each next member resumes exactly where the previous one's store stopped.
    func testClosingWithFetchedRecordsStillQueuedLeavesTheGroupAndTheNextMemberResumes() async throws {
        try await KafkaAdmin.createTopics([("shared", 1)], bootstrapServers: broker.bootstrapServers)
        let producer = try KafkaProducer.make(broker)
        let padding = String(repeating: "p", count: 400)
        _ = try await producer.send(KafkaTestSupport.records(topic: "shared", count: 20_000, prefix: padding))
        await producer.shutdown()
        let partition = TopicPartition(topic: "shared", partition: 0)
        let store = Store()
        var firstOffsets: [Int64] = []
        for round in 0..<4 {
            let name = "m\(round)"
            let member = try member(name, store: store, group: "stop-early")
            for try await batch in member.batches() {
                firstOffsets.append(batch[0].offset)
                store.record(batch, by: name)
                break
            }
            await member.close()
            XCTAssertEqual(store.revoked[name], [partition], "closing ran the revocation hook")
            XCTAssertEqual(member.assignment, [])
        }
        let read = store.seen.values.reduce(into: Set<String>()) { $0.formUnion($1) }
        let next = store.startOffsets([partition])[partition] ?? 0
        XCTAssertEqual(firstOffsets.first, 0)
        XCTAssertEqual(read, Set((0..<next).map { "0/\($0)" }), "each member resumed where the last one stopped: \(firstOffsets)")
        XCTAssertEqual(firstOffsets.count, 4)
    }
}
