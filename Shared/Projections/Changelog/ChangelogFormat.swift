import Contracts
import Foundation
import Projections

/// The entry's bytes: a format byte, then the offsets and the mutations, each mutation a tag
/// byte and its fields; a mutation that writes a whole row has its row's catalog columns as its
/// fields (`ChangelogColumns`). Integers are variable-length (zig-zag for signed ones), strings and
/// bytes are a length and their bytes, UUIDs their 16 bytes, dates the bit pattern of their
/// `timeIntervalSince1970` (so a date comes back as exactly the value the store rounded),
/// enumerations their raw value. Compact and cheap both ways: every commit is encoded once,
/// and a restore decodes the whole log.
extension ChangelogEntry {
    package static let format: UInt8 = 1

    public func encoded() -> [UInt8] {
        var w = ChangelogWriter()
        w.bytes.reserveCapacity(64 + mutations.count * 96)
        w.byte(Self.format)
        w.uint(UInt64(offsets.count))
        for o in offsets {
            w.string(o.partition.topic)
            w.int(Int64(o.partition.partition))
            w.optional(o.expected) { $0.int($1) }
            w.int(o.next)
            w.optional(o.eventTime) { $0.int($1) }
        }
        w.uint(UInt64(mutations.count))
        for m in mutations { w.mutation(m) }
        return w.bytes
    }

    public init(decoding bytes: some Collection<UInt8>) throws {
        var r = ChangelogReader(Array(bytes))
        guard try r.byte() == Self.format else { throw ChangelogFormatError("unknown changelog entry format") }
        let offsetCount = try r.count()
        var offsets: [OffsetUpdate] = []
        offsets.reserveCapacity(offsetCount)
        for _ in 0..<offsetCount {
            let topic = try r.string()
            let partition = try r.int32()
            let expected = try r.optional { try $0.int() }
            let next = try r.int()
            let eventTime = try r.optional { try $0.int() }
            offsets.append(OffsetUpdate(partition: PartitionKey(topic: topic, partition: partition), expected: expected, next: next,
                                        eventTime: eventTime))
        }
        let mutationCount = try r.count()
        var mutations: [Mutation] = []
        mutations.reserveCapacity(mutationCount)
        for _ in 0..<mutationCount { mutations.append(try r.mutation()) }
        guard r.atEnd else { throw ChangelogFormatError("bytes after the last mutation") }
        self.init(mutations: mutations, offsets: offsets)
    }
}

public struct ChangelogFormatError: Error, Equatable, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = "changelog entry: " + description
    }
}

/// Tags of the mutation cases: never renumbered, only added to.
private enum Tag: UInt8 {
    case upsertApp = 1, upsertApiToken, upsertDevice, deleteDevice, putRegistrationStatus, enqueueOutbox, restoreOutbox
    case putPending, deletePending, clearPending, putAck, putDelivery, countTracking, deleteTracking, parkTracking
    case unparkTracking, dropTracking, putDeadLetter, deleteDeadLetter
    /// `upsertApp` followed by the app's push credentials (their stored JSON).
    case upsertAppWithCredentials
    /// `putDelivery` followed by its outcome counts (delivered, failed, unregistered).
    case putDeliveryWithOutcomes
    case putDeliveryOutcome
    /// `upsertApiToken` followed by the token's scopes (their stored column value).
    case upsertApiTokenWithScopes
    /// `putDelivery` of a send with an idempotency key: the outcome counts, then the key, its
    /// request hash, and the counts of duplicates and conflicts.
    case putKeyedDelivery
    // Numbered apart from the tags before them, so that tags added elsewhere meanwhile cannot take them.
    case upsertAdminToken = 40
    case putAuditEntry = 41
    case putIdempotencyKey = 42
    /// The part of an app (`TrackingPair.part`) the tracking mutation after it is for; a tracking
    /// mutation without it is for part 0.
    case inPart = 43
    /// The mutations that write a whole row, the row as its catalog columns (`ChangelogColumns`):
    /// a row gains a column without a tag of its own. The tags above stay readable.
    case upsertAppRow = 50, upsertApiTokenRow, upsertDeviceRow, putRegistrationStatusRow, enqueueOutboxRow, restoreOutboxRow
    case putPendingRow, putAckRow, putDeliveryRow, putDeliveryOutcomeRow, upsertAdminTokenRow, putAuditEntryRow, putIdempotencyKeyRow
    case putHeldPushRow, putUserSettingsRow, putCountedSendRow
    /// Pruning (numbered apart, as above): a status by its request id, an ack by its key; a held
    /// push released or cancelled; a counted send past every cap's window.
    case deleteRegistrationStatus = 70, deleteAck, deleteHeldPush, deleteCountedSend
}

