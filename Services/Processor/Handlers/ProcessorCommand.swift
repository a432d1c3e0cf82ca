import Contracts
import Foundation
import Projections
import WireCodec

/// A decoded command with the envelope facts the handlers need, and the handler of its type.
/// Handlers use the envelope's `id` and `at` rather than the clock, so a replay decides exactly
/// what the first run did.
package struct ProcessorCommand: Sendable {
    package var id: UUID
    package var at: Date
    /// The part of its app the command is for (the envelope's `part`; `AppParts`).
    package var part: Int
    package let payload: any Command
    fileprivate let handler: any RegisteredHandler
    /// The app the command is about; nil for the few that are about none (admin tokens).
    package let app: UUID?

    package var type: CommandType { Swift.type(of: payload).type }

    /// Adds the rows this command needs to decide its outcome.
    package func addNeeds(to query: inout StateQuery) {
        handler.addNeeds(of: payload, part: part, to: &query)
    }

    /// Runs the command's handler; `storeFailed`: see `CommandContext.storeFailed`. An admin
    /// command, applied or rejected, also gets its audit trail entry (`AuditTrail`).
    package func apply(to state: inout BatchState, storeFailed: Bool = false) -> HandlerResult {
        let result = handler.apply(payload, CommandContext(id: id, at: at, part: part, storeFailed: storeFailed), to: &state)
        // An app in parts gets its admin commands once in every part; the trail keeps part 0's.
        if let audited = payload as? any AuditedCommand, part == 0 {
            state.record(AuditTrail.entry(audited, id: id, at: at, result: result))
        }
        return result
    }
}

/// The handler of every command type the processor applies, by type: the one table to extend
/// when a command type is added.
package struct HandlerRegistry: Sendable {
    private var handlers: [CommandType: any RegisteredHandler] = [:]

    /// The processor's handlers. `verifier` checks registrations' tokens; `rules` set the
    /// registrations' per-user and per-app caps, the sends' idempotency window, the acks' badge
    /// limit and the message-id keys.
    package static func standard(verifier: any DeviceTokenVerifier = DecisionRules.defaultVerifier,
                         rules: DecisionRules = .default) -> HandlerRegistry {
        var registry = HandlerRegistry()
        registry.register(AppCreatedHandler())
        registry.register(ApiTokenIssuedHandler())
        registry.register(ApiTokenRevokedHandler())
        registry.register(AppSettingsChangedHandler())
        registry.register(PushCredentialsSetHandler())
        registry.register(PushCredentialsRemovedHandler())
        registry.register(UserIdentityChangedHandler())
        registry.register(RegistrationHandler(verifier: verifier, maxDevicesPerUser: rules.maxDevicesPerUser,
                                              maxUsersPerPart: rules.maxUsersPerPart))
        registry.register(CleanupHandler())
        registry.register(DeviceChangeHandler())
        registry.register(NotificationHandler(rules: rules))
        registry.register(CancelHandler())
        registry.register(UserSettingsHandler())
        registry.register(AckHandler(maxBadgeUpdatesPerMinute: rules.maxBadgeUpdatesPerMinute))
        registry.register(TrackingHandler(messageIdKeys: rules.messageIdKeys))
        registry.register(DeliveryResultHandler(messageIdKeys: rules.messageIdKeys))
        registry.register(AdminTokenIssuedHandler())
        registry.register(AdminTokenRevokedHandler())
        return registry
    }

    /// Adds `handler` for its command type; a type has one handler.
    package mutating func register<H: CommandHandler>(_ handler: H) {
        precondition(handlers[H.Handled.type] == nil, "two handlers for \(H.Handled.type.rawValue)")
        handlers[H.Handled.type] = Registered(handler: handler)
    }

    /// The command types with a handler.
    package var types: Set<CommandType> { Set(handlers.keys) }

    /// The command types whose commands get an audit trail entry (`AuditedCommand`).
    package var auditedTypes: Set<CommandType> { Set(handlers.filter { $0.value.isAudited }.keys) }

    fileprivate subscript(type: CommandType) -> (any RegisteredHandler)? { handlers[type] }
}

