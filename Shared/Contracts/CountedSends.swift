import Crypto
import Foundation

/// A send to an audience as an app part's frequency caps count it (docs/API.md#frequency-caps):
/// once, with the users it reached, rather than once on each of their rows. A user's pushes in a
/// window are those on their own row (`CappedPushes`) and the counted sends that reached them.
public struct CountedSend: Sendable, Equatable {
    /// Its time (milliseconds), its name (as `CappedPushes` names a delivery) and its category.
    public let at: Int64
    public let delivery: String
    public let category: String?
    /// The `UserDigest`s of the users it reached, sorted.
    public let users: [UInt64]

    public init(at: Int64, delivery: String, category: String?, users: [UInt64]) {
        (self.at, self.delivery, self.category, self.users) = (at, delivery, category, users)
    }

    /// Whether it reached the user of `digest`.
    public func reached(_ digest: UInt64) -> Bool {
        var (low, high) = (0, users.count)
        while low < high {
            let middle = (low + high) / 2
            if users[middle] < digest { low = middle + 1 } else { high = middle }
        }
        return low < users.count && users[low] == digest
    }

    /// Digests as stored: 8 bytes each, little-endian, in order.
    public static func bytes(_ users: [UInt64]) -> Data {
        var data = Data(count: users.count * 8)
        data.withUnsafeMutableBytes { raw in
            for (index, user) in users.enumerated() { raw.storeBytes(of: user.littleEndian, toByteOffset: index * 8, as: UInt64.self) }
        }
        return data
    }

    /// The digests of `bytes`; nil when they are not a whole number of digests.
    public static func users(_ bytes: Data) -> [UInt64]? {
        guard bytes.count % 8 == 0 else { return nil }
        return bytes.withUnsafeBytes { raw in
            (0..<bytes.count / 8).map { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)) }
        }
    }
}

/// A user id as a counted send keeps it: the first 8 bytes of its SHA-256. The same everywhere and
/// in every reading of the log; no one can choose an id whose digest is another user's.
public enum UserDigest {
    public static func of(_ userId: String) -> UInt64 {
        var hash = SHA256()
        var userId = userId
        userId.withUTF8 { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        return hash.finalize().withUnsafeBytes { UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self)) }
    }
}
