import Contracts
import Foundation

/// A read of a state load with where its rows go in the snapshot.
public protocol SnapshotRead {
    associatedtype Row: ReadRow
    var read: StoreRead<Row> { get }
    func add(_ rows: [Row], to snapshot: inout StateSnapshot)
}

/// A `SnapshotRead` from a read and a function.
public struct SnapshotStep<Row: ReadRow>: SnapshotRead {
    public let read: StoreRead<Row>
    private let adding: ([Row], inout StateSnapshot) -> Void

    public init(_ read: StoreRead<Row>, _ adding: @escaping ([Row], inout StateSnapshot) -> Void) {
        self.read = read
        self.adding = adding
    }

    public func add(_ rows: [Row], to snapshot: inout StateSnapshot) { adding(rows, &snapshot) }
}

/// How a `StateQuery` is read, the same in both stores: one read per kind of row asked for, each
/// over all its keys at once (`ReadKeys`), inside one snapshot that the store holds.
///
/// The reads come in two rounds: `first` needs nothing loaded; `then` reads what the first round
/// found decides (the tokens of the apps that exist, the badges of the loaded devices). A kind
/// of row with no keys asked for is not read.
public enum StateReads {
    public static func first(_ query: StateQuery) -> [any SnapshotRead] {
        var reads: [any SnapshotRead] = []
        if !query.appIds.isEmpty {
            reads.append(SnapshotStep(StoreRead<AppRow>("WHERE \(keys: ReadKeys(.init("app_id"), .uuids(Array(query.appIds))))")) { rows, snapshot in
                for app in rows {
                    snapshot.apps[AppPart(app.appId, part: app.part)] = app
                    snapshot.tokens[AppPart(app.appId, part: app.part)] = []
                }
            })
        }
        if !query.adminTokenIds.isEmpty {
            let ids = ReadKeys(.init("admin_token_id"), .uuids(Array(query.adminTokenIds)))
            reads.append(SnapshotStep(StoreRead<AdminTokenRow>("WHERE \(keys: ids)")) { rows, snapshot in
                for token in rows { snapshot.adminTokens[token.adminTokenId] = token }
            })
        }
        if let devices = devices(query) {
            reads.append(SnapshotStep(devices) { rows, snapshot in snapshot.add(devices: rows) })
        }
        if !query.pendingKeys.isEmpty {
            reads.append(SnapshotStep(StoreRead<PendingNotificationRow>("WHERE \(keys: pendingKeys(query.pendingKeys))",
                                                                        firstColumnIsFirstValue: true)) { rows, snapshot in
                for pending in rows { snapshot.pending[pending.key] = pending }
            })
        }
        if !query.deliveryIds.isEmpty {
            let ids = ReadKeys(.init("delivery_id"), .uuids(Array(query.deliveryIds)))
            reads.append(SnapshotStep(StoreRead<DeliveryRow>("WHERE \(keys: ids)")) { rows, snapshot in
                for delivery in rows { snapshot.deliveries[delivery.key] = delivery }
            })
        }
        if !query.trackedDeliveries.isEmpty {
            // Usually finds nothing: rows exist before their send only when the tracking topic ran
            // ahead of the notification topic.
            let ids = ReadKeys(.init("delivery_id"), .uuids(Array(query.trackedDeliveries)))
            let read = StoreRead<TrackedRow>("SELECT \(unescaped: TableCatalog.trackingEvents.columnList) FROM tracking_events WHERE \(keys: ids)",
                                             columns: ReadColumns(TableCatalog.trackingEvents))
            reads.append(SnapshotStep(read) { rows, snapshot in
                for row in rows { snapshot.trackedEvents[row.deliveryId, default: []].append(row.event) }
            })
        }
        if let parked = parked(query) {
            reads.append(SnapshotStep(parked) { rows, snapshot in
                for row in rows { snapshot.parkedTracking[row.pair] = row.parkedAt }
            })
        }
        if !query.outcomeKeys.isEmpty {
            let read = StoreRead<OutcomeRow>("""
                SELECT app_id, delivery_id, message_index, outcome FROM delivery_outcomes WHERE \(keys: outcomeKeys(query.outcomeKeys))
                """, columns: ReadColumns(table: "delivery_outcomes", ["app_id", "delivery_id", "message_index", "outcome"]))
            reads.append(SnapshotStep(read) { rows, snapshot in
                for row in rows { snapshot.outcomes[row.key] = row.outcome }
            })
        }
        if !query.heldWaves.isEmpty {
            let groups = Dictionary(grouping: query.heldWaves, by: \.delivery).map { delivery, waves in
                ReadKeys.Group([.uuid(delivery.appId), .uuid(delivery.deliveryId), .int(Int64(delivery.part))],
                               .ints(waves.map { ProjectionValues.millis($0.releaseAt) }))
            }
            let keys = ReadKeys([.init("app_id"), .init("delivery_id"), .init("part"), .init("release_at")], groups: groups)
            reads.append(SnapshotStep(StoreRead<HeldPushRow>("WHERE \(keys: keys)", firstColumnIsFirstValue: true)) { rows, snapshot in
                for row in rows { snapshot.held[row.key] = row }
            })
        }
        if !query.heldOf.isEmpty {
            let groups = Dictionary(grouping: query.heldOf) { TrackingPair(deliveryId: $0.deliveryId, appId: $0.appId) }.map { pair, keys in
                ReadKeys.Group([.uuid(pair.appId), .uuid(pair.deliveryId)], .ints(keys.map { Int64($0.part) }))
            }
            let keys = ReadKeys([.init("app_id"), .init("delivery_id"), .init("part")], groups: groups)
            reads.append(SnapshotStep(StoreRead<HeldPushRow>("WHERE \(keys: keys)", firstColumnIsFirstValue: true)) { rows, snapshot in
                for row in rows { snapshot.held[row.key] = row }
            })
        }
        if let users = userSettings(of: query.userSettings) {
            reads.append(users)
        }
        if let app = query.userSettingsOfPart {
            reads.append(SnapshotStep(StoreRead<UserSettingsRow>(
                "WHERE app_id = \(app.appId) AND part = \(Int64(app.part)) ORDER BY user_id LIMIT \(query.userSettingsLimit)",
                firstColumnIsFirstValue: true)) {
                rows, snapshot in for row in rows { snapshot.userSettings[row.key] = row }
            })
        }
        // The statuses and acks of `parkedApps` old enough to be pruned: an index range per app.
        let apps = ReadKeys(.init("app_id"), .uuids(Array(query.parkedApps)))
        if let before = query.statusesBefore, !apps.isEmpty {
            reads.append(SnapshotStep(StoreRead<RegistrationStatusRow>("WHERE \(keys: apps) AND decided_at < \(millis: before)")) {
                rows, snapshot in snapshot.agedStatuses += rows
            })
        }
        if let before = query.acksBefore, !apps.isEmpty {
            reads.append(SnapshotStep(StoreRead<AckRow>("WHERE \(keys: apps) AND acked_at < \(millis: before)")) { rows, snapshot in
                snapshot.agedAcks += rows
            })
        }
        return reads
    }

