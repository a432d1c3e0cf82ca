/// The body of a native route (the send route and the admin API), whose fields are all listed:
/// ingest refuses a body with any other member, with a 400 naming it, so that a field a newer
/// server acts on (an audience, a schedule) is never dropped silently by an older one, and a
/// misspelt field is reported. Only the body's own members are checked: free-form values (a
/// send's `custom`, a service account) hold what they hold. The vendor dialects' bodies keep
/// their own rules and are not `ListedFields`.
public protocol ListedFields: Decodable {
    /// The name of every field, as the body spells it.
    static var fields: Set<String> { get }
    /// The fields whose value is an object with listed members of its own (a send's `to`).
    static var nestedFields: [String: Set<String>] { get }
}

extension ListedFields {
    public static var nestedFields: [String: Set<String>] { [:] }
}

extension NotificationAPI.SendRequest: ListedFields {
    public static let nestedFields = ["to": NotificationAPI.Target.fields]
}

extension AudiencesAPI.CountRequest: ListedFields {
    public static let fields: Set<String> = ["audience"]
}

extension AdminAPI.CreateApp: ListedFields {
    public static let fields: Set<String> = ["orgId", "name"]
}

extension AdminAPI.IssueToken: ListedFields {
    public static let fields: Set<String> = ["scopes"]
}

extension NotificationAPI.UserSettings: ListedFields {
    public static let fields: Set<String> = ["quietHours"]
}

extension AdminAPI.UpdateApp: ListedFields {
    public static let fields: Set<String> = ["name", "callbackUrl", "callbackHeaders", "webhookRetries", "webhookHosts", "timeZone", "quietHours",
                                          "frequencyCaps"]
}

extension AdminAPI.SetUserIdentity: ListedFields {
    public static let fields: Set<String> = ["required"]
}

extension AdminAPI.SetAPNsCredentials: ListedFields {
    public static let fields: Set<String> = ["teamId", "keyId", "bundleId", "privateKey", "environment"]
}

extension AdminAPI.SetFCMCredentials: ListedFields {
    public static let fields: Set<String> = ["serviceAccount"]
}

extension AdminAPI.CreateAdminToken: ListedFields {
    public static let fields: Set<String> = ["name"]
}
