import Foundation
import WireCodec

/// Record keys.
public enum RecordKey {
    public static func app(_ app: UUID) -> String { app.lowercasedString }
    /// A named admin token's issue and revocation share a key, so they stay in order.
    public static func adminToken(_ id: UUID) -> String { "admin-token:\(id.lowercasedString)" }

    /// The partition a key lands in, of a topic of `partitions` partitions: librdkafka's default
    /// partitioner (`consistent_random`), the CRC-32 of the key's bytes modulo the count.
    public static func partition(of key: String, partitions: Int) -> Int32 {
        Int32(CRC32.checksum(key.utf8) % UInt32(max(1, partitions)))
    }
}
