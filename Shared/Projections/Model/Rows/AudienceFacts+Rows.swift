import Contracts

// What a stored device offers an audience expression (`AudienceExpression.matches`).

extension AudienceFacts {
    public init(_ device: DeviceRow) {
        self.init(platform: device.platform, locale: device.locale, timeZone: device.timeZone, appVersion: device.appVersion,
                  tags: device.tags, topics: device.topics)
    }

    public init(_ properties: DevicePropertiesCount) {
        self.init(platform: properties.platform, locale: properties.locale, timeZone: properties.timeZone,
                  appVersion: properties.appVersion, tags: properties.tags, topics: properties.topics)
    }

    /// The stored app version is canonical (`AppVersion.description`), so it always reads back.
    private init(platform: Platform, locale: String?, timeZone: String?, appVersion: String?, tags: DeviceLabels, topics: DeviceLabels) {
        self.init(platform: platform, locale: locale, timeZone: timeZone, appVersion: appVersion.flatMap(AppVersion.init),
                  tags: Set(tags.names), topics: Set(topics.names))
    }
}
