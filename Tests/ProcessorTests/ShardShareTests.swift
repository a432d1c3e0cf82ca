import Contracts
import Foundation
import Kafka
import Projections
import WireCodec
import XCTest
@testable import Handlers
@testable import Processor

/// Shards (docs/ARCHITECTURE.md#scale-out): which partitions a processor's lease partitions give
/// it, the refusal of a command outside its app's shard, and `/health` naming stalled shards.
final class ShardShareTests: XCTestCase {
    private let topics = Topics()

    private func partitions(_ counts: [Int]) -> [PartitionKey] {
        zip(topics.commandTopics, counts).flatMap { topic, count in (0..<Int32(count)).map { PartitionKey(topic: topic, partition: $0) } }
    }

    /// `pushline lag`'s group: each member's shards are those of its lease partitions; a member
    /// holding none stands by, and partitions of other topics in its assignment do not count.
    func testTheGroupsMembersGetTheShardsOfTheirLeasePartitions() {
        let lease = topics.processorLease
        func member(_ id: String, _ held: [Int32], other: [TopicPartition] = []) -> KafkaGroupMember {
            KafkaGroupMember(memberId: id, clientId: "pushline-processor-\(id)", host: "10.0.0.\(id)",
                             assignment: held.map { TopicPartition(topic: lease, partition: $0) } + other)
        }
        let description = KafkaGroupDescription(groupId: "g", state: "Stable", members: [
            member("1", [0, 2]), member("2", [1], other: [TopicPartition(topic: "elsewhere", partition: 3)]), member("3", []),
        ])
        let group = ConsumerLag.group(description, leaseTopic: lease, leasePartitions: 3, shards: Array(0..<7))
        XCTAssertEqual(group.group, "g")
        XCTAssertEqual(group.state, "Stable")
        XCTAssertEqual(group.assignment, "reported")
        XCTAssertEqual(group.processors.map(\.shards), [[0, 2, 3, 5, 6], [1, 4], []])
        XCTAssertEqual(group.processors.map(\.leasePartitions), [[0, 2], [1], []])
        XCTAssertEqual(group.processors.map(\.host), ["10.0.0.1", "10.0.0.2", "10.0.0.3"])
        let oneLease = ConsumerLag.group(KafkaGroupDescription(groupId: "g", state: "Stable", members: [member("1", [0]), member("2", [])]),
                                         leaseTopic: lease, leasePartitions: 1, shards: Array(0..<4))
        XCTAssertEqual(oneLease.processors.map(\.shards), [[0, 1, 2, 3], []], "a one-partition lease: one member holds every shard")
    }

    /// A coordinator that reports no assignment (Tansu): the lease partitions are derived as the
    /// range assignor gives them, members in member id order; client ids come from member ids.
    func testWithoutReportedAssignmentsTheSharesAreTheRangeAssignmentOfTheMembers() {
        XCTAssertEqual(ConsumerLag.rangeAssignment(members: ["b", "a", "c"], partitions: 8), ["a": [0, 1, 2], "b": [3, 4, 5], "c": [6, 7]])
        XCTAssertEqual(ConsumerLag.rangeAssignment(members: ["b", "a"], partitions: 1), ["a": [0], "b": []])
        XCTAssertEqual(ConsumerLag.rangeAssignment(members: [], partitions: 4), [:])
        let id = "pushline-processor-812-0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0"
        XCTAssertEqual(ConsumerLag.clientId(ofMember: id), "pushline-processor-812")
        XCTAssertEqual(ConsumerLag.clientId(ofMember: "plain"), "plain", "not a coordinator's id: as it is")
        let described = KafkaGroupDescription(groupId: "g", state: "Stable", members: [
            KafkaGroupMember(memberId: "pushline-processor-2-" + UUID().uuidString, clientId: "", host: "", assignment: []),
            KafkaGroupMember(memberId: "pushline-processor-1-" + UUID().uuidString, clientId: "", host: "", assignment: []),
        ])
        let group = ConsumerLag.group(described, leaseTopic: topics.processorLease, leasePartitions: 4, shards: Array(0..<4))
        XCTAssertEqual(group.assignment, "derived")
        XCTAssertEqual(group.processors.map(\.client), ["pushline-processor-2", "pushline-processor-1"])
        XCTAssertEqual(group.processors.map(\.shards), [[2, 3], [0, 1]])
    }

