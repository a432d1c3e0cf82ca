import ArgumentParser
import Processor

/// `pushline`: the operator's command line. Apps and API tokens through the running ingest's
/// admin API; partition offsets and lag straight from the broker and the projection store; and
/// the processor's rebuild. Errors are one line on standard error and exit status 1 (usage
/// errors: 64).
@main
struct Pushline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushline",
        abstract: "Operate a Pushline deployment: apps and API tokens, topic offsets and lag, rebuilds.",
        discussion: """
            Apps and tokens go through the admin API of a running ingest (--ingest-url or \
            PUSHLINE_INGEST_URL, default http://127.0.0.1:8080; admin token from PUSHLINE_ADMIN_TOKEN). \
            Admin changes are Kafka commands: an accepted change shows in `apps show` once the \
            processor has applied it, usually within a second.

            `lag`, `rebuild` and `dump` read the processor's configuration (PUSHLINE_KAFKA_BROKERS, \
            PUSHLINE_STORE, PUSHLINE_TOPIC_PREFIX, PUSHLINE_KAFKA_PROPERTIES, …).

            Examples:
              export PUSHLINE_ADMIN_TOKEN=$(cat var/admin-token)
              pushline apps create --name "My App"
              pushline apps list
              pushline apps show $APP
              pushline apps set $APP --callback-url https://example.com/hook
              pushline tokens issue $APP --scope server
              pushline admin-tokens create alice
              pushline audit --app $APP
              pushline lag
              pushline rebuild --store sqlite:var/rebuilt.sqlite
              pushline dump --store sqlite:var/rebuilt.sqlite | diff <(pushline dump) -

            Exit status: 0 success, 1 failure (message on standard error), 64 usage error.
            """,
        subcommands: [Apps.self, Tokens.self, AdminTokens.self, Audit.self, Send.self, Scheduled.self, Users.self, Audiences.self, Devices.self, Lag.self, DeadLetters.self, RebuildCommand.self, Dump.self]
    )
}
