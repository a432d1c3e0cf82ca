import Contracts
import Foundation
import WireCodec

/// One part's share of a `ticket` or `im` send's app callbacks: the users of the devices that
/// part sent to, each with those devices (docs/ARCHITECTURE.md#one-app-in-parts).
///
/// An app callback is one request per user, listing all of the user's devices, and in an app in
/// parts a user's devices may be in several parts. So each part stores its share as an outbox job
/// of kind `app-callback-share`, which no dispatcher sends, and the commit that stores a
/// delivery's last share merges the shares into one callback job per user (`merge`). An app in
/// one part makes its callbacks from its one share at once (`callbacks`), without storing it.
public struct CallbackShare: Sendable, Equatable, Decodable {
    /// The outbox job kind of a stored share.
    public static let jobKind = "app-callback-share"
    /// The outbox job kind of a callback.
    public static let callbackKind = "app-callback"

    public struct Device: Sendable, Equatable, Decodable {
        public var token: String
        public var platform: Platform

        public init(token: String, platform: Platform) {
            self.token = token
            self.platform = platform
        }
    }

    public struct User: Sendable, Equatable, Decodable {
        public var userId: String
        public var devices: [Device]

        public init(userId: String, devices: [Device]) {
            self.userId = userId
            self.devices = devices
        }
    }

    public var deliveryId: UUID
    public var part: Int
    /// How many parts the app is in: how many shares the delivery has.
    public var parts: Int
    public var kind: NotificationKind
    public var ticketId: String?
    public var message: String?
    /// The users of the part's devices that the send reached, by user id.
    public var users: [User]

    public init(deliveryId: UUID, part: Int, parts: Int, kind: NotificationKind, ticketId: String?, message: String?, users: [User]) {
        self.deliveryId = deliveryId
        self.part = part
        self.parts = parts
        self.kind = kind
        self.ticketId = ticketId
        self.message = message
        self.users = users
    }

    /// The id of part `part`'s share of a delivery's callbacks.
    public static func jobId(_ deliveryId: UUID, part: Int) -> String {
        "callback:\(deliveryId.lowercasedString)#part-\(part)"
    }

    /// The id of a delivery's callback to one user: the same in an app in parts as in one part.
    public static func callbackId(_ deliveryId: UUID, userId: String) -> String {
        "callback:\(deliveryId.lowercasedString):\(userId)"
    }

    /// The ids of every share of this share's delivery, in part order.
    public var shareIds: [String] { (0..<parts).map { Self.jobId(deliveryId, part: $0) } }

    /// The share as the outbox job that stores it; `url` is the part's callback URL ("" for none).
    public func job(appId: UUID, url: String, headers: [String: String], maxAttempts: Int, at: Date) -> OutboxJob {
        OutboxJob(id: Self.jobId(deliveryId, part: part), kind: Self.jobKind, appId: appId, url: url, headers: headers,
                  body: body, maxAttempts: maxAttempts, nextAttemptAt: at, createdAt: at)
    }

    /// The share as JSON, as `init(job:)` reads it.
    var body: Data {
        var w = JSONWriter(capacity: 128 + users.count * 96)
        w.beginObject()
        w.key("deliveryId")
        w.uuid(deliveryId)
        w.field("part", part)
        w.field("parts", parts)
        w.field("kind", kind.rawValue)
        w.field("ticketId", ticketId)
        w.field("message", message)
        w.key("users")
        w.beginArray()
        for user in users {
            w.beginObject()
            w.field("userId", user.userId)
            w.key("devices")
            w.beginArray()
            for device in user.devices {
                w.beginObject()
                w.field("token", device.token)
                w.field("platform", device.platform.rawValue)
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.data
    }

    /// The share a stored share job holds.
    public init(job: OutboxJob) throws {
        do {
            self = try Self.decoder.decode(CallbackShare.self, from: job.body)
        } catch {
            throw ProjectionStoreError.database("outbox job '\(job.id)' holds no callback share: \(error)")
        }
    }

    /// One callback job per user with a device in any of `shares`, in user id order, listing
    /// the user's devices by token; sent to `url` with `headers`, due at `at`.
    public static func callbacks(_ shares: [CallbackShare], appId: UUID, url: String, headers: [String: String], maxAttempts: Int,
                                 at: Date, state: OutboxState = .pending) -> [OutboxJob] {
        guard let first = shares.first else { return [] }
        var byUser: [String: [Device]] = [:]
        for share in shares {
            for user in share.users { byUser[user.userId, default: []] += user.devices }
        }
        var headers = headers
        headers["Content-Type"] = "application/json"
        headers["Accept"] = "application/json"
        return byUser.keys.sorted().compactMap { userId in
            let devices = byUser[userId]!.sorted { $0.token < $1.token }
            guard !devices.isEmpty else { return nil }
            let body = AppCallback.body(userId: userId, devices: devices.map { ($0.token, $0.platform) }, kind: first.kind,
                                        ticketId: first.ticketId, message: first.message)
            return OutboxJob(id: callbackId(first.deliveryId, userId: userId), kind: callbackKind, appId: appId, url: url,
                             headers: headers, body: body, maxAttempts: maxAttempts, nextAttemptAt: at, state: state, createdAt: at)
        }
    }

    /// What merging a delivery's stored share jobs writes: nothing while a share is missing or
    /// once they were merged. Else the callbacks of all shares (`callbacks`), to part 0's URL and
    /// headers with part 0's retries (no callbacks when part 0's view of the app has no URL), and
    /// each share again as `delivered`: merged. The callbacks are `pending` when a share is (a
    /// live part completed them), else `replayed` (a rebuild's, which no dispatcher sends).
    public static func merge(_ jobs: [OutboxJob]) throws -> [Mutation] {
        let shareJobs = jobs.filter { $0.kind == jobKind }.sorted { $0.id < $1.id }
        guard !shareJobs.isEmpty, shareJobs.allSatisfy({ $0.state == .pending || $0.state == .replayed }) else { return [] }
        let shares = try shareJobs.map(CallbackShare.init(job:)).sorted { $0.part < $1.part }
        guard shares.map(\.part) == Array(0..<shares[0].parts), shares.allSatisfy({ $0.parts == shares[0].parts }),
              let zero = shareJobs.first(where: { $0.id == shares[0].shareIds[0] }) else { return [] }
        var mutations: [Mutation] = []
        if !zero.url.isEmpty, let appId = zero.appId {
            let state: OutboxState = shareJobs.contains { $0.state == .pending } ? .pending : .replayed
            mutations += callbacks(shares, appId: appId, url: zero.url, headers: zero.headers, maxAttempts: zero.maxAttempts,
                                   at: zero.nextAttemptAt, state: state).map(Mutation.enqueueOutbox)
        }
        for var job in shareJobs {
            job.state = .delivered
            mutations.append(.restoreOutbox(job))
        }
        return mutations
    }

    /// The delivery groups of the shares `mutations` enqueue, each as the ids of all of its
    /// shares, in id order: what a commit looks up to merge.
    public static func groups(enqueuedBy mutations: [Mutation]) throws -> [[String]] {
        var groups: [String: [String]] = [:]
        for case .enqueueOutbox(let job) in mutations where job.kind == jobKind {
            let share = try CallbackShare(job: job)
            groups[share.shareIds[0]] = share.shareIds
        }
        return groups.keys.sorted().map { groups[$0]! }
    }

    private static let decoder = WireJSON.decoder()
}
