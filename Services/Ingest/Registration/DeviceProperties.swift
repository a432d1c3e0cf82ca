import Contracts

/// The device properties a registration may give besides its token and user
/// (docs/API.md#device-properties), checked: a locale and an app version in canonical form, the
/// tags it adds and the topics it subscribes to. Each dialect names the fields its own way.
struct DeviceProperties {
    var locale: String?
    var appVersion: String?
    var tags: [String]?
    var topics: [String]?

    /// The wire names of the four fields in a dialect.
    struct Names {
        var locale, appVersion, tags, topics: String

        static let registrationAPI = Names(locale: "Locale", appVersion: "AppVersion", tags: "Tags", topics: "Topics")
        static let camelCase = Names(locale: "locale", appVersion: "appVersion", tags: "tags", topics: "topics")
        /// A change's (`DevicesAPI.Change`): the tags it adds and the topics it subscribes to.
        static let change = Names(locale: "locale", appVersion: "appVersion", tags: "tags.add", topics: "topics.subscribe")
    }

    /// Empty values count as not given, as the registration API has them. `field` turns a wire
    /// name into the 400's field (a batch element's `[3].Locale`).
    init(locale: String?, appVersion: String?, tags: [String]?, topics: [String]?, names: Names = .registrationAPI,
         field: (String) -> String = { $0 }) throws {
        self.locale = try locale.nonEmpty.map { try FieldRules.locale($0, field: field(names.locale)) }
        self.appVersion = try appVersion.nonEmpty.map { try FieldRules.appVersion($0, field: field(names.appVersion)) }
        self.tags = try FieldRules.names(tags, max: DeviceTag.maxPerDevice, field: field(names.tags))
        self.topics = try FieldRules.names(topics, max: DeviceTopic.maxPerDevice, field: field(names.topics))
    }
}
