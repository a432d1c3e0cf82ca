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
    /// How long tracking reports of a delivery whose send has not been applied are kept, counted
    /// in command times (`PUSHLINE_TRACKING_PARK_TTL_MS`, a day).
    public var trackingParkTtlMs: Int
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
                trackingParkTtlMs: Int = 86_400_000,
                idempotencyWindowHours: Int = IdempotencyKeys.defaultWindowHours,
                appParts: AppParts = .one,
                messageIdKeys: MessageIdKeys = .none) {
        self.maxDevicesPerUser = maxDevicesPerUser
        self.trackingParkTtlMs = trackingParkTtlMs
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
    /// `idempotencyWindowHours` as a duration.
    public var idempotencyWindow: Duration { .seconds(idempotencyWindowHours * 3600) }
}
