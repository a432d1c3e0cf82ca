import Contracts
import Foundation

/// The rows a batch of commands needs to decide its outcomes, loaded in one read.
public struct StateQuery: Sendable, Equatable {
    public var appIds: Set<UUID> = []
    public var deviceKeys: Set<DeviceKey> = []
    /// Every device of each of these users is loaded.
    public var userKeys: Set<UserKey> = []
    /// These devices, where they exist, and every device of the users they belong to: what a
    /// device that may change hands or go needs, so that its user's count of apps' users stays
    /// exact (`AppRow.users`).
    public var deviceOwners: Set<DeviceKey> = []
    /// Every device of these apps is loaded: an audience send chooses among them.
    public var allDevicesOf: Set<UUID> = []
    /// Pending rows are loaded for those of these keys that exist.
    public var pendingKeys: Set<PendingKey> = []
    /// The pending counts (badges) of the loaded devices among these, and of the loaded devices
    /// of these users, are loaded. Counting costs a lookup per device, so a send that does not
    /// need badges (an unmanaged one) does not ask.
    public var pendingCountDevices: Set<DeviceKey> = []
    public var pendingCountUsers: Set<UserKey> = []
    /// The delivery rows of these delivery ids, of every app that used the id (a handler reads its
    /// own app's).
    public var deliveryIds: Set<UUID> = []
    /// The tracking rows already stored for these deliveries (reported before their send).
    public var trackedDeliveries: Set<UUID> = []
    /// The park marks of every pair of these deliveries.
    public var parkedDeliveries: Set<UUID> = []
    /// Every park mark of the `parkedApps` older than this (the pairs whose reports may expire in
    /// the batch: each app's expire by that app's clock, so other apps' marks are not needed).
    public var parkedBefore: Date?
    /// The apps of the batch's commands: those whose clocks the batch moves.
    public var parkedApps: Set<UUID> = []
    /// Every registration status of the `parkedApps` decided before this, and every ack of them
    /// made before `acksBefore`: those that may be pruned in the batch, each by its own app
    /// part's clock (docs/ARCHITECTURE.md#bounded-growth).
    public var statusesBefore: Date?
    public var acksBefore: Date?
    /// The stored outcomes of these (delivery, device) keys, where they exist.
    public var outcomeKeys: Set<DeliveryOutcomeKey> = []
    /// The named admin tokens of these ids, where they exist.
    public var adminTokenIds: Set<UUID> = []
    /// The held pushes of these waves, and the devices they are for; every held push of these
    /// delivery parts.
    public var heldWaves: Set<HeldWave> = []
    public var heldOf: Set<DeliveryKey> = []
    /// Every part's settings of these users, and (in the second round) of the users of these
    /// apps that the batch may send to: those of the loaded devices and the `userKeys` (a
    /// registration's new user). Only apps that read users' settings (caps, users with quiet
    /// hours of their own) need them, as the apps stand before the batch or as one of its
    /// settings changes may leave them (`capsChangedApps`).
    public var userSettings: Set<UserKey> = []
    public var userSettingsOfDevices: Set<UUID> = []
    public var capsChangedApps: Set<UUID> = []
    /// The counted sends (`CountedSendRow`) the reader has already: the second round reads those
    /// of the apps the batch sends for (`userSettingsOfDevices`), but these.
    public var knownCountedSends: Set<CountedSendKey> = []
    /// The first `userSettingsLimit` users' settings this app part keeps, in user id order (a send
    /// to an audience reads them all at once when there are few, rather than a page's users at a time).
    public var userSettingsOfPart: AppPart?
    public var userSettingsLimit = 0

