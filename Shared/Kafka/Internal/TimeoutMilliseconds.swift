extension Duration {
    /// Whole milliseconds for librdkafka's `int timeout_ms` arguments, clamped to
    /// `0...Int32.max` so huge or negative durations cannot overflow.
    var timeoutMilliseconds: Int32 {
        let (seconds, attoseconds) = components
        let millis = seconds.multipliedReportingOverflow(by: 1000)
        guard !millis.overflow else { return seconds < 0 ? 0 : Int32.max }
        let total = millis.partialValue + attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(0, total))
    }
}