    func testALeasePartitionOwnsTheShardsOfItsResidueInEveryTopic() {
        let all = partitions([12, 12, 12, 12, 12])
        let share = ShardShare(held: [1, 3], leasePartitions: 4)
        let mine = share.partitions(of: all)
        XCTAssertEqual(Set(mine.map(\.partition)), [1, 3, 5, 7, 9, 11])
        XCTAssertEqual(mine.count, 6 * 5, "the same shards of every command topic")
        XCTAssertEqual(ShardShare.all.partitions(of: all), all)
        XCTAssertEqual(ShardShare(held: [0], leasePartitions: 1).partitions(of: all), all, "a one-partition lease: every shard")
        XCTAssertNil(ShardShare.all.checkedCounts(of: all), "every shard: any log is applied exactly")
        XCTAssertEqual(share.checkedCounts(of: all), Dictionary(uniqueKeysWithValues: topics.commandTopics.map { ($0, 12) }))

        // Shares of one lease split the partitions: each once.
        let shares = (0..<5).map { ShardShare(held: [Int32($0)], leasePartitions: 5).partitions(of: all) }
        XCTAssertEqual(shares.flatMap { $0 }.count, all.count)
        XCTAssertEqual(Set(shares.flatMap { $0 }), Set(all))
    }

    func testTopicsOfUnequalPartitionCountsAreOneShard() {
        let all = partitions([12, 12, 6, 12, 12])
        XCTAssertEqual(ShardShare(held: [0], leasePartitions: 3).partitions(of: all), all)
        XCTAssertEqual(ShardShare(held: [1, 2], leasePartitions: 3).partitions(of: all), [])
    }

    private func decoded<C: Command>(_ command: C, partition: Int32, part: Int = 0) throws -> DecodedRecord {
        let encoded = try EncodedCommand(command, topics: topics, at: Date(), part: part, encoder: WireJSON.encoder())
        let outcome = CommandDecoder().decode(type: encoded.type, version: encoded.version, value: encoded.value)
        return DecodedRecord(partition: PartitionKey(topic: encoded.topic, partition: partition), offset: 7, requestId: nil,
                             outcome: outcome, type: encoded.type, value: encoded.value, timestamp: nil, at: nil)
    }

    func testACommandOutsideItsAppsShardIsRefused() throws {
        let app = UUID()
        let command = DeviceCleanupRequested(orgId: UUID(), mobileAppId: app, userId: "u", deviceToken: nil, apiTokenHash: "h")
        let shard = RecordKey.partition(of: app.lowercasedString, partitions: 12)
        let counts = Dictionary(uniqueKeysWithValues: topics.commandTopics.map { ($0, 12) })

        XCTAssertNoThrow(try MisplacedCommand.check([try decoded(command, partition: shard)], partitions: counts, parts: .one))
        let elsewhere = (shard + 1) % 12
        XCTAssertThrowsError(try MisplacedCommand.check([try decoded(command, partition: elsewhere)], partitions: counts, parts: .one)) { error in
            let misplaced = error as? MisplacedCommand
            XCTAssertEqual(misplaced?.expected, shard)
            XCTAssertEqual(misplaced?.partition, PartitionKey(topic: topics.registration, partition: elsewhere))
            XCTAssertTrue("\(error)".contains("Apply it with one processor"), "\(error)")
        }
        // A progress mark is no command: it may be anywhere.
        let mark = DecodedRecord(partition: PartitionKey(topic: topics.registration, partition: elsewhere), offset: 8, requestId: nil,
                                 outcome: .progressMark(at: Date()), type: ProgressMark.type, value: Data(), timestamp: nil, at: 0)
        XCTAssertNoThrow(try MisplacedCommand.check([mark], partitions: counts, parts: .one))
    }

