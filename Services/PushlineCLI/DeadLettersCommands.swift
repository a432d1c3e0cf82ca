import ArgumentParser
import Foundation
import Processor
import Projections

/// `pushline dead-letters list|reapply`: the records the store refused for good.
struct DeadLetters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters",
        abstract: "List the records the projection store refused for good, or apply one again.",
        discussion: """
            A command record that the store refuses for a reason retrying cannot change (a value the \
            database will not hold, a constraint) is set aside as a dead letter, with its partition, \
            offset, type, the database's reason and the ingest request id, and its partition moves on \
            (pushline_processor_dead_letters_total counts them). An unavailable store or broker is \
            waited for instead and never produces dead letters.

            Reads the processor's configuration: PUSHLINE_STORE, PUSHLINE_KAFKA_BROKERS (reapply \
            publishes the command's outbound records), PUSHLINE_TOPIC_PREFIX, PUSHLINE_KAFKA_PROPERTIES \
            (or --store, --brokers).

            Examples:
              pushline dead-letters list
              pushline dead-letters reapply pushline.commands.notification:3:1841
            """,
        subcommands: [List.self, Reapply.self],
        defaultSubcommand: List.self
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the dead letters, in partition and offset order.")

        @OptionGroup var processor: ProcessorOptions
        @Flag(help: "Print JSON (for scripts) instead of a table.") var json = false

        /// One dead letter in `--json` (the record's value is left out: it can be large).
        struct Entry: Encodable {
            var id: String
            var topic: String
            var partition: Int32
            var offset: Int64
            var type: String?
            var reason: String
            var requestId: String?
            var recordedAt: Date
            var bytes: Int
        }

        func run() async throws {
            let (configuration, logger) = try processor.bootstrap(label: "pushline.cli", defaultLevel: .warning)
            let letters = try await DeadLetterOperations.list(configuration: configuration, logger: logger)
            if json {
                return try Output.json(letters.map {
                    Entry(id: $0.key.description, topic: $0.partition.topic, partition: $0.partition.partition, offset: $0.offset,
                          type: $0.type, reason: $0.reason, requestId: $0.requestId, recordedAt: $0.recordedAt, bytes: $0.value.count)
                })
            }
            guard !letters.isEmpty else { return print("no dead letters") }
            let time = ISO8601DateFormatter()
            print(Output.table(["ID", "TYPE", "REQUEST", "RECORDED", "REASON"], letters.map { letter in
                [letter.key.description, letter.type ?? "-", letter.requestId ?? "-", time.string(from: letter.recordedAt),
                 String(letter.reason.prefix(120))]
            }))
            print("\(letters.count) dead letter\(letters.count == 1 ? "" : "s"); apply one again with: pushline dead-letters reapply ID")
        }
    }

    struct Reapply: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Apply one dead letter again, live, and remove it if the store takes it.",
            discussion: """
                The command is decided against the store as it is now, its outbound records are published \
                and its webhooks enqueued, and the dead letter is removed in the same transaction. If the \
                store still refuses it, the error is printed and the dead letter stays.
                """
        )

        @OptionGroup var processor: ProcessorOptions
        @Argument(help: "The dead letter, as `list` shows it: TOPIC:PARTITION:OFFSET.") var id: String
        @Flag(help: "Print JSON (for scripts) instead of a line.") var json = false

        struct Answer: Encodable {
            var id: String
            var command: String
            var mutations: Int
            var outbound: Int
        }

        func run() async throws {
            guard let key = DeadLetterKey(id) else { throw ValidationError("'\(id)' is not TOPIC:PARTITION:OFFSET") }
            let (configuration, logger) = try processor.bootstrap(label: "pushline.cli", defaultLevel: .warning)
            do {
                let done = try await DeadLetterOperations.reapply(key, configuration: configuration, logger: logger)
                if json { return try Output.json(Answer(id: id, command: done.command, mutations: done.mutations, outbound: done.outbound)) }
                print("applied \(id) (\(done.command)): \(done.mutations) change\(done.mutations == 1 ? "" : "s"), \(done.outbound) outbound record\(done.outbound == 1 ? "" : "s"); dead letter removed")
            } catch let error as DeadLetterOperations.NotFound {
                throw CLIError(error.description)
            } catch let error as ProjectionStoreError {
                throw CLIError("the store refused \(id) again: \(error)")
            }
        }
    }
}