    public static func then(_ query: StateQuery, after snapshot: StateSnapshot) -> [any SnapshotRead] {
        var reads: [any SnapshotRead] = []
        // Only apps that exist have tokens worth asking for.
        if !snapshot.apps.isEmpty {
            let apps = ReadKeys(.init("app_id"), .uuids(Array(Set(snapshot.apps.keys.map(\.appId)))))
            reads.append(SnapshotStep(StoreRead<ApiTokenRow>("WHERE \(keys: apps) ORDER BY app_id, part, created_at, token_id")) {
                rows, snapshot in
                for token in rows { snapshot.tokens[AppPart(token.appId, part: token.part), default: []].append(token) }
            })
        }
        // The devices of the held pushes a wave releases, as they are now.
        if !query.heldWaves.isEmpty {
            let keys = Set(snapshot.held.values.map { DeviceKey(appId: $0.appId, deviceToken: $0.deviceToken) })
            if !keys.isEmpty {
                reads.append(SnapshotStep(StoreRead<DeviceRow>("WHERE \(keys: deviceKeys(keys))", firstColumnIsFirstValue: true)) {
                    rows, snapshot in snapshot.add(devices: rows)
                })
            }
        }
        // Only apps with users who have pushes counted on their own row or quiet hours of their own
        // need their users' settings (a row with neither changes no decision; and apps a settings
        // change of the batch may give caps): those of the loaded devices, of the
        // users the batch names (a device registered in the batch is its new user's before a send
        // after it), and of the held pushes a wave releases. A user with quiet hours of their own
        // set in the batch was read in the first round.
        let settingsApps = Set(snapshot.apps.values.lazy.filter { $0.countedUsers > 0 || $0.quietUsers > 0 }.map(\.appId))
            .union(query.capsChangedApps)
            .intersection(query.userSettingsOfDevices)
        if !settingsApps.isEmpty {
            var users = Set(snapshot.devices.values.lazy.filter { settingsApps.contains($0.appId) }.map(\.user))
            users.formUnion(query.userKeys.lazy.filter { settingsApps.contains($0.appId) })
            for row in snapshot.held.values where settingsApps.contains(row.appId) { users.insert(UserKey(appId: row.appId, userId: row.userId)) }
            if let read = userSettings(of: users.subtracting(query.userSettings)) { reads.append(read) }
        }
        // The counted sends of the apps the batch sends for (caps set in the batch may count them), but those the reader has.
        var counted: [CountedSendKey] = []
        for app in snapshot.apps.values where app.countedSends != nil && query.userSettingsOfDevices.contains(app.appId) {
            for entry in CappedPushes(app.countedSends).entries {
                let key = CountedSendKey(appId: app.appId, part: app.part, delivery: entry.delivery)
                if !query.knownCountedSends.contains(key) { counted.append(key) }
            }
        }
        if !counted.isEmpty {
            let groups = Dictionary(grouping: counted) { AppPart($0.appId, part: $0.part) }.map { app, keys in
                ReadKeys.Group([.uuid(app.appId), .int(Int64(app.part))], .texts(keys.map(\.delivery)))
            }
            let keys = ReadKeys([.init("app_id"), .init("part"), .init("delivery")], groups: groups)
            reads.append(SnapshotStep(StoreRead<CountedSendRow>("WHERE \(keys: keys)", firstColumnIsFirstValue: true)) { rows, snapshot in
                for row in rows { snapshot.countedSends[row.key] = row.users }
            })
        }
        if !query.pendingCountDevices.isEmpty || !query.pendingCountUsers.isEmpty {
            let counted = snapshot.devices.values.lazy.filter { query.countsPending(of: $0) }.map(\.key)
            if let counts = pendingCounts(of: counted) {
                reads.append(SnapshotStep(counts) { rows, snapshot in
                    for row in rows { snapshot.pendingCounts[row.device] = row.count }
                })
            }
        }
        return reads
    }