    /// Part p of an app in S parts is in the partition p × 12/S after its app's (`AppParts`),
    /// wrapping around.
    func testACommandOfAnAppsPartIsInThePartitionItsPartLeadsTo() throws {
        let app = UUID()
        let counts = Dictionary(uniqueKeysWithValues: topics.commandTopics.map { ($0, 12) })
        let shard = RecordKey.partition(of: app.lowercasedString, partitions: 12)
        let parts = AppParts(4)
        for part in [1, 2, 3] {
            let command = DeviceCleanupRequested(orgId: UUID(), mobileAppId: app, userId: "u", deviceToken: "t", apiTokenHash: "h")
            let expected = (shard + Int32(part * 3)) % 12
            let record = try decoded(command, partition: expected, part: part)
            guard case .command(let decoded) = record.outcome else { return XCTFail("\(record.outcome.summary)") }
            XCTAssertEqual(decoded.part, part)
            XCTAssertNoThrow(try MisplacedCommand.check([record], partitions: counts, parts: parts))
            XCTAssertThrowsError(try MisplacedCommand.check([try self.decoded(command, partition: shard, part: part)], partitions: counts,
                                                            parts: parts)) {
                XCTAssertEqual(($0 as? MisplacedCommand)?.expected, expected)
                XCTAssertTrue("\($0)".contains("part \(part)"), "\($0)")
            }
        }
    }

    /// A processor told another number of parts than the log's stops at the first command that
    /// shows it, rather than decide it against another part's rows.
    func testACommandThatDoesNotFitTheProcessorsPartsStopsIt() throws {
        let token = "a-token", app = UUID()
        let parts = AppParts(3)
        let tokenPart = parts.part(ofToken: token)
        let ack = NotificationAcknowledged(mobileAppId: app, notificationId: "n", deviceToken: token)
        let send = NotificationRequested(deliveryId: UUID(), mobileAppId: app, target: NotificationTarget(userIds: ["u"]),
                                         content: NotificationContent(title: "t"), managed: false, businessId: nil, tracking: true)
        XCTAssertNoThrow(try PartMismatch.check([try decoded(ack, partition: 0, part: tokenPart)], parts: parts))
        XCTAssertNoThrow(try PartMismatch.check([try decoded(send, partition: 0, part: 2)], parts: parts))
        XCTAssertNoThrow(try PartMismatch.check([try decoded(ack, partition: 0)], parts: .one))
        XCTAssertThrowsError(try PartMismatch.check([try decoded(ack, partition: 0, part: (tokenPart + 1) % 3)], parts: parts)) {
            XCTAssertTrue("\($0)".contains("PUSHLINE_APP_PARTS=3"), "\($0)")
        }
        XCTAssertThrowsError(try PartMismatch.check([try decoded(send, partition: 0, part: 3)], parts: parts))
        XCTAssertThrowsError(try PartMismatch.check([try decoded(send, partition: 0, part: 1)], parts: .one), "a split log, one part told")
    }

    func testHealthNamesTheShardsThatStall() {
        let stalled = Readiness.stalled([PartitionKey(topic: topics.registration, partition: 3),
                                         PartitionKey(topic: topics.notification, partition: 3),
                                         PartitionKey(topic: topics.tracking, partition: 7)])
        XCTAssertTrue(stalled.problem?.hasPrefix("no progress on shards 3, 7, whose partitions have records waiting") == true,
                      stalled.problem ?? "nil")
        XCTAssertTrue(Readiness.stalled([PartitionKey(topic: topics.admin, partition: 5)]).problem?.hasPrefix("no progress on shard 5,") == true)
    }
}
