import Foundation

/// Tags and topics that every device of a page must carry (`StateReads.devicePage`): what an
/// audience requires of every device it selects (`AudienceExpression.required`), so that a store
/// reads the devices of one of these names from its index of names (`device_names`, schema step
/// 27) instead of every device of the app.
public struct DeviceNames: Sendable, Equatable {
    public var tags: Set<String>
    public var topics: Set<String>
    /// The name whose devices a page reads, the others looked up: by default the first of
    /// `all`; a send chooses the one with the fewest devices (`BatchStore.deviceCount`).
    public var lead: DeviceName?

    public init(tags: Set<String> = [], topics: Set<String> = []) {
        self.tags = tags
        self.topics = topics
    }

    public var isEmpty: Bool { tags.isEmpty && topics.isEmpty }

    /// Every name with its kind: the tags, then the topics, each in order.
    public var all: [DeviceName] {
        tags.sorted().map { DeviceName(kind: .tag, name: $0) } + topics.sorted().map { DeviceName(kind: .topic, name: $0) }
    }

    /// `all`, `lead` first.
    var ordered: [DeviceName] {
        let all = all
        guard let lead, all.contains(lead) else { return all }
        return [lead] + all.filter { $0 != lead }
    }
}

/// A tag or a topic, as `device_names` keeps it.
public struct DeviceName: Sendable, Hashable {
    public enum Kind: String, Sendable {
        case tag, topic
    }

    public var kind: Kind
    public var name: String

    public init(kind: Kind, name: String) {
        self.kind = kind
        self.name = name
    }
}

/// The first `limit` of the app's devices after `after` (from the first when nil), in the tokens'
/// byte order, that carry every one of `names` (`ReadSQL.Piece.namedDevicePage`): the devices of
/// the first name, read from `device_names` in that order, with the others checked per device.
public struct NamedTokens: Sendable {
    public var app: UUID
    public var names: [DeviceName]
    public var after: String?
    public var limit: Int

    public init(app: UUID, names: DeviceNames, after: String?, limit: Int) {
        precondition(!names.isEmpty, "tokens named by no name")
        self.app = app
        self.names = names.ordered
        self.after = after
        self.limit = limit
    }
}
