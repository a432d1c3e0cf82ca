import Foundation

/// A command ready to produce: topic, key, headers and the encoded envelope.
public struct EncodedCommand: Sendable {
    public var topic: String
    public var key: String
    public var type: String
    public var version: Int
    public var value: Data
    /// The envelope's `at`.
    public var at: Date
    /// The part of its app the command is for (`AppParts`): 0 unless the app is split.
    public var part: Int
    /// The parts its app is split into.
    public var parts: AppParts

    /// The records of `command`: one for each part of its app it concerns
    /// (`AppScopedCommand.split`), sharing the command's id; one record, part 0, for a command
    /// about no app.
    public static func parts<C: Command>(of command: C, parts: AppParts, topics: Topics, id: UUID = .random(), at: Date = Date(),
                                         encoder: JSONEncoder) throws -> [EncodedCommand] {
        guard parts.count > 1, let scoped = command as? any AppScopedCommand else {
            return [try EncodedCommand(command, topics: topics, id: id, at: at, encoder: encoder)]
        }
        return try Self.split(scoped, parts: parts, topics: topics, id: id, at: at, encoder: encoder)
    }

    private static func split<C: AppScopedCommand>(_ command: C, parts: AppParts, topics: Topics, id: UUID, at: Date,
                                                   encoder: JSONEncoder) throws -> [EncodedCommand] {
        try command.split(into: parts).map {
            try EncodedCommand($0.command, topics: topics, id: id, at: at, part: $0.part, parts: parts, encoder: encoder)
        }
    }

    /// Wraps `command` in an envelope and encodes it.
    public init<C: Command>(_ command: C, topics: Topics, id: UUID = .random(), at: Date = Date(), part: Int = 0,
                            parts: AppParts = .one, encoder: JSONEncoder) throws {
        self.at = at
        self.part = part
        self.parts = parts
        self.topic = C.topic.name(in: topics)
        self.key = command.recordKey
        self.type = C.type.rawValue
        self.version = C.version
        if let command = command as? any HandWrittenCommand {
            self.value = command.envelope(id: id, at: at, part: part)
        } else {
            self.value = try encoder.encode(Envelope(v: C.version, type: C.type.rawValue, id: id, at: at, part: part, payload: command))
        }
    }

    /// The partition the command goes to, of a topic of `partitions` partitions: its key's
    /// (`RecordKey.partition`), moved on by its part (`AppParts.partition`).
    public func partition(partitions: Int) -> Int32 {
        parts.partition(key: key, part: part, partitions: partitions)
    }

    /// The partition a producer must be told for this record: nil for part 0, whose key leads the
    /// producer's partitioner to it, as before parts; else `partition(partitions:)`.
    public func assignedPartition(partitions: Int) -> Int32? {
        part == 0 ? nil : partition(partitions: partitions)
    }
}
