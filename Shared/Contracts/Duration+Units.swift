extension Duration {
    /// The duration in seconds, fraction included.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// Whole nanoseconds, truncated toward zero.
    public var inNanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }

    /// Whole milliseconds, truncated toward zero.
    public var inMilliseconds: Int64 { inNanoseconds / 1_000_000 }
}
