import Foundation

/// A date and time on a wall clock, without a zone: `2026-12-01T09:00` (seconds optional). A
/// local-time send (`NotificationRequested.sendAtLocal`) goes out when each device's own zone
/// reads it (docs/API.md#local-time-sends).
public struct LocalDateTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int

    /// Parses `YYYY-MM-DDTHH:MM` or `YYYY-MM-DDTHH:MM:SS`: no zone, no fraction; nil otherwise.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 16 || bytes.count == 19 else { return nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            var value = 0
            for byte in bytes[from..<(from + count)] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"),
              bytes.count == 16 || bytes[16] == UInt8(ascii: ":"),
              let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
              let minute = number(14, 2), let second = bytes.count == 19 ? number(17, 2) : 0,
              year >= 1970, (1...12).contains(month), hour < 24, minute < 60, second < 60,
              (1...Self.days(inMonth: month, of: year)).contains(day) else { return nil }
        (self.year, self.month, self.day, self.hour, self.minute, self.second) = (year, month, day, hour, minute, second)
    }

    private static func days(inMonth month: Int, of year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// The canonical text, with seconds: `2026-12-01T09:00:00`.
    public var description: String {
        func pad(_ n: Int, _ width: Int) -> String {
            let digits = String(n)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2))"
    }

    public static func < (a: Self, b: Self) -> Bool { a.description < b.description }

    /// The instant this wall-clock time is in `zone`. A time a daylight-saving change skips is
    /// taken as the same time of the day's new offset (02:30 on a spring-forward night is 03:30);
    /// one it repeats, at its first occurrence.
    public func instant(in zone: TimeZone) -> Date {
        let utc = Date(timeIntervalSince1970: TimeInterval(Self.daysSince1970(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second))
        // The zone's offsets a day either side: the time is at one of them, or in the hour a
        // change skips between them.
        let before = zone.secondsFromGMT(for: utc.addingTimeInterval(-86_400))
        let after = zone.secondsFromGMT(for: utc.addingTimeInterval(86_400))
        let valid = Set([before, after]).filter { zone.secondsFromGMT(for: utc.addingTimeInterval(-TimeInterval($0))) == $0 }
        // Repeated: the first occurrence (the larger offset); skipped: read with the offset before.
        let offset = valid.max() ?? min(before, after)
        return utc.addingTimeInterval(-TimeInterval(offset))
    }

    /// The earliest and latest instants it is anywhere: UTC+14 and UTC−12.
    public var earliestInstant: Date { instant(in: TimeZone(secondsFromGMT: 14 * 3600)!) }
    public var latestInstant: Date { instant(in: TimeZone(secondsFromGMT: -12 * 3600)!) }

    /// Days from 1970-01-01 to the date (proleptic Gregorian).
    static func daysSince1970(_ y: Int, _ m: Int, _ d: Int) -> Int {
        let year = m <= 2 ? y - 1 : y
        let era = (year >= 0 ? year : year - 399) / 400
        let yoe = year - era * 400
        let mp = (m + 9) % 12
        let doy = (153 * mp + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

/// A daily window of wall-clock time, `22:00-08:00`, in which pushes are not shown: an app's
/// default and a user's own (docs/API.md#quiet-hours). It may cross midnight; a start equal to
/// its end is refused.
public struct QuietHours: Sendable, Hashable, CustomStringConvertible {
    /// Minutes after midnight.
    public let start: Int, end: Int

    public init?(start: Int, end: Int) {
        guard (0..<1440).contains(start), (0..<1440).contains(end), start != end else { return nil }
        (self.start, self.end) = (start, end)
    }

    /// Parses `HH:MM-HH:MM`; nil otherwise.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = Self.minutes(parts[0]), let end = Self.minutes(parts[1]) else { return nil }
        self.init(start: start, end: end)
    }

    private static func minutes(_ text: Substring) -> Int? {
        let bytes = Array(text.utf8)
        guard bytes.count == 5, bytes[2] == UInt8(ascii: ":"),
              bytes.enumerated().allSatisfy({ $0.offset == 2 || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0.element) }),
              let hour = Int(String(decoding: bytes[0..<2], as: UTF8.self)), let minute = Int(String(decoding: bytes[3..<5], as: UTF8.self)),
              hour < 24, minute < 60 else { return nil }
        return hour * 60 + minute
    }

    public var description: String {
        func clock(_ m: Int) -> String {
            let (h, mm) = (m / 60, m % 60)
            return (h < 10 ? "0" : "") + String(h) + ":" + (mm < 10 ? "0" : "") + String(mm)
        }
        return clock(start) + "-" + clock(end)
    }

    /// When the window that holds `instant` in `zone` ends, or nil when `instant` is outside
    /// every window.
    public func end(of instant: Date, in zone: TimeZone) -> Date? {
        let offset = zone.secondsFromGMT(for: instant)
        let local = Int(floor(instant.timeIntervalSince1970)) + offset
        let dayStart = local - Self.modulo(local, 86_400)
        let minute = Self.modulo(local, 86_400) / 60
        let inside = start < end ? (minute >= start && minute < end) : (minute >= start || minute < end)
        guard inside else { return nil }
        // The end is today when it is still ahead of the minute, else tomorrow.
        let endLocal = dayStart + end * 60 + (end > minute ? 0 : 86_400)
        let endInstant = Date(timeIntervalSince1970: TimeInterval(endLocal - offset))
        // An offset change inside the window moves its end by the change.
        let moved = zone.secondsFromGMT(for: endInstant) - offset
        return endInstant.addingTimeInterval(-TimeInterval(moved))
    }

    private static func modulo(_ a: Int, _ b: Int) -> Int { ((a % b) + b) % b }
}

/// What a send does with a push that would arrive in its device's quiet hours
/// (docs/API.md#quiet-hours).
public enum QuietHoursMode: String, Codable, Sendable, CaseIterable {
    /// Held until the quiet hours end (the default).
    case hold
    /// Not sent, counted as dropped.
    case drop
}

/// Time zones by name, each looked up once (`TimeZone(identifier:)` parses the zone's rules).
public struct TimeZones: Sendable {
    private var zones: [String: TimeZone] = [:]
    public init() {}

    /// The zone of `name`, or nil for a name the zone database does not know.
    public mutating func zone(_ name: String) -> TimeZone? {
        if let known = zones[name] { return known }
        guard let zone = TimeZone(identifier: name) else { return nil }
        zones[name] = zone
        return zone
    }

    /// Whether `name` is a zone the database knows.
    public static func isKnown(_ name: String) -> Bool { TimeZone(identifier: name) != nil }
}

/// An app's cap on the pushes one user gets in a window of time, of one category or of every
/// push (docs/API.md#frequency-caps): `marketing:3/86400` is at most 3 marketing pushes a day,
/// `*:10/86400` at most 10 pushes of any kind.
public struct FrequencyCap: Sendable, Hashable, CustomStringConvertible {
    /// The category it counts (`NotificationRequested.capCategory`); nil: every push.
    public let category: String?
    public let limit: Int
    /// Seconds.
    public let window: Int

    public static let maxCaps = 10, maxLimit = 1000, maxWindow = 30 * 86_400, maxCategoryBytes = 64

    public init?(category: String?, limit: Int, window: Int) {
        guard (1...Self.maxLimit).contains(limit), (60...Self.maxWindow).contains(window) else { return nil }
        if let category, !Self.isCategory(category) { return nil }
        (self.category, self.limit, self.window) = (category, limit, window)
    }

    /// A category: 1 to 64 bytes of `a-z`, `0-9`, `-`, `_`, `.`.
    public static func isCategory(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maxCategoryBytes && text.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
    }

    public var description: String { "\(category ?? "*"):\(limit)/\(window)" }

    /// Whether it counts a push of `category`.
    public func counts(_ category: String?) -> Bool { self.category == nil || self.category == category }

    /// The caps of their canonical text (comma-separated `description`s); nil when any is unreadable.
    public static func list(_ text: String) -> [FrequencyCap]? {
        var caps: [FrequencyCap] = []
        for entry in text.split(separator: ",") {
            let parts = entry.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            let numbers = parts[1].split(separator: "/")
            guard numbers.count == 2, let limit = Int(numbers[0]), let window = Int(numbers[1]),
                  let cap = FrequencyCap(category: parts[0] == "*" ? nil : String(parts[0]), limit: limit, window: window) else { return nil }
            caps.append(cap)
        }
        return caps
    }

    /// The canonical text of a list: sorted, each once.
    public static func text(_ caps: [FrequencyCap]) -> String {
        Set(caps.map(\.description)).sorted().joined(separator: ",")
    }
}

/// The pushes a user got that an app's caps count (`FrequencyCap`): each with its time, the
/// first 16 hex digits of its delivery id (so that a send applied again finds it counted) and
/// its category. Kept as `ms/delivery/category` entries joined by commas, oldest first.
public struct CappedPushes: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var at: Int64
        public var delivery: String
        public var category: String?
    }
    public private(set) var entries: [Entry]

    public init(_ text: String?) {
        entries = (text ?? "").split(separator: ",").compactMap { entry in
            let parts = entry.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, let at = Int64(parts[0]) else { return nil }
            return Entry(at: at, delivery: String(parts[1]), category: parts[2].isEmpty ? nil : String(parts[2]))
        }
    }

    public var text: String? {
        entries.isEmpty ? nil : entries.map { "\($0.at)/\($0.delivery)/\($0.category ?? "")" }.joined(separator: ",")
    }

    /// Whether a push of `delivery` was counted.
    public func counted(_ delivery: String) -> Bool { entries.contains { $0.delivery == delivery } }

    /// Whether a push of `category` at `at` (milliseconds) stays within every cap that counts it,
    /// counting these pushes and the `sends` to an audience that reached `user` (a `UserDigest`).
    public func allows(_ category: String?, at: Int64, caps: [FrequencyCap], user: UInt64 = 0, sends: [CountedSend] = []) -> Bool {
        caps.allSatisfy { cap in
            guard cap.counts(category) else { return true }
            let since = at - Int64(cap.window) * 1000
            var count = entries.count(where: { $0.at > since && cap.counts($0.category) })
            for send in sends where count < cap.limit && send.at > since && cap.counts(send.category) && send.reached(user) {
                count += 1
            }
            return count < cap.limit
        }
    }

    /// Counts a push, and forgets those no cap looks back to any more.
    public mutating func add(_ category: String?, delivery: String, at: Int64, caps: [FrequencyCap]) {
        let longest = Int64(caps.map(\.window).max() ?? 0) * 1000
        entries.removeAll { $0.at <= at - longest }
        entries.append(Entry(at: at, delivery: delivery, category: category))
    }
}
