/// A look at JSON text for the one escape no projection store can hold.
public enum JSONEscapes {
    /// True when the JSON text escapes U+0000 (`\u0000`) in a string. An unescaped NUL byte is
    /// no JSON at all, and the decoder refuses it. PostgreSQL text cannot hold U+0000, so ingest
    /// refuses such requests and the processor skips such records (written around ingest) on
    /// every store alike.
    public static func containNUL(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i < bytes.count {
            guard bytes[i] == UInt8(ascii: "\\") else { i += 1; continue }
            // An escape: `\\` is one (so the next backslash starts another), `\uXXXX` names a code unit.
            if i + 5 < bytes.count, bytes[i + 1] == UInt8(ascii: "u"),
               bytes[i + 2] == UInt8(ascii: "0"), bytes[i + 3] == UInt8(ascii: "0"),
               bytes[i + 4] == UInt8(ascii: "0"), bytes[i + 5] == UInt8(ascii: "0") {
                return true
            }
            i += 2
        }
        return false
    }
}
