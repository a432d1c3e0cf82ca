import Contracts
import OutboundRendering

/// The settings that change what the processor decides for a command, with their one default.
///
/// Live processors, rebuilds and dead-letter re-applies of one log must decide with the same
/// rules, or they come to different states. `ProcessorConfiguration` starts from these defaults
/// and hands its values on as `decisionRules`; the handlers and the applier default to
/// `DecisionRules.default`, so no other place names a default of its own.
public struct DecisionRules: Sendable, Equatable {
    /// The most devices one user of an app keeps; a registration past it retires the user's
    /// devices registered longest ago (`PUSHLINE_MAX_DEVICES_PER_USER`).
    public var maxDevicesPerUser: Int
    /// The most users one app keeps (`PUSHLINE_MAX_USERS_PER_APP`, ten million): a registration
    /// that would add a user past it fails with `TooManyUsers`. A user is kept while it has a
    /// device. An app in parts keeps at most its share in each part (`maxUsers(perPartOf:)`).
    public var maxUsersPerApp: Int
    /// How long tracking reports of a delivery whose send has not been applied are kept, counted
    /// in command times (`PUSHLINE_TRACKING_PARK_TTL_MS`, a day).
    public var trackingParkTtlMs: Int
    /// How long a tracked registration's status is kept after it was decided, counted in command
    /// times of its app part (`PUSHLINE_REGISTRATION_STATUS_TTL_MS`, seven days): then it is
    /// pruned (docs/ARCHITECTURE.md#bounded-growth), and the status query answers `Pending`.
    public var registrationStatusTtlMs: Int
    /// How long an ack that counted is kept, counted in command times of its app part
    /// (`PUSHLINE_ACK_TTL_MS`, thirty days). Nothing decides from a stored ack; it is a record.
    public var ackTtlMs: Int
    /// The most badge updates one device is sent per minute of log time
    /// (`PUSHLINE_MAX_BADGE_UPDATES_PER_MINUTE`, ten): an ack past them counts, but sends none.
    public var maxBadgeUpdatesPerMinute: Int
    /// How long an idempotency key names its first send, in command times
    /// (`PUSHLINE_IDEMPOTENCY_WINDOW_HOURS`). Ingest answers with the same window, so its
    /// default is the shared one, `IdempotencyKeys.defaultWindowHours`.
    public var idempotencyWindowHours: Int
    /// The parts every app is split into (docs/ARCHITECTURE.md#one-app-in-parts): a part holds
    /// the devices of its tokens (`AppParts.part(ofToken:)`). One, the default, is an app unsplit.
    public var appParts: AppParts
    /// The keys message ids are made with (`MessageIdKeys`, from `PUSHLINE_SECRETS_KEY` and
    /// `PUSHLINE_SECRETS_PREVIOUS_KEYS`): a send names one by id, a keyed tracking report is
    /// checked against them. A log with keyed sends needs, live and in every rebuild, each key
    /// it names (`MessageKeyMissing`).
    public var messageIdKeys: MessageIdKeys

    public init(maxDevicesPerUser: Int = 100,
                maxUsersPerApp: Int = 10_000_000,
                trackingParkTtlMs: Int = 86_400_000,
                registrationStatusTtlMs: Int = 7 * 86_400_000,
                ackTtlMs: Int = 30 * 86_400_000,
                maxBadgeUpdatesPerMinute: Int = 10,
                idempotencyWindowHours: Int = IdempotencyKeys.defaultWindowHours,
                appParts: AppParts = .one,
                messageIdKeys: MessageIdKeys = .none) {
        self.maxDevicesPerUser = maxDevicesPerUser
        self.maxUsersPerApp = maxUsersPerApp
        self.trackingParkTtlMs = trackingParkTtlMs
        self.registrationStatusTtlMs = registrationStatusTtlMs
        self.ackTtlMs = ackTtlMs
        self.maxBadgeUpdatesPerMinute = maxBadgeUpdatesPerMinute
        self.idempotencyWindowHours = idempotencyWindowHours
        self.appParts = appParts
        self.messageIdKeys = messageIdKeys
    }

    /// The rules of a processor configured with nothing.
    public static let `default` = DecisionRules()

    /// How a registration's device token is checked when no other verifier is plugged in.
    public static let defaultVerifier: any DeviceTokenVerifier = TokenFormatVerifier()

    /// `trackingParkTtlMs` as a duration.
    public var trackingParkTime: Duration { .milliseconds(trackingParkTtlMs) }
    /// The users each part of an app keeps at most: `maxUsersPerApp` shared evenly over the parts
    /// (rounded up; a user with devices in several parts counts in each), so the app keeps at most
    /// about `maxUsersPerApp`.
    public var maxUsersPerPart: Int { (maxUsersPerApp + appParts.count - 1) / appParts.count }
    /// `registrationStatusTtlMs` and `ackTtlMs` as durations.
    public var registrationStatusTime: Duration { .milliseconds(registrationStatusTtlMs) }
    public var ackTime: Duration { .milliseconds(ackTtlMs) }
    /// `idempotencyWindowHours` as a duration.
    public var idempotencyWindow: Duration { .seconds(idempotencyWindowHours * 3600) }
}
