import ArgumentParser
import Foundation
import Processor

/// `pushline dump`: the projected tables as text, to compare two stores.
struct Dump: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print the projection store's tables as text, one line a row, to compare two stores.",
        discussion: """
            Every table the processor projects (apps, tokens, devices, statuses, pending notifications, acks, \
            deliveries, outcomes, tracking, outbox jobs without their delivery progress, admin tokens, audit log, \
            idempotency keys), rows in key order; offsets are left out. SQLite and PostgreSQL print the same text \
            for the same content, so a rebuild can be compared with the live store by `diff`. Reads only.

            --unpublished-changelog prints instead how many changelog entries the store committed and has not \
            published yet: a rebuild from the changelog holds what was published, so compare once it is 0.

            Reads PUSHLINE_STORE (or --store).

            Examples:
              pushline dump > live.txt
              pushline rebuild --store sqlite:var/rebuilt.sqlite
              pushline dump --store sqlite:var/rebuilt.sqlite | diff live.txt -
            """
    )

    @OptionGroup var processor: ProcessorOptions
    @Flag(help: "Print the number of changelog entries not published yet instead of the tables.") var unpublishedChangelog = false

    func run() async throws {
        let (configuration, logger) = try processor.bootstrap(label: "pushline.cli", defaultLevel: .warning)
        if unpublishedChangelog {
            return print(try await StoreDump.unpublishedChangelogEntries(of: configuration.shared.store, logger: logger))
        }
        let text = try await StoreDump.text(of: configuration.shared.store, logger: logger)
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}
