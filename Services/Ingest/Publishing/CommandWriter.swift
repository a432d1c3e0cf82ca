import Contracts
import Foundation
import Kafka
import Logging
import WireCodec

/// Turns the commands of one request into records and hands them to the `CommandPublisher` in
/// one call, so that a 2xx is only ever answered after the broker acknowledged all of them.
///
/// Any failure of the publisher becomes `IngestError.unavailable` (503 + Retry-After): the
/// client cannot tell what was written, so it must retry, and the processor tolerates repeats.
struct CommandWriter: Sendable {
    let publisher: any CommandPublisher
    let topics: Topics
    let metrics: IngestMetrics
    /// The parts every app is split into: a command is written to each part it concerns
    /// (docs/ARCHITECTURE.md#one-app-in-parts).
    var parts: AppParts = .one

    /// A JSON encoder for the commands of one request.
    ///
    /// One per request rather than one shared: `JSONEncoder` is a class whose sharing across
    /// concurrent tasks is only safe in some Foundation versions, and making one costs a small
    /// allocation next to encoding and a broker round trip. A batch shares its request's encoder.
    static func makeEncoder() -> JSONEncoder { WireJSON.encoder() }

    /// The command's records: one per part of its app it concerns, one with apps in one part.
    func encode<C: Command>(_ command: C, encoder: JSONEncoder) throws -> [EncodedCommand] {
        try EncodedCommand.parts(of: command, parts: parts, topics: topics, encoder: encoder)
    }

    /// A request that can never be written: 413, so that a client does not retry it.
    private static func tooLarge(_ message: String) -> IngestError {
        .rejected(.contentTooLarge, Problem(error: message, field: "body", code: .commandTooLarge))
    }

    /// Publishes the request's one command and waits for the broker's acknowledgement.
    @discardableResult
    func publish<C: Command>(_ command: C, context: IngestRequestContext) async throws -> [KafkaDeliveryReport] {
        try await publish(encode(command, encoder: Self.makeEncoder()), context: context)
    }

    /// Publishes every command of the request together, waits for the broker's acknowledgement
    /// and returns where each one landed.
    @discardableResult
    func publish(_ commands: [EncodedCommand], context: IngestRequestContext) async throws -> [KafkaDeliveryReport] {
        for command in commands where command.value.count > FieldLimits.commandBytes {
            throw Self.tooLarge("the request makes a command of \(command.value.count) bytes; at most \(FieldLimits.commandBytes) fit one record")
        }
        let start = ContinuousClock.now
        let positions: [KafkaDeliveryReport]
        do {
            positions = try await publisher.publish(commands, requestId: context.requestId)
        } catch let error as RecordTooLarge {
            metrics.publishDuration.record(duration: ContinuousClock.now - start)
            context.logger.warning("the broker refused a record as too large; answering 413", metadata: ["reason": "\(error.reason)"])
            throw Self.tooLarge("the broker refused the request's command as too large")
        } catch {
            metrics.publishDuration.record(duration: ContinuousClock.now - start)
            metrics.publishFailures.increment()
            let reason = (error as? PublishUnavailable)?.reason ?? String(describing: error)
            context.logger.warning("publish failed; answering 503", metadata: [
                "commands": "\(commands.count)", "reason": "\(reason)",
            ])
            throw IngestError.unavailable(reason)
        }
        metrics.publishDuration.record(duration: ContinuousClock.now - start)
        metrics.countPublished(commands)
        return positions
    }
}
