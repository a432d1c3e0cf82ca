/// The headers of every record Pushline writes, written and read only here: the envelope's
/// `type` and `v` repeated (so a consumer can route or skip a record without parsing its value)
/// and, on commands, the id of the HTTP request that produced them (for log correlation).
public struct RecordHeaders: Sendable, Equatable {
    public static let typeName = "type"
    public static let versionName = "v"
    public static let requestIdName = "request-id"

    public var type: String?
    /// Nil when the header is missing or not an integer.
    public var version: Int?
    public var requestId: String?

    public init(type: String, version: Int = 1, requestId: String? = nil) {
        self.type = type
        self.version = version
        self.requestId = requestId
    }

    /// The fields Pushline knows among a record's headers; other headers are ignored, and of a
    /// repeated name the last counts.
    public init(_ headers: some Sequence<(name: String, value: String)>) {
        for (name, value) in headers {
            switch name {
            case Self.typeName: type = value
            case Self.versionName: version = Int(value)
            case Self.requestIdName: requestId = value
            default: break
            }
        }
    }

    /// The headers to write, in this order: `type`, `v`, then `request-id` when there is one.
    public var fields: [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        if let type { fields.append((Self.typeName, type)) }
        if let version { fields.append((Self.versionName, String(version))) }
        if let requestId { fields.append((Self.requestIdName, requestId)) }
        return fields
    }
}