    /// Devices by key (`deviceKeys`, `deviceOwners`), every device of the `userKeys`, and every
    /// device of the users the `deviceOwners` belong to; nil when the query asks for none.
    public static func devices(_ query: StateQuery) -> StoreRead<DeviceRow>? {
        var branches: [StoreRead<DeviceRow>] = []
        let keys = query.deviceKeys.union(query.deviceOwners)
        if !keys.isEmpty { branches.append(StoreRead("WHERE \(keys: deviceKeys(keys))", firstColumnIsFirstValue: true)) }
        if let users = devices(ofUsers: query.userKeys) { branches.append(users) }
        if !query.allDevicesOf.isEmpty {
            branches.append(StoreRead("WHERE \(keys: ReadKeys(.init("app_id"), .uuids(Array(query.allDevicesOf))))", firstColumnIsFirstValue: true))
        }
        if !query.deviceOwners.isEmpty {
            branches.append(StoreRead("""
                WHERE (app_id, user_id) IN (SELECT app_id, user_id FROM devices WHERE \(keys: deviceKeys(query.deviceOwners)))
                """, firstColumnIsFirstValue: true))
        }
        return branches.isEmpty ? nil : StoreRead(union: branches)
    }

    /// Up to `limit` devices of the app whose tokens come after `after` (from the first when nil),
    /// in the tokens' byte order: the pages an audience send reads its devices in.
    /// `having`: only devices that carry every one of these tags and topics, read from the index
    /// of names (`NamedTokens`); the caller decides the rest of its audience.
    public static func devicePage(app: UUID, after: String?, limit: Int, having: DeviceNames = DeviceNames()) -> StoreRead<DeviceRow> {
        if !having.isEmpty {
            return StoreRead("\(namedDevicePage: NamedTokens(app: app, names: having, after: after, limit: limit))",
                             columns: ReadColumns(DeviceRow.table), firstColumnIsFirstValue: true)
        }
        var filter: ReadSQL = "WHERE app_id = \(app)"
        if let after { filter += " AND \(tokenAfter: after)" }
        return StoreRead(filter + " ORDER BY " + .tokenOrder + " LIMIT \(limit)", firstColumnIsFirstValue: true)
    }

    /// How many of the app's devices carry `name`, counted up to `limit`.
    public static func deviceCount(app: UUID, name: DeviceName, upTo limit: Int) -> StoreRead<OptionalIntRow> {
        StoreRead("""
            SELECT count(*) FROM (SELECT 1 FROM device_names WHERE app_id = \(app) AND kind = \(name.kind.rawValue) AND name = \(name.name) \
            LIMIT \(limit)) AS named
            """, columns: ReadColumns(table: "device_names", ["count"]))
    }

