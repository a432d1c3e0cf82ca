import Contracts
import Foundation
import Projections

/// How the processor applies one command type: what it needs loaded and what it changes. A handler decides in memory, from `BatchState` and the command alone —
/// never the clock — so that a replay of the same log decides the same
/// (docs/ARCHITECTURE.md#state-is-a-function-of-the-log).
///
/// A new command type is a `Command` in Contracts, one handler, and one line in
/// `HandlerRegistry.standard`.
package protocol CommandHandler: Sendable {
    associatedtype Handled: Command
    /// Adds the rows `command` needs to decide its outcome to the batch's one read.
    func addNeeds(of command: Handled, to query: inout StateQuery)
    /// The same, for a command of app part `part`: what rows kept per part a command needs
    /// (a send's held pushes). By default, `addNeeds(of:to:)`.
    func addNeeds(of command: Handled, part: Int, to query: inout StateQuery)
    /// Decides the outcome of `command` and records its effects in `state`.
    func apply(_ command: Handled, _ context: CommandContext, to state: inout BatchState) -> HandlerResult
}

extension CommandHandler {
    package func addNeeds(of command: Handled, part: Int, to query: inout StateQuery) {
        addNeeds(of: command, to: &query)
    }
}

/// The envelope facts a handler may use besides the payload.
package struct CommandContext: Sendable {
    /// The command's id (the envelope's `id`): seeds ids derived from the command.
    package var id: UUID
    /// The command's time (the envelope's `at`): every time a handler records.
    package var at: Date
    /// The part of its app the command is for (`AppParts`): a handler decides from the rows of
    /// that part only.
    package var part: Int = 0
    /// The store refused this command's writes for good; the handler records the failure it
    /// can (a registration becomes `FailedToStoreDevice`) instead of the effects.
    package var storeFailed = false

    package init(id: UUID = UUID(), at: Date, part: Int = 0, storeFailed: Bool = false) {
        self.id = id
        self.at = at
        self.part = part
        self.storeFailed = storeFailed
    }
}

/// What a handler did with a command, for metrics and logs.
package enum HandlerResult: Equatable {
    case applied
    /// Not applied, by rule (e.g. an invalid API token); the reason is a metric label.
    case rejected(String)
}
