import ArgumentParser
import Foundation
import Projections
import ProjectionStores

/// `rebuild`: the one definition of the rebuild command, its options and its output, shared
/// by `pushline-processor rebuild` and the admin CLI's `pushline rebuild`.
public struct RebuildCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract: "Build the projections anew into a new store, from the changelog or the command topics, then switch over to it.",
        discussion: """
            By default the store is restored from the changelog topic: every commit the live \
            processors made, written again as it is, without deciding anything again. With \
            --from commands the command topics are replayed instead, in the processors' event order, \
            through the processor's own applier (for a store from before changelogs, or after a change \
            of the handlers). A progress line (done/total, rate, ETA) goes to standard error. Outbound \
            records and webhooks are not sent again: restored and replayed outbox jobs are stored as \
            `replayed`. (`pushline rebuild` and `pushline-processor rebuild` are the same command.)

            Switching a running stack over (the old store keeps serving reads meanwhile):
              1. pushline-processor rebuild --store NEW --previous OLD
                 (builds up to OLD's offsets; repeat it to catch up, it resumes)
              2. stop the processors that use OLD (ingest keeps accepting), then
                 pushline-processor rebuild --store NEW --previous OLD --switch
                 (takes in the last records, copies OLD's outbox with its delivery progress)
              3. start the processors and ingest with PUSHLINE_STORE=NEW.
            Without --previous (the old store is lost), NEW must be empty and is built up to the \
            current end of the changelog (or of the command topics).
            """
    )

    @OptionGroup public var common: ProcessorOptions
    @Option(help: "Where the state comes from: changelog (restore every commit as it was) or commands (decide the command topics again).")
    public var from: Rebuild.Source = .changelog
    @Option(help: "The store the stack serves from now; its offsets are the targets.") public var previous: String?
    @Flag(name: .customLong("switch"), help: "Step 2: the processors on --previous are stopped; finish and carry its outbox over.")
    public var switchOver = false
    @Flag(help: "Take turns with other rebuilds into the same store, all started with --join: one applies, the others stand by.")
    public var join = false
    @Flag(help: "Write no progress lines.") public var quiet = false
    @Option(help: "Records applied in one store transaction at most (1...100000).") public var batch = Rebuild.Options.defaultBatchSize

    public init() {}

    public func validate() throws {
        let sizes = ProcessorConfiguration.batchSizes
        guard sizes.contains(batch) else {
            throw ValidationError("--batch must be between \(sizes.lowerBound) and \(sizes.upperBound), not \(batch)")
        }
    }

    public func run() async throws {
        let (configuration, logger) = try common.bootstrap()
        logger.info("rebuilding", metadata: ["brokers": "\(configuration.shared.brokers)", "store": "\(configuration.shared.storeForLogs)",
                                             "previous": "\(previous.map(ProjectionStoreFactory.redacted) ?? "-")", "switch": "\(switchOver)"])
        let options = Rebuild.Options(source: from, previous: previous, switchOver: switchOver, join: join, progressInterval: quiet ? nil : .seconds(1),
                                      batchSize: batch)
        let summary = try await Rebuild.run(configuration: configuration, options: options, logger: logger)
        switch from {
        case .changelog:
            logger.info("rebuild finished", metadata: [
                "source": "changelog", "entries": "\(summary.changelogEntries)",
                "position": "\(summary.changelogPosition?.description ?? "-")", "outbox_carried": "\(summary.outboxCarried)",
            ])
        case .commands:
            logger.info("rebuild finished", metadata: [
                "source": "commands", "records": "\(summary.records.values.reduce(0, +))",
                "outbound_not_republished": "\(summary.outboundNotRepublished)", "outbox_carried": "\(summary.outboxCarried)",
                "records_left_for_the_processors": "\(summary.waiting)",
            ])
        }
        if switchOver {
            print("switched: start the processors and ingest with PUSHLINE_STORE=\(configuration.shared.storeForLogs)")
        }
    }
}

extension Rebuild.Source: ExpressibleByArgument {}