    /// Every device of these users; nil for none.
    public static func devices(ofUsers users: some Collection<UserKey>) -> StoreRead<DeviceRow>? {
        guard !users.isEmpty else { return nil }
        let groups = Dictionary(grouping: users, by: \.appId).map { appId, users in ReadKeys.Group([.uuid(appId)], .texts(users.map(\.userId))) }
        let keys = ReadKeys([.init("app_id"), .init("user_id")], groups: groups)
        return StoreRead("WHERE \(keys: keys)", firstColumnIsFirstValue: true)
    }

    /// The number of pending rows of each of these devices that has any, a grouped count per
    /// key list (each a range of the pending primary key per token); nil for no device.
    public static func pendingCounts(of devices: some Sequence<DeviceKey>) -> StoreRead<PendingCountRow>? {
        let keys = deviceKeys(devices)
        guard !keys.isEmpty else { return nil }
        return StoreRead("""
            SELECT app_id, device_token, COUNT(*) FROM pending_notifications WHERE \(keys: keys) GROUP BY app_id, device_token
            """, columns: ReadColumns(table: "pending_notifications", ["app_id", "device_token", "count"]), firstColumnIsFirstValue: true)
    }

    /// The marks of the requested deliveries' pairs, and those of `parkedApps` older than
    /// `parkedBefore` (an index range per app: usually none); nil when the query asks for none.
    static func parked(_ query: StateQuery) -> StoreRead<ParkedRow>? {
        let select: ReadSQL = "SELECT \(unescaped: TableCatalog.parkedTracking.columnList) FROM parked_tracking WHERE "
        let columns = ReadColumns(TableCatalog.parkedTracking)
        var branches: [StoreRead<ParkedRow>] = []
        if !query.parkedDeliveries.isEmpty {
            let ids = ReadKeys(.init("delivery_id"), .uuids(Array(query.parkedDeliveries)))
            branches.append(StoreRead(select + "\(keys: ids)", columns: columns))
        }
        if let before = query.parkedBefore, !query.parkedApps.isEmpty {
            let apps = ReadKeys(.init("app_id"), .uuids(Array(query.parkedApps)))
            branches.append(StoreRead(select + "\(keys: apps) AND parked_at < \(millis: before)", columns: columns))
        }
        return branches.isEmpty ? nil : StoreRead(union: branches)
    }

    /// Grouped by app, so that every list probes the `(app_id, device_token)` key directly.
    static func deviceKeys(_ devices: some Sequence<DeviceKey>) -> ReadKeys {
        let groups = Dictionary(grouping: devices, by: \.appId).map { appId, keys in
            ReadKeys.Group([.uuid(appId)], .texts(keys.map(\.deviceToken)))
        }
        return ReadKeys([.init("app_id"), .init("device_token", isToken: true)], groups: groups)
    }

    /// Grouped by notification: a managed send asks for one notification on many devices, which
    /// then share lists; acks ask for a few keys only.
    static func pendingKeys(_ keys: Set<PendingKey>) -> ReadKeys {
        let groups = Dictionary(grouping: keys) { NotificationKey(appId: $0.appId, notificationId: $0.notificationId) }.map { key, keys in
            ReadKeys.Group([.uuid(key.appId), .text(key.notificationId)], .texts(keys.map(\.deviceToken)))
        }
        return ReadKeys([.init("app_id"), .init("notification_id"), .init("device_token", isToken: true)], groups: groups)
    }

    /// Every part's settings of these users; nil for none.
    static func userSettings(of users: Set<UserKey>) -> (any SnapshotRead)? {
        guard !users.isEmpty else { return nil }
        let groups = Dictionary(grouping: users, by: \.appId).map { appId, users in ReadKeys.Group([.uuid(appId)], .texts(users.map(\.userId))) }
        let keys = ReadKeys([.init("app_id"), .init("user_id")], groups: groups)
        return SnapshotStep(StoreRead<UserSettingsRow>("WHERE \(keys: keys)", firstColumnIsFirstValue: true)) { rows, snapshot in
            for row in rows { snapshot.userSettings[row.key] = row }
        }
    }

    /// Grouped by (app, delivery), so that the devices of one delivery share lists.
    static func outcomeKeys(_ keys: Set<DeliveryOutcomeKey>) -> ReadKeys {
        let groups = Dictionary(grouping: keys) { TrackingPair(deliveryId: $0.deliveryId, appId: $0.appId) }.map { pair, keys in
            ReadKeys.Group([.uuid(pair.appId), .uuid(pair.deliveryId)], .ints(keys.map { Int64($0.messageIndex) }))
        }
        return ReadKeys([.init("app_id"), .init("delivery_id"), .init("message_index")], groups: groups)
    }
}
