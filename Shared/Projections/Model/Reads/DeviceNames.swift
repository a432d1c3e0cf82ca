import Foundation

/// Tags and topics that every device of a page must carry (`StateReads.devicePage`): what an
/// audience requires of every device it selects (`AudienceExpression.required`), so that a store
/// reads the devices of one of these names from its index of names (`device_names`, schema step
/// 27) instead of every device of the app.
public struct DeviceNames: Sendable, Equatable {
    public var tags: Set<String>
    public var topics: Set<String>

    public init(tags: Set<String> = [], topics: Set<String> = []) {
        self.tags = tags
        self.topics = topics
    }

    public var isEmpty: Bool { tags.isEmpty && topics.isEmpty }

    /// Each name with its kind as `device_names` keeps it (`tag` or `topic`): the tags, then the
    /// topics, each in order. A page reads the first one's devices and looks the others up.
    public var kinded: [(kind: String, name: String)] {
        tags.sorted().map { ("tag", $0) } + topics.sorted().map { ("topic", $0) }
    }
}

/// The condition "the row's device token is one of the first `limit` of the app's devices after
/// `after` (from the first when nil), in the tokens' byte order, that carry every one of `names`"
/// (`ReadSQL.Piece.namedTokens`), read from `device_names`.
public struct NamedTokens: Sendable {
    public var app: UUID
    public var names: [(kind: String, name: String)]
    public var after: String?
    public var limit: Int

    public init(app: UUID, names: DeviceNames, after: String?, limit: Int) {
        precondition(!names.isEmpty, "tokens named by no name")
        self.app = app
        self.names = names.kinded
        self.after = after
        self.limit = limit
    }
}
