import Contracts
import Projections

/// A command whose part the processor's `PUSHLINE_APP_PARTS` cannot hold: a part past the count,
/// or a command about a device that names another part than its token's. The log was split into
/// another number of parts than this processor was told (docs/ARCHITECTURE.md#one-app-in-parts),
/// and deciding it would read rows of another part: the processor stops rather than refuse the
/// command or decide it wrongly.
struct PartMismatch: Error, CustomStringConvertible {
    var partition: PartitionKey
    var offset: Int64
    var part: Int
    var parts: AppParts

    /// Throws for the first command of `records` that does not fit `parts`.
    static func check(_ records: [DecodedRecord], parts: AppParts) throws {
        for record in records {
            guard case .command(let c) = record.outcome else { continue }
            let fits = c.part < parts.count
                && (parts.count == 1 || (c.payload as? any DeviceScopedCommand).map { parts.part(ofToken: $0.deviceToken) == c.part } ?? true)
            guard fits else { throw PartMismatch(partition: record.partition, offset: record.offset, part: c.part, parts: parts) }
        }
    }

    var description: String {
        "the command at \(partition) offset \(offset) is for part \(part) of its app, which does not fit apps in \(parts) "
            + "(PUSHLINE_APP_PARTS=\(parts.count)): the log was written with apps in another number of parts. Run every processor "
            + "and rebuild of this log with the log's PUSHLINE_APP_PARTS (docs/ARCHITECTURE.md#one-app-in-parts)."
    }
}