package struct ChangelogWriter {
    package var bytes: [UInt8] = []

    package mutating func byte(_ b: UInt8) { bytes.append(b) }

    package mutating func uint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    package mutating func int(_ value: Int64) { uint(UInt64(bitPattern: (value << 1) ^ (value >> 63))) }
    package mutating func int(_ value: Int) { int(Int64(value)) }
    package mutating func bool(_ value: Bool) { bytes.append(value ? 1 : 0) }

    package mutating func string(_ value: String) {
        var s = value
        s.withUTF8 { utf8 in
            uint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    package mutating func data(_ value: Data) {
        uint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    package mutating func uuid(_ value: UUID) {
        withUnsafeBytes(of: value.uuid) { bytes.append(contentsOf: $0) }
    }

    package mutating func date(_ value: Date) {
        let bits = value.timeIntervalSince1970.bitPattern
        withUnsafeBytes(of: bits.littleEndian) { bytes.append(contentsOf: $0) }
    }

    package mutating func optional<T>(_ value: T?, _ write: (inout ChangelogWriter, T) -> Void) {
        guard let value else { return byte(0) }
        byte(1)
        write(&self, value)
    }


    /// A tracking pair's delivery and app; its part goes apart (`inPart`).
    package mutating func pair(_ pair: TrackingPair) {
        uuid(pair.deliveryId)
        uuid(pair.appId)
    }


    /// A whole row: its tag, then its catalog columns (`ChangelogColumns`).
    fileprivate mutating func row<Row: CatalogRow>(_ tag: Tag, _ row: Row) {
        byte(tag.rawValue)
        var columns = ChangelogColumns(table: Row.table)
        swap(&columns.writer.bytes, &bytes)
        defer { swap(&columns.writer.bytes, &bytes) }
        columns.writer.uint(UInt64(Row.table.columns.count))
        do {
            try row.writeColumns(to: &columns)
        } catch {
            // Only JSON of strings and enumerations is encoded on the way, which cannot fail.
            preconditionFailure("\(Row.table.name) row cannot be encoded: \(error)")
        }
    }

    package mutating func partition(_ key: PartitionKey) {
        string(key.topic)
        int(Int64(key.partition))
    }

    package mutating func mutation(_ mutation: Mutation) {
        encode(mutation, keyed: false)
    }

    /// A record of a restore's sort (`ChangelogSorter`): `[key length: 4][group key][mutation
    /// length: 4][mutation]`.
    package mutating func sortRecord(_ mutation: Mutation) {
        let start = bytes.count
        encode(mutation, keyed: true)
        let key = ChangelogSorter.fixed32(bytes, at: start)
        patch32(at: start + 4 + key, bytes.count - (start + 8 + key))
    }

    /// The one place a mutation is switched over for the changelog. `keyed`: first its group
    /// key (`key`), then a place for its length.
    ///
    /// A group key is the mutation's table and the part of the row key that every mutation able
    /// to touch the same row shares, in the table's primary key order (a UUID's bytes order as
    /// its text): a device's pending rows are one group, since a clear removes them all; a
    /// tracking pair's rows and park mark are one; a delivery's outcomes are one.
    private mutating func encode(_ mutation: Mutation, keyed: Bool) {
        switch mutation {
        case .upsertApp(let row):
            key(keyed, 1) { $0.uuid(row.appId); $0.int(row.part) }
            self.row(.upsertAppRow, row)
        case .upsertApiToken(let row):
            key(keyed, 2) { $0.uuid(row.tokenId); $0.int(row.part) }
            self.row(.upsertApiTokenRow, row)
        case .upsertDevice(let row):
            key(keyed, 3) { $0.uuid(row.appId); $0.keyText(row.deviceToken) }
            self.row(.upsertDeviceRow, row)
        case .deleteDevice(let k):
            key(keyed, 3) { $0.uuid(k.appId); $0.keyText(k.deviceToken) }
            byte(Tag.deleteDevice.rawValue)
            uuid(k.appId); string(k.deviceToken)
        case .putRegistrationStatus(let row):
            key(keyed, 4) { $0.uuid(row.requestId) }
            self.row(.putRegistrationStatusRow, row)
        case .deleteRegistrationStatus(let id):
            key(keyed, 4) { $0.uuid(id) }
            byte(Tag.deleteRegistrationStatus.rawValue)
            uuid(id)
        case .enqueueOutbox(let row):
            key(keyed, 5) { $0.keyText(row.id) }
            self.row(.enqueueOutboxRow, row)
        case .restoreOutbox(let row):
            key(keyed, 5) { $0.keyText(row.id) }
            self.row(.restoreOutboxRow, row)
        case .putPending(let row):
            key(keyed, 6) { $0.uuid(row.appId); $0.keyText(row.deviceToken) }
            self.row(.putPendingRow, row)
        case .deletePending(let k):
            key(keyed, 6) { $0.uuid(k.appId); $0.keyText(k.deviceToken) }
            byte(Tag.deletePending.rawValue)
            uuid(k.appId); string(k.deviceToken); string(k.notificationId)
        case .clearPending(let k):
            key(keyed, 6) { $0.uuid(k.appId); $0.keyText(k.deviceToken) }
            byte(Tag.clearPending.rawValue)
            uuid(k.appId); string(k.deviceToken)
        case .putAck(let row):
            key(keyed, 7) { $0.uuid(row.appId); $0.keyText(row.deviceToken); $0.keyText(row.notificationId) }
            self.row(.putAckRow, row)
        case .deleteAck(let k):
            key(keyed, 7) { $0.uuid(k.appId); $0.keyText(k.deviceToken); $0.keyText(k.notificationId) }
            byte(Tag.deleteAck.rawValue)
            uuid(k.appId); string(k.deviceToken); string(k.notificationId)
        case .putDelivery(let row):
            key(keyed, 8) { $0.uuid(row.appId); $0.uuid(row.deliveryId); $0.int(row.part) }
            self.row(.putDeliveryRow, row)
        case .putDeliveryOutcome(let row):
            key(keyed, 11) { $0.uuid(row.appId); $0.uuid(row.deliveryId) }
            self.row(.putDeliveryOutcomeRow, row)
        case .countTracking(let c):
            key(keyed, 9) { $0.pair(c.pair) }
            inPart(c.part)
            byte(Tag.countTracking.rawValue)
            uuid(c.appId); uuid(c.deliveryId); uint(UInt64(c.counts.count))
            for count in c.counts {
                int(count.action.rawValue); int(count.messageIndex); int(count.reports)
            }
        case .deleteTracking(let p, let keys):
            key(keyed, 9) { $0.pair(p) }
            inPart(p.part)
            byte(Tag.deleteTracking.rawValue)
            pair(p); uint(UInt64(keys.count))
            for key in keys {
                int(key.action.rawValue); int(key.messageIndex)
            }
        case .parkTracking(let p, let at):
            key(keyed, 9) { $0.pair(p) }
            inPart(p.part)
            byte(Tag.parkTracking.rawValue)
            pair(p); date(at)
        case .unparkTracking(let p):
            key(keyed, 9) { $0.pair(p) }
            inPart(p.part)
            byte(Tag.unparkTracking.rawValue)
            pair(p)
        case .dropTracking(let p):
            key(keyed, 9) { $0.pair(p) }
            inPart(p.part)
            byte(Tag.dropTracking.rawValue)
            pair(p)
        case .putDeadLetter(let l):
            key(keyed, 10) { $0.partition(l.partition); $0.int(l.offset) }
            byte(Tag.putDeadLetter.rawValue)
            partition(l.partition); int(l.offset); optional(l.type) { $0.string($1) }; string(l.reason)
            optional(l.requestId) { $0.string($1) }; data(l.value); date(l.recordedAt)
        case .deleteDeadLetter(let k):
            key(keyed, 10) { $0.partition(k.partition); $0.int(k.offset) }
            byte(Tag.deleteDeadLetter.rawValue)
            partition(k.partition); int(k.offset)
        case .upsertAdminToken(let row):
            key(keyed, 12) { $0.uuid(row.adminTokenId) }
            self.row(.upsertAdminTokenRow, row)
        case .putAuditEntry(let row):
            key(keyed, 13) { $0.uuid(row.commandId) }
            self.row(.putAuditEntryRow, row)
        case .putIdempotencyKey(let row):
            key(keyed, 14) { $0.keyText(row.scope); $0.keyText(row.key) }
            self.row(.putIdempotencyKeyRow, row)
        case .putHeldPush(let row):
            key(keyed, 15) { $0.uuid(row.appId); $0.uuid(row.deliveryId); $0.int(row.part); $0.keyText(row.deviceToken) }
            self.row(.putHeldPushRow, row)
        case .deleteHeldPush(let k):
            key(keyed, 15) { $0.uuid(k.delivery.appId); $0.uuid(k.delivery.deliveryId); $0.int(k.delivery.part); $0.keyText(k.deviceToken) }
            byte(Tag.deleteHeldPush.rawValue)
            uuid(k.delivery.appId); uuid(k.delivery.deliveryId); int(k.delivery.part); string(k.deviceToken)
        case .putUserSettings(let row):
            key(keyed, 16) { $0.uuid(row.appId); $0.keyText(row.userId); $0.int(row.part) }
            self.row(.putUserSettingsRow, row)
        case .putCountedSend(let row):
            key(keyed, 17) { $0.uuid(row.appId); $0.int(row.part); $0.keyText(row.delivery) }
            self.row(.putCountedSendRow, row)
        case .deleteCountedSend(let k):
            key(keyed, 17) { $0.uuid(k.appId); $0.int(k.part); $0.keyText(k.delivery) }
            byte(Tag.deleteCountedSend.rawValue)
            uuid(k.appId); int(k.part); string(k.delivery)
        }
    }

    /// A tracking mutation of a part other than 0: its part first (`Tag.inPart`).
    private mutating func inPart(_ part: Int) {
        guard part != 0 else { return }
        byte(Tag.inPart.rawValue)
        int(part)
    }

    /// When `keyed`: a group key, the group's table `group` then `parts`, with its length before
    /// it and a place for the mutation's length after it.
    private mutating func key(_ keyed: Bool, _ group: UInt8, _ parts: (inout ChangelogWriter) -> Void) {
        guard keyed else { return }
        fixed32(0)
        let start = bytes.count
        byte(group)
        parts(&self)
        patch32(at: start - 4, bytes.count - start)
        fixed32(0)
    }
}

package struct ChangelogReader {
    private let bytes: [UInt8]
    private var index = 0

    /// Bytes this process encoded from valid strings (a restore's run files) are not validated again.
    private let trusted: Bool

    package init(_ bytes: [UInt8], at index: Int = 0, trusted: Bool = false) {
        self.bytes = bytes
        self.index = index
        self.trusted = trusted
    }

    package var atEnd: Bool { index == bytes.count }

    package mutating func byte() throws -> UInt8 {
        guard index < bytes.count else { throw ChangelogFormatError("truncated") }
        defer { index += 1 }
        return bytes[index]
    }

    package mutating func uint() throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            guard shift < 64 else { throw ChangelogFormatError("integer too long") }
            value |= UInt64(b & 0x7f) << shift
            if b < 0x80 { return value }
            shift += 7
        }
    }

    package mutating func int() throws -> Int64 {
        let u = try uint()
        return Int64(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
    }

    package mutating func int32() throws -> Int32 {
        guard let v = Int32(exactly: try int()) else { throw ChangelogFormatError("integer out of range") }
        return v
    }

    package mutating func intValue() throws -> Int {
        guard let v = Int(exactly: try int()) else { throw ChangelogFormatError("integer out of range") }
        return v
    }

    /// A count of items that follow, each at least one byte long.
    package mutating func count() throws -> Int {
        let n = try uint()
        guard n <= UInt64(bytes.count - index) else { throw ChangelogFormatError("count past the end") }
        return Int(n)
    }

    package mutating func bool() throws -> Bool {
        switch try byte() {
        case 0: false
        case 1: true
        default: throw ChangelogFormatError("bad boolean")
        }
    }

    private mutating func slice(_ n: Int) throws -> ArraySlice<UInt8> {
        guard n <= bytes.count - index else { throw ChangelogFormatError("truncated") }
        defer { index += n }
        return bytes[index..<index + n]
    }

    package mutating func string() throws -> String {
        let n = try count()
        let s = try slice(n)
        if trusted { return String(decoding: s, as: UTF8.self) }
        guard let text = String(validating: s, as: UTF8.self) else { throw ChangelogFormatError("string is not UTF-8") }
        return text
    }

    package mutating func data() throws -> Data { Data(try slice(try count())) }

    package mutating func uuid() throws -> UUID {
        let s = try slice(16)
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &raw) { $0.copyBytes(from: s) }
        return UUID(uuid: raw)
    }

    package mutating func date() throws -> Date {
        let s = try slice(8)
        var bits: UInt64 = 0
        for (i, b) in s.enumerated() { bits |= UInt64(b) << (8 * UInt64(i)) }
        return Date(timeIntervalSince1970: Double(bitPattern: bits))
    }

    package mutating func optional<T>(_ read: (inout ChangelogReader) throws -> T) throws -> T? {
        try bool() ? try read(&self) : nil
    }

    package mutating func raw<T: RawRepresentable>(_: T.Type) throws -> T where T.RawValue == String {
        let text = try string()
        guard let value = T(rawValue: text) else { throw ChangelogFormatError("unknown value \(text) of \(T.self)") }
        return value
    }

    package mutating func action() throws -> TrackingAction {
        guard let action = TrackingAction(rawValue: try intValue()) else { throw ChangelogFormatError("unknown tracking action") }
        return action
    }

    package mutating func headers() throws -> [String: String] {
        let n = try count()
        var headers: [String: String] = [:]
        for _ in 0..<n { headers[try string()] = try string() }
        return headers
    }

    package mutating func pair() throws -> TrackingPair {
        TrackingPair(deliveryId: try uuid(), appId: try uuid())
    }

    package mutating func job() throws -> OutboxJob {
        OutboxJob(id: try string(), kind: try string(), appId: try optional { try $0.uuid() }, url: try string(), headers: try headers(),
                  body: try data(), maxAttempts: try intValue(), attempts: try intValue(), nextAttemptAt: try date(),
                  state: try raw(OutboxState.self), lastStatus: try optional { try $0.intValue() },
                  lastError: try optional { try $0.string() }, createdAt: try date())
    }

    /// A whole row (`ChangelogWriter.row`).
    private mutating func row<Row: CatalogRow>() throws -> Row {
        let count = try count()
        var columns = ChangelogColumns.Reader(reader: self, table: Row.table)
        columns.count = count
        let row: Row
        do {
            row = try Row(columns: &columns)
        } catch let error as ChangelogFormatError {
            throw error
        } catch {
            throw ChangelogFormatError("\(Row.table.name) row: \(error)")
        }
        guard columns.index == columns.count else {
            throw ChangelogFormatError("\(Row.table.name) row has \(columns.count) columns, \(columns.index) known")
        }
        self = columns.reader
        return row
    }

    package mutating func partition() throws -> PartitionKey {
        PartitionKey(topic: try string(), partition: try int32())
    }

    package mutating func mutation() throws -> Mutation {
        let tagByte = try byte()
        guard let tag = Tag(rawValue: tagByte) else { throw ChangelogFormatError("unknown mutation tag \(tagByte)") }
        switch tag {
        case .upsertAppRow: return .upsertApp(try row())
        case .upsertApiTokenRow: return .upsertApiToken(try row())
        case .upsertDeviceRow: return .upsertDevice(try row())
        case .putRegistrationStatusRow: return .putRegistrationStatus(try row())
        case .enqueueOutboxRow: return .enqueueOutbox(try row())
        case .restoreOutboxRow: return .restoreOutbox(try row())
        case .putPendingRow: return .putPending(try row())
        case .putAckRow: return .putAck(try row())
        case .putDeliveryRow: return .putDelivery(try row())
        case .putDeliveryOutcomeRow: return .putDeliveryOutcome(try row())
        case .upsertAdminTokenRow: return .upsertAdminToken(try row())
        case .putAuditEntryRow: return .putAuditEntry(try row())
        case .putIdempotencyKeyRow: return .putIdempotencyKey(try row())
        case .putHeldPushRow: return .putHeldPush(try row())
        case .putUserSettingsRow: return .putUserSettings(try row())
        case .putCountedSendRow: return .putCountedSend(try row())
        case .deleteCountedSend: return .deleteCountedSend(CountedSendKey(appId: try uuid(), part: try intValue(), delivery: try string()))
        case .deleteHeldPush:
            return .deleteHeldPush(HeldPushKey(delivery: DeliveryKey(appId: try uuid(), deliveryId: try uuid(), part: try intValue()),
                                               deviceToken: try string()))
        case .deleteRegistrationStatus: return .deleteRegistrationStatus(try uuid())
        case .deleteAck: return .deleteAck(PendingKey(appId: try uuid(), deviceToken: try string(), notificationId: try string()))
        // Entries written before rows came from the catalog.
        case .upsertApp, .upsertAppWithCredentials:
            var app = AppRow(appId: try uuid(), orgId: try uuid(), name: try string(), callbackUrl: try optional { try $0.string() },
                             callbackHeaders: try headers(), webhookRetries: try intValue(), createdAt: try date())
            if tag == .upsertAppWithCredentials {
                let json = try string()
                guard let credentials = try? ProjectionValues.pushCredentials(json: json) else {
                    throw ChangelogFormatError("app \(app.appId) has push credentials that do not decode")
                }
                app.pushCredentials = credentials
            }
            return .upsertApp(app)
        case .upsertApiToken, .upsertApiTokenWithScopes:
            var token = ApiTokenRow(tokenId: try uuid(), appId: try uuid(), tokenHash: try string(), revoked: try bool(),
                                    createdAt: try date())
            if tag == .upsertApiTokenWithScopes {
                let column = try string()
                guard let scopes = try? ApiTokenScopes.parse(column: column) else {
                    throw ChangelogFormatError("API token \(token.tokenId) has scopes that do not decode")
                }
                token.scopes = scopes
            }
            return .upsertApiToken(token)
        case .upsertDevice:
            return .upsertDevice(DeviceRow(appId: try uuid(), deviceToken: try string(), userId: try string(),
                                           platform: try raw(Platform.self), version: try int(), updatedAt: try date()))
        case .deleteDevice:
            return .deleteDevice(DeviceKey(appId: try uuid(), deviceToken: try string()))
        case .putRegistrationStatus:
            return .putRegistrationStatus(RegistrationStatusRow(
                requestId: try uuid(), appId: try uuid(), status: try raw(DeviceRegistrationAPI.Status.self),
                failureReason: try optional { try $0.raw(DeviceRegistrationAPI.FailureReason.self) }, decidedAt: try date()))
        case .enqueueOutbox:
            return .enqueueOutbox(try job())
        case .restoreOutbox:
            return .restoreOutbox(try job())
        case .putPending:
            return .putPending(PendingNotificationRow(appId: try uuid(), deviceToken: try string(), notificationId: try string(),
                                                      deliveryId: try uuid(), sentAt: try date(), text: try string(),
                                                      businessId: try optional { try $0.string() }))
        case .deletePending:
            return .deletePending(PendingKey(appId: try uuid(), deviceToken: try string(), notificationId: try string()))
        case .clearPending:
            return .clearPending(DeviceKey(appId: try uuid(), deviceToken: try string()))
        case .putAck:
            return .putAck(AckRow(appId: try uuid(), deviceToken: try string(), notificationId: try string(),
                                  businessId: try optional { try $0.string() }, ackedAt: try date()))
        case .putDelivery, .putDeliveryWithOutcomes, .putKeyedDelivery:
            var delivery = DeliveryRow(appId: try uuid(), deliveryId: try uuid(), kind: try raw(NotificationKind.self),
                                       managed: try bool(), tracking: try bool(), sent: try intValue(), createdAt: try date())
            if tag != .putDelivery {
                (delivery.delivered, delivery.failed, delivery.unregistered) = (try intValue(), try intValue(), try intValue())
            }
            if tag == .putKeyedDelivery {
                delivery.idempotencyKey = try optional { try $0.string() }
                delivery.requestHash = try optional { try $0.string() }
                (delivery.duplicates, delivery.conflicts) = (try intValue(), try intValue())
            }
            return .putDelivery(delivery)
        case .putDeliveryOutcome:
            return .putDeliveryOutcome(DeliveryOutcomeRow(appId: try uuid(), deliveryId: try uuid(), messageIndex: try intValue(),
                                                          deviceToken: try string(),
                                                          outcome: try raw(DeliveryOutcome.self), reason: try optional { try $0.string() },
                                                          reportedAt: try date()))
        case .countTracking:
            let appId = try uuid()
            let deliveryId = try uuid()
            let n = try count()
            var counts: [TrackingCount] = []
            counts.reserveCapacity(n)
            for _ in 0..<n {
                counts.append(TrackingCount(action: try action(), messageIndex: try intValue(), reports: try intValue()))
            }
            return .countTracking(TrackingCounts(appId: appId, deliveryId: deliveryId, counts: counts))
        case .deleteTracking:
            let p = try pair()
            let n = try count()
            var keys: [TrackingRowKey] = []
            keys.reserveCapacity(n)
            for _ in 0..<n { keys.append(TrackingRowKey(action: try action(), messageIndex: try intValue())) }
            return .deleteTracking(p, keys)
        case .parkTracking:
            return .parkTracking(try pair(), at: try date())
        case .unparkTracking:
            return .unparkTracking(try pair())
        case .dropTracking:
            return .dropTracking(try pair())
        case .putDeadLetter:
            return .putDeadLetter(DeadLetterRow(partition: try partition(), offset: try int(), type: try optional { try $0.string() },
                                                reason: try string(), requestId: try optional { try $0.string() }, value: try data(),
                                                recordedAt: try date()))
        case .deleteDeadLetter:
            return .deleteDeadLetter(DeadLetterKey(partition: try partition(), offset: try int()))
        case .upsertAdminToken:
            return .upsertAdminToken(AdminTokenRow(adminTokenId: try uuid(), name: try string(), tokenHash: try string(),
                                                   revoked: try bool(), createdAt: try date(), revokedAt: try optional { try $0.date() }))
        case .putAuditEntry:
            return .putAuditEntry(AuditEntryRow(
                commandId: try uuid(), at: try date(), type: try string(), appId: try optional { try $0.uuid() },
                actorId: try optional { try $0.uuid() }, actorName: try optional { try $0.string() },
                requestId: try optional { try $0.string() }, outcome: try string(), reason: try optional { try $0.string() },
                changes: try string()))
        case .putIdempotencyKey:
            return .putIdempotencyKey(IdempotencyKeyRow(scope: try string(), key: try string(), resourceId: try uuid(),
                                                        requestHash: try string(), firstAt: try date()))
        case .inPart:
            let part = try intValue()
            guard part > 0 else { throw ChangelogFormatError("part \(part) named apart") }
            switch try mutation() {
            case .countTracking(var c): c.part = part; return .countTracking(c)
            case .deleteTracking(var p, let keys): p.part = part; return .deleteTracking(p, keys)
            case .parkTracking(var p, let at): p.part = part; return .parkTracking(p, at: at)
            case .unparkTracking(var p): p.part = part; return .unparkTracking(p)
            case .dropTracking(var p): p.part = part; return .dropTracking(p)
            default: throw ChangelogFormatError("a part names a mutation that is not about tracking")
            }
        }
    }
}
