/// The parts every app is split into, so that several processors share one large app
/// (docs/ARCHITECTURE.md#one-app-in-parts). A device token is in one part for good
/// (`part(ofToken:)`); an app's parts are spread over the partitions from its key's
/// (`partition(key:part:partitions:)`), so that they are on different shards. With one part (the
/// default) the log is what it was before parts.
public struct AppParts: Sendable, Hashable, CustomStringConvertible {
    /// How many parts: at least 1; more than the command topics' partitions share shards.
    public let count: Int

    public static let one = AppParts(1)

    public init(_ count: Int) {
        precondition(count >= 1, "an app has at least one part")
        self.count = count
    }

    /// The part that holds the device of this token: the CRC-32 of its bytes modulo the count.
    public func part(ofToken token: String) -> Int {
        count == 1 ? 0 : Int(CRC32.checksum(token.utf8) % UInt32(count))
    }

    /// Every part, in order.
    public var all: Range<Int> { 0..<count }

    /// The partition of a command with this key and part: its key's, moved on by the part times
    /// the partitions over the parts. The parts are spread evenly, so that any contiguous range of
    /// shards, as a consumer group's range assignment hands its members, holds as few of one
    /// app's parts as it can.
    public func partition(key: String, part: Int, partitions: Int) -> Int32 {
        let total = max(1, partitions)
        let stride = max(1, total / count)
        return Int32((Int(RecordKey.partition(of: key, partitions: total)) + part * stride) % total)
    }

    public var description: String { "\(count) part\(count == 1 ? "" : "s")" }

    /// A push's message index within its delivery names its part: part × `indexStride` + its
    /// place among the part's devices. Part 0's indexes are the places themselves, as before
    /// parts; the part of an index, and whether it is within its part's sent count, need no part
    /// count.
    public static let indexStride = 1_000_000_000

    /// The message index of the device at `place` among the devices part `part` sent to.
    public static func messageIndex(place: Int, part: Int) -> Int { part * indexStride + place }

    /// The part a message index is of.
    public static func part(ofMessageIndex index: Int) -> Int { index / indexStride }

    /// The place a message index has among its part's devices.
    public static func place(ofMessageIndex index: Int) -> Int { index % indexStride }
}
