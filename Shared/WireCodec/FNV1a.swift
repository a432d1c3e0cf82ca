/// FNV-1a, 64 bits: a small hash that is the same in every process and on every run (Swift's
/// `Hasher` is seeded per process), for names and keys that must agree across processes.
public enum FNV1a {
    public static func hash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return hash
    }
}
