import Contracts
import Foundation
import OutboundRendering
import Projections

/// A command whose message ids this processor cannot make or check: a send naming a key
/// (`NotificationRequested.messageKeyId`) its keyring does not hold, or a keyed tracking report
/// (`TrackingReported.keyedIds`) with no key at all. Ingest holds `PUSHLINE_SECRETS_KEY` and
/// this processor does not (or lacks the previous key a rotation left in the log). Sending
/// with other ids would break tracking, and counting a report without its key would misdecide
/// it, so the processor stops before the command, as for `PartMismatch`, and names the setting.
struct MessageKeyMissing: Error, CustomStringConvertible {
    var partition: PartitionKey
    var offset: Int64
    /// The key the command names; nil for a keyed report checked with no key.
    var keyId: String?

    /// Throws for the first command of `records` whose message-id key `keys` lacks.
    static func check(_ records: [DecodedRecord], keys: MessageIdKeys) throws {
        for record in records {
            guard case .command(let c) = record.outcome else { continue }
            if let send = c.payload as? NotificationRequested, let keyId = send.messageKeyId, keys.key(keyId) == nil {
                throw MessageKeyMissing(partition: record.partition, offset: record.offset, keyId: keyId)
            }
            if let report = c.payload as? TrackingReported, report.idsAreKeyed, keys.isEmpty {
                throw MessageKeyMissing(partition: record.partition, offset: record.offset, keyId: nil)
            }
        }
    }

    var description: String {
        let what = keyId.map { "a send whose message ids are made with key \($0)" } ?? "a tracking report of keyed message ids"
        return "the command at \(partition) offset \(offset) is \(what), which this processor does not hold: set "
            + "PUSHLINE_SECRETS_KEY (and PUSHLINE_SECRETS_PREVIOUS_KEYS with every earlier key the log names) as ingest has them "
            + "(docs/DEPLOYMENT.md#push-credentials-and-the-secrets-key)"
    }
}
