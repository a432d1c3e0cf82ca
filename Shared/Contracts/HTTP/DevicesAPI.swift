import Foundation
import WireCodec

/// Wire shapes of the device property routes (docs/API.md#device-properties), under
/// `/v1/apps/{mobileAppId}`:
/// - `POST …/devices/changes` (scope `client`): one `Change`, from the device itself;
/// - `POST …/devices/changes/batch` (scope `server`): `{"changes": [Change, …]}`, 1…`maxChanges`,
///   from the app's backend.
///
/// Every object refuses a member it does not list (`UnknownFields`), as the native routes do.
public enum DevicesAPI {
    public static let maxChanges = 1000

    /// Tags to take off and to put on a device (the removals first).
    public struct TagChange: Codable, Sendable, Equatable {
        public var add: [String]?
        public var remove: [String]?

        public init(add: [String]? = nil, remove: [String]? = nil) {
            self.add = add
            self.remove = remove
        }

        public init(from decoder: any Decoder) throws {
            try UnknownFields.refuse(in: decoder, listed: ["add", "remove"])
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(add: try c.decodeIfPresent([String].self, forKey: .add), remove: try c.decodeIfPresent([String].self, forKey: .remove))
        }
    }

    /// Topics to unsubscribe a device from and to subscribe it to (the unsubscriptions first).
    public struct TopicChange: Codable, Sendable, Equatable {
        public var subscribe: [String]?
        public var unsubscribe: [String]?

        public init(subscribe: [String]? = nil, unsubscribe: [String]? = nil) {
            self.subscribe = subscribe
            self.unsubscribe = unsubscribe
        }

        public init(from decoder: any Decoder) throws {
            try UnknownFields.refuse(in: decoder, listed: ["subscribe", "unsubscribe"])
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(subscribe: try c.decodeIfPresent([String].self, forKey: .subscribe),
                      unsubscribe: try c.decodeIfPresent([String].self, forKey: .unsubscribe))
        }
    }

    /// A change of one device (`deviceToken`) or of every device of a user (`userId` alone). A
    /// field left out leaves the property as it is.
    public struct Change: Codable, Sendable, Equatable {
        public var deviceToken: String?
        public var userId: String?
        public var locale: String?
        public var timeZone: String?
        public var appVersion: String?
        public var tags: TagChange?
        public var topics: TopicChange?

        public init(deviceToken: String? = nil, userId: String? = nil, locale: String? = nil, timeZone: String? = nil,
                    appVersion: String? = nil, tags: TagChange? = nil, topics: TopicChange? = nil) {
            self.deviceToken = deviceToken
            self.userId = userId
            self.locale = locale
            self.timeZone = timeZone
            self.appVersion = appVersion
            self.tags = tags
            self.topics = topics
        }

        public init(from decoder: any Decoder) throws {
            try UnknownFields.refuse(in: decoder, listed: Set(CodingKeys.allCases.map(\.stringValue)))
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(deviceToken: try c.decodeIfPresent(String.self, forKey: .deviceToken),
                      userId: try c.decodeIfPresent(String.self, forKey: .userId),
                      locale: try c.decodeIfPresent(String.self, forKey: .locale),
                      timeZone: try c.decodeIfPresent(String.self, forKey: .timeZone),
                      appVersion: try c.decodeIfPresent(String.self, forKey: .appVersion),
                      tags: try c.decodeIfPresent(TagChange.self, forKey: .tags),
                      topics: try c.decodeIfPresent(TopicChange.self, forKey: .topics))
        }

        private enum CodingKeys: String, CodingKey, CaseIterable {
            case deviceToken, userId, locale, timeZone, appVersion, tags, topics
        }
    }

    /// `POST …/devices/changes/batch`.
    public struct ChangeBatch: Codable, Sendable, Equatable {
        public var changes: [Change]?

        public init(changes: [Change]?) { self.changes = changes }

