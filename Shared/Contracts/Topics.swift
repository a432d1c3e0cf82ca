/// The one place that names Pushline's Kafka topics.
///
/// Every name is `prefix + suffix`; the prefix (default `pushline.`) lets several deployments
/// share one cluster.
public struct Topics: Sendable, Hashable {
    public var prefix: String

    public init(prefix: String = "pushline.") {
        self.prefix = prefix
    }

    /// Registrations and cleanups from every HTTP dialect. Every command topic is keyed by app
    /// (`AppScopedCommand`).
    public var registration: String { prefix + "commands.registration" }
    /// Notification sends and acknowledgements.
    public var notification: String { prefix + "commands.notification" }
    /// Engagement tracking events.
    public var tracking: String { prefix + "commands.tracking" }
    /// App, token and settings changes made through the admin API, keyed by app.
    public var admin: String { prefix + "commands.admin" }
    /// The outcome of every push the sender attempted (delivered, failed, token dead): the
    /// processor counts them and retires dead devices.
    public var delivery: String { prefix + "commands.delivery" }
    /// Per-device APNs/FCM payloads for whatever talks to Apple and Google.
    public var outbound: String { prefix + "outbound" }
    /// One record per webhook or callback attempt, for audit.
    public var webhooks: String { prefix + "webhooks" }

    /// Never written; as many partitions as a command topic: the processor group member that owns
    /// partition i applies shard i, the partitions i of every command topic
    /// (docs/ARCHITECTURE.md#scale-out).
    public var processorLease: String { prefix + "processor-lease" }

    /// The changelog of the projection stores: every commit's mutations and offsets, for restoring
    /// a store without deciding anything again (docs/ARCHITECTURE.md#changelog-and-restore). One
    /// partition, keyed by the store's lineage.
    public var changelog: String { prefix + "changelog" }

    /// The command topics the processor consumes.
    public var commandTopics: [String] { [admin, registration, notification, tracking, delivery] }

    /// Every topic with the partition count it is created with when missing.
    public func all(commandPartitions: Int = 12, outputPartitions: Int = 12) -> [(name: String, partitions: Int)] {
        commandTopics.map { ($0, commandPartitions) } + [(outbound, outputPartitions), (webhooks, outputPartitions), (processorLease, commandPartitions), (changelog, 1)]
    }
}