/// Turns consumed records into commands. Unknown types and versions are reported, never fatal.
package struct CommandDecoder {
    package enum Outcome {
        case command(ProcessorCommand)
        case unknownType(String)
        case unsupportedVersion(type: String, version: Int)
        case malformed(type: String, error: String)
        /// A `ProgressMark`: no command, only its partition's event time.
        case progressMark(at: Date)

        /// The envelope's time, when the record decoded.
        package var at: Date? {
            switch self {
            case .command(let c): c.at
            case .progressMark(let at): at
            case .unknownType, .unsupportedVersion, .malformed: nil
            }
        }

        /// One line for an operator: the command's type and id, or why it could not be read.
        package var summary: String {
            switch self {
            case .command(let c): "\(c.type.rawValue) \(c.id.lowercasedString)"
            case .unknownType(let t): "unknown type \(t)"
            case .unsupportedVersion(let t, let v): "\(t) of unsupported version \(v)"
            case .malformed(let t, let e): "malformed \(t): \(e)"
            case .progressMark: "progress mark"
            }
        }
    }

    private let registry: HandlerRegistry
    private let decoder = WireJSON.decoder()

    package init(registry: HandlerRegistry = .standard()) {
        self.registry = registry
    }

    package func decode(type typeName: String?, version: Int?, value: Data) -> Outcome {
        if typeName == ProgressMark.type {
            guard let at = ProgressMark.at(in: value) else { return .malformed(type: ProgressMark.type, error: "not a progress mark") }
            return .progressMark(at: at)
        }
        guard let typeName, let type = CommandType(rawValue: typeName), let handler = registry[type] else {
            return .unknownType(typeName ?? "<none>")
        }
        do {
            return try handler.decode(version: version ?? 1, value: value, decoder: decoder)
        } catch {
            return .malformed(type: typeName, error: String(describing: error))
        }
    }
}

/// A handler with its command type erased, so that one table holds them all.
private protocol RegisteredHandler: Sendable {
    var isAudited: Bool { get }
    func decode(version: Int, value: Data, decoder: JSONDecoder) throws -> CommandDecoder.Outcome
    func addNeeds(of command: any Command, part: Int, to query: inout StateQuery)
    func apply(_ command: any Command, _ context: CommandContext, to state: inout BatchState) -> HandlerResult
}

private struct Registered<H: CommandHandler>: RegisteredHandler {
    let handler: H

    var isAudited: Bool { H.Handled.self is any AuditedCommand.Type }

    func addNeeds(of command: any Command, part: Int, to query: inout StateQuery) {
        handler.addNeeds(of: command as! H.Handled, part: part, to: &query)
    }

    func apply(_ command: any Command, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        handler.apply(command as! H.Handled, context, to: &state)
    }

    private static var escapedNUL: DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription:
            "a string holds the NUL character (\\u0000), which no projection store can hold"))
    }

    func decode(version: Int, value: Data, decoder: JSONDecoder) throws -> CommandDecoder.Outcome {
        typealias C = H.Handled
        guard version <= C.version else { return .unsupportedVersion(type: C.type.rawValue, version: version) }
        // The hottest commands are read by hand; whatever that reading is unsure of, JSONDecoder decides.
        // (It takes no escapes, so only the records it leaves to JSONDecoder need the NUL check.)
        let envelope: Envelope<C>
        if let fast = FastEnvelope.decode(C.self, from: value) {
            envelope = fast
        } else {
            guard !value.withUnsafeBytes({ JSONEscapes.containNUL($0) }) else { throw Self.escapedNUL }
            envelope = try decoder.decode(Envelope<C>.self, from: value)
        }
        guard envelope.v <= C.version else { return .unsupportedVersion(type: C.type.rawValue, version: envelope.v) }
        guard envelope.appPart >= 0 else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a negative part")) }
        return .command(ProcessorCommand(id: envelope.id, at: envelope.at, part: envelope.appPart, payload: envelope.payload, handler: self,
                                         app: (envelope.payload as? any AppScopedCommand)?.mobileAppId))
    }
}