        public init(from decoder: any Decoder) throws {
            try UnknownFields.refuse(in: decoder, listed: ["changes"])
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(changes: try c.decodeIfPresent([Change].self, forKey: .changes))
        }
    }

    /// The answer: how many changes were written.
    public struct Accepted: Codable, Sendable, Equatable {
        public var accepted: Int
        public init(accepted: Int) { self.accepted = accepted }
    }
}

/// Refusal of members a body's object does not list, from inside a `Decodable` initializer: for
/// objects in arrays, which `ListedFields` (the body's own members and its nested objects) does
/// not reach. The error is a `DecodingError` at the member's path whose description is `message`,
/// which ingest answers as a `400 field_unknown` naming the path (`changes[3].tag`).
public enum UnknownFields {
    public static let message = "unknown field: this route takes only the fields its documentation lists"

    public static func refuse(in decoder: any Decoder, listed: Set<String>) throws {
        guard let container = try? decoder.container(keyedBy: AnyKey.self) else { return }
        // Sorted, so that the field named is the same whatever the dictionary's order.
        let unknown = container.allKeys.filter { !listed.contains($0.stringValue) }.min { $0.stringValue < $1.stringValue }
        if let unknown {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath + [unknown], debugDescription: message))
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

/// `POST /v1/apps/{mobileAppId}/audiences/count` (scope `server`, docs/API.md#audiences): how
/// many devices of the app an audience expression selects now, as projected, without sending.
public enum AudiencesAPI {
    public struct CountRequest: Codable, Sendable, Equatable {
        public var audience: String?
        public init(audience: String?) { self.audience = audience }
    }

    public struct Count: Codable, Sendable, Equatable {
        /// The expression in its canonical form, as a send would carry it.
        public var audience: String
        public var devices: Int

        public init(audience: String, devices: Int) {
            self.audience = audience
            self.devices = devices
        }
    }
}

// Read by hand (`FastRequestBody`): a bulk change of tags is the batch route's whole body.

extension DevicesAPI.TagChange: WireDecodable {
    private enum Key: String, CaseIterable { case add, remove }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var add: [String]?, remove: [String]?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .add: reader.readOptional(&add)
            case .remove: reader.readOptional(&remove)
            }
        }) else { return nil }
        self.init(add: add, remove: remove)
    }
}

extension DevicesAPI.TopicChange: WireDecodable {
    private enum Key: String, CaseIterable { case subscribe, unsubscribe }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var subscribe: [String]?, unsubscribe: [String]?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .subscribe: reader.readOptional(&subscribe)
            case .unsubscribe: reader.readOptional(&unsubscribe)
            }
        }) else { return nil }
        self.init(subscribe: subscribe, unsubscribe: unsubscribe)
    }
}

extension DevicesAPI.Change: WireDecodable {
    private enum Key: String, CaseIterable { case deviceToken, userId, locale, timeZone, appVersion, tags, topics }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var deviceToken: String?, userId: String?, locale: String?, timeZone: String?, appVersion: String?
        var tags: DevicesAPI.TagChange?, topics: DevicesAPI.TopicChange?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .deviceToken: reader.readOptional(&deviceToken)
            case .userId: reader.readOptional(&userId)
            case .locale: reader.readOptional(&locale)
            case .timeZone: reader.readOptional(&timeZone)
            case .appVersion: reader.readOptional(&appVersion)
            case .tags: reader.readOptional(&tags)
            case .topics: reader.readOptional(&topics)
            }
        }) else { return nil }
        self.init(deviceToken: deviceToken, userId: userId, locale: locale, timeZone: timeZone, appVersion: appVersion, tags: tags,
                  topics: topics)
    }
}

extension DevicesAPI.ChangeBatch: WireDecodable {
    private enum Key: String, CaseIterable { case changes }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var changes: [DevicesAPI.Change]?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .changes: reader.readOptional(&changes)
            }
        }) else { return nil }
        self.init(changes: changes)
    }
}