    public init(appIds: Set<UUID> = [], deviceKeys: Set<DeviceKey> = [], userKeys: Set<UserKey> = [],
                pendingKeys: Set<PendingKey> = [],
                pendingCountDevices: Set<DeviceKey> = [], pendingCountUsers: Set<UserKey> = [],
                deliveryIds: Set<UUID> = [], trackedDeliveries: Set<UUID> = [], parkedDeliveries: Set<UUID> = [],
                parkedBefore: Date? = nil, parkedApps: Set<UUID> = [], outcomeKeys: Set<DeliveryOutcomeKey> = []) {
        self.appIds = appIds
        self.deviceKeys = deviceKeys
        self.userKeys = userKeys
        self.pendingKeys = pendingKeys
        self.pendingCountDevices = pendingCountDevices
        self.pendingCountUsers = pendingCountUsers
        self.deliveryIds = deliveryIds
        self.trackedDeliveries = trackedDeliveries
        self.parkedDeliveries = parkedDeliveries
        self.parkedBefore = parkedBefore
        self.parkedApps = parkedApps
        self.outcomeKeys = outcomeKeys
    }
}

extension StateQuery {
    /// Whether the query asks for the device's pending count (badge).
    public func countsPending(of device: DeviceRow) -> Bool {
        pendingCountDevices.contains(device.key) || pendingCountUsers.contains(UserKey(appId: device.appId, userId: device.userId))
    }
}

/// The answer to a `StateQuery`.
public struct StateSnapshot: Sendable, Equatable {
    /// Every part's row of each requested app that exists.
    public var apps: [AppPart: AppRow] = [:]
    /// Every token (revoked too) of each loaded app, by app and part.
    public var tokens: [AppPart: [ApiTokenRow]] = [:]
    /// Every device row matching a requested device key or belonging to a requested user.
    public var devices: [DeviceKey: DeviceRow] = [:]
    /// The number of pending notifications of every loaded device the query asked counts for
    /// (`pendingCountDevices`, `pendingCountUsers`); absent: none.
    public var pendingCounts: [DeviceKey: Int] = [:]
    /// The requested pending rows that exist.
    public var pending: [PendingKey: PendingNotificationRow] = [:]
    /// The requested deliveries that exist, of every app that used the id, every part's.
    public var deliveries: [DeliveryKey: DeliveryRow] = [:]
    /// The stored tracking rows of the requested `trackedDeliveries` that have any.
    public var trackedEvents: [UUID: [TrackedEvent]] = [:]
    /// The requested park marks (`parkedDeliveries`, `parkedBefore`) that exist: when each pair
    /// was parked.
    public var parkedTracking: [TrackingPair: Date] = [:]
    /// The registration statuses and acks old enough to be pruned (`statusesBefore`, `acksBefore`).
    public var agedStatuses: [RegistrationStatusRow] = []
    public var agedAcks: [AckRow] = []
    /// The requested outcomes that exist.
    public var outcomes: [DeliveryOutcomeKey: DeliveryOutcome] = [:]
    /// The requested named admin tokens that exist.
    public var adminTokens: [UUID: AdminTokenRow] = [:]
    /// The requested held pushes (`heldWaves`, `heldOf`).
    public var held: [HeldPushKey: HeldPushRow] = [:]
    /// The requested users' settings that exist (`userSettings`, `userSettingsOfDevices`).
    public var userSettings: [UserPartKey: UserSettingsRow] = [:]
    /// The counted sends read (`knownCountedSends`): the users each reached.
    public var countedSends: [CountedSendKey: [UInt64]] = [:]

    public init(apps: [AppPart: AppRow] = [:], tokens: [AppPart: [ApiTokenRow]] = [:], devices: [DeviceKey: DeviceRow] = [:],
                pendingCounts: [DeviceKey: Int] = [:], pending: [PendingKey: PendingNotificationRow] = [:],
                deliveries: [DeliveryKey: DeliveryRow] = [:], trackedEvents: [UUID: [TrackedEvent]] = [:],
                parkedTracking: [TrackingPair: Date] = [:]) {
        self.apps = apps
        self.tokens = tokens
        self.devices = devices
        self.pendingCounts = pendingCounts
        self.pending = pending
        self.deliveries = deliveries
        self.trackedEvents = trackedEvents
        self.parkedTracking = parkedTracking
    }

    /// Adds device rows read into an array: the dictionary grows once, where growing it row by
    /// row would rehash them all several times over (a send to many users reads 100,000 rows).
    public mutating func add(devices rows: some Collection<DeviceRow>) {
        devices.reserveCapacity(devices.count + rows.count)
        for device in rows { devices[device.key] = device }
    }
}
