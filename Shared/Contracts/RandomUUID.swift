import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

extension UUID {
    /// A random (version 4) UUID from the system random generator.
    ///
    /// Foundation's `UUID()` on Linux opens `/dev/urandom` on every call; ingest makes two
    /// per command, so on the hot path that file open was a tenth of the CPU time. The bytes
    /// come from `RandomBytes`, which asks the kernel for many UUIDs' worth at a time.
    public static func random() -> UUID {
        var bytes = RandomBytes.shared.next16()
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = (raw[6] & 0x0f) | 0x40  // version 4
            raw[8] = (raw[8] & 0x3f) | 0x80  // RFC 4122 variant
            return UUID(uuid: raw.load(as: uuid_t.self))
        }
    }
}

/// The system's random bytes (glibc's `arc4random_buf`, from `getrandom(2)`), fetched 4 KiB at a
/// time: a system call per 256 UUIDs instead of two per UUID (`SystemRandomNumberGenerator` makes
/// one per 8 bytes), which on the batch route was 6% of ingest's CPU.
final class RandomBytes: Sendable {
    static let shared = RandomBytes()

    private static let words = 512
    private let pool = Mutex<(words: [UInt64], next: Int)>(([], 0))

    /// 16 random bytes, each handed out once.
    func next16() -> (UInt64, UInt64) {
        pool.withLock { pool in
            if pool.next + 2 > pool.words.count {
                pool.words = Self.fill()
                pool.next = 0
            }
            defer { pool.next += 2 }
            return (pool.words[pool.next], pool.words[pool.next + 1])
        }
    }

    private static func fill() -> [UInt64] {
        var words = [UInt64](repeating: 0, count: Self.words)
        #if canImport(Glibc)
        // glibc's arc4random_buf reads the kernel's generator (getrandom) and cannot fail.
        words.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
        #else
        var generator = SystemRandomNumberGenerator()
        for i in words.indices { words[i] = generator.next() }
        #endif
        return words
    }
}
