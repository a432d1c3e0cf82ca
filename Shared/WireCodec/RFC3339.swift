import Foundation

/// RFC 3339 timestamps in UTC with millisecond precision (`2026-11-22T10:00:00.123Z`).
///
/// Written and read by hand: every command carries one, and Foundation's ISO 8601 format
/// styles cost more than the rest of a command's encoding.
public enum RFC3339 {
    /// Rounds to the nearest millisecond, so that writing a date read from a string gives that
    /// string back (the nearest double to `.308` may lie just below it).
    public static func string(from date: Date) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        append(date, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Milliseconds since 1970, rounded as `string(from:)` rounds them.
    public static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// Appends the 24 bytes of `string(from: date)`.
    public static func append(_ date: Date, to out: inout [UInt8]) {
        let ms = milliseconds(date)
        var days = ms / 86_400_000
        var msOfDay = ms % 86_400_000
        if msOfDay < 0 { msOfDay += 86_400_000; days -= 1 }
        let (year, month, day) = civil(fromDays: days)
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: 24))
        func put(_ value: Int64, _ at: Int, _ width: Int) {
            var v = value
            for i in stride(from: start + at + width - 1, through: start + at, by: -1) {
                out[i] = UInt8(truncatingIfNeeded: 0x30 + v % 10)
                v /= 10
            }
        }
        put(year, 0, 4); out[start + 4] = 0x2d; put(month, 5, 2); out[start + 7] = 0x2d; put(day, 8, 2); out[start + 10] = 0x54
        put(msOfDay / 3_600_000, 11, 2); out[start + 13] = 0x3a; put(msOfDay / 60_000 % 60, 14, 2); out[start + 16] = 0x3a
        put(msOfDay / 1000 % 60, 17, 2); out[start + 19] = 0x2e; put(msOfDay % 1000, 20, 3); out[start + 23] = 0x5a
    }

    /// Reads `YYYY-MM-DDTHH:MM:SS[.fff…]Z` fast; any other RFC 3339 form (offsets) through Foundation.
    public static func date(from text: String) -> Date? {
        var text = text
        switch text.withUTF8(utcDate) {
        case .date(let date): return date
        case .invalid: return nil
        case .otherForm:
            if let d = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return d }
            return try? Date.ISO8601FormatStyle().parse(text)
        }
    }

    /// What the fast reading of `YYYY-MM-DDTHH:MM:SS[.fff…]Z` made of some UTF-8.
    enum UTCReading {
        case date(Date)
        /// That form, but not a valid one (a bad fraction).
        case invalid
        /// Another form (offsets, or not a date): Foundation's to judge.
        case otherForm
    }

    /// The fast part of `date(from:)`, on bytes: `WireReader` reads envelope dates without a `String`.
    static func utcDate(_ u: UnsafeBufferPointer<UInt8>) -> UTCReading {
        func num(_ at: Int, _ width: Int) -> Int64? {
            guard at + width <= u.count else { return nil }
            var v: Int64 = 0
            for b in u[at..<at + width] {
                guard b >= 0x30, b <= 0x39 else { return nil }
                v = v * 10 + Int64(b - 0x30)
            }
            return v
        }
        guard u.count >= 20, u.last == 0x5a, u[4] == 0x2d, u[7] == 0x2d, u[10] == 0x54 || u[10] == 0x74, u[13] == 0x3a, u[16] == 0x3a,
              let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2), let h = num(11, 2), let mi = num(14, 2), let s = num(17, 2),
              (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 61 else { return .otherForm }
        let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
        guard d <= (mo == 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].contains(mo) ? 30 : 31) else { return .invalid }
        let seconds = days(fromCivil: y, mo, d) * 86_400 + h * 3600 + mi * 60 + s
        guard u.count > 20 else { return .date(Date(timeIntervalSince1970: Double(seconds))) }
        let digits = u.count - 21
        guard u[19] == 0x2e, (1...9).contains(digits), let fraction = num(20, digits) else { return .invalid }
        var scale: Int64 = 1
        for _ in 0..<digits { scale *= 10 }
        // One division of exact integers: the nearest double to the written instant.
        return .date(Date(timeIntervalSince1970: Double(seconds * scale + fraction) / Double(scale)))
    }

    // Days since 1970-01-01 ⇄ proleptic Gregorian date (H. Hinnant's civil-date algorithms).
    private static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    private static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
