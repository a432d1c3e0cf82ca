import Foundation

/// Tags and topics that every device of a page must carry (`StateReads.devicePage`): what an
/// audience requires of every device it selects (`AudienceExpression.required`), so that a store
/// passes over the others without reading them whole.
public struct DeviceNames: Sendable, Equatable {
    public var tags: Set<String>
    public var topics: Set<String>

    public init(tags: Set<String> = [], topics: Set<String> = []) {
        self.tags = tags
        self.topics = topics
    }

    /// The `LIKE` pattern of `name` among the space-joined names of a column with a space at
    /// each end; `\` escapes (`ESCAPE '\'`), so that a name's `_` matches only itself.
    static func pattern(_ name: String) -> String {
        var escaped = ""
        for character in name {
            if character == "\\" || character == "%" || character == "_" { escaped.append("\\") }
            escaped.append(character)
        }
        return "% \(escaped) %"
    }
}
