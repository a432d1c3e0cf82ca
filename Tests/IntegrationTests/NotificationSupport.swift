import Contracts
import Foundation
import NIOHTTP1
import TestSupport
import WireCodec
import XCTest

/// Calls of the Bearer-authenticated client routes and readers of the outbound topic.
extension PushlineStack {
    /// A JSON request to an ingest path with the app's API token (and `headers`).
    func call(_ method: HTTPMethod, _ path: String, json: Any? = nil, token: String,
              headers: [String: String] = [:]) async throws -> HTTPClientHelpers.Answer {
        let body = try json.map { try JSONSerialization.data(withJSONObject: $0) }
        return try await HTTPClientHelpers.request(method, "\(ingestURL)\(path)", body: body,
                                                   headers: headers.merging(["Authorization": "Bearer \(token)"]) { $1 })
    }

    /// Registers devices through the KF5 route, `(user, token, type)` each, expecting 201.
    func registerKF5(_ devices: [(user: String, token: String, type: String)], app: AdminAPI.AppCreatedAnswer) async throws {
        for d in devices {
            let answer = try await call(.POST, "/kf5/v1/apps/\(app.mobileAppId)/tokens",
                                        json: ["userToken": d.user, "deviceToken": d.token, "type": d.type], token: app.apiToken)
            guard answer.status == 201 else { throw TestFailure("KF5 save answered \(answer.status): \(answer.text)") }
        }
    }

    /// Registers `count` devices, one per user `u-<n>`, half iOS and half Android, through the
    /// registration API's batch route.
    func registerDevices(_ count: Int, app: AdminAPI.AppCreatedAnswer) async throws -> [String] {
        var tokens: [String] = []
        for start in stride(from: 0, to: count, by: 100) {
            let batch = (start..<min(start + 100, count)).map { n in
                DeviceRegistrationAPI.Registration(MobileAppId: app.mobileAppId.uuidString, UserId: "u-\(n)", ApiToken: app.apiToken,
                                                   ApnsDeviceToken: n % 2 == 0 ? Tokens.apns(n) : nil, FcmDeviceToken: n % 2 == 0 ? nil : Tokens.fcm(n))
            }
            tokens += batch.map { $0.ApnsDeviceToken ?? $0.FcmDeviceToken! }
            let answer = try await HTTPClientHelpers.post(registrationURL(org: app.orgId, "devices/batch"), json: batch)
            guard answer.status == 202 else { throw TestFailure("batch registration answered \(answer.status): \(answer.text)") }
        }
        try await waitForDevices(count, app: app.mobileAppId)
        return tokens
    }

    /// Sends a notification and returns its delivery id.
    func send(_ body: [String: Any], app: AdminAPI.AppCreatedAnswer) async throws -> UUID {
        let answer = try await call(.POST, "/v1/apps/\(app.mobileAppId)/notifications", json: body, token: app.apiToken)
        guard answer.status == 202 else { throw TestFailure("send answered \(answer.status): \(answer.text)") }
        let id = try answer.decode(NotificationAPI.SendAccepted.self).deliveryId
        guard let deliveryId = UUID(uuidString: id), id == id.lowercased() else { throw TestFailure("not a lower-case UUID: \(id)") }
        return deliveryId
    }

    /// Waits until the app has `count` devices in the store.
    func waitForDevices(_ count: Int, app: UUID, timeout: Duration = .seconds(60)) async throws {
        try await eventually("\(count) devices projected", timeout: timeout) {
            try await self.sqlite("SELECT COUNT(*) FROM devices WHERE app_id = '\(app.uuidString.lowercased())'") == ["\(count)"]
        }
    }

    /// Every record of the outbound topic, read with kcat, as its raw value and decoded.
    func outboundRecords() async throws -> [(raw: String, record: OutboundRecordView)] {
        let out = try await broker.kcat(["-C", "-t", topics.outbound, "-o", "beginning", "-e", "-q", "-f", "%s\\n"])
        return try out.split(separator: "\n").map { line in
            (String(line), try JSONDecoder().decode(OutboundRecordView.self, from: Data(line.utf8)))
        }
    }

    /// Waits until the outbound topic holds at least `count` records and returns them.
    @discardableResult
    func waitForOutbound(_ count: Int, timeout: Duration = .seconds(60)) async throws -> [(raw: String, record: OutboundRecordView)] {
        var records: [(raw: String, record: OutboundRecordView)] = []
        try await eventually("\(count) outbound records", timeout: timeout) {
            records = try await self.outboundRecords()
            return records.count >= count
        }
        return records
    }

    /// The number of records in the outbound topic: the sum of its partitions' end offsets
    /// (kcat -Q), cheap enough to poll.
    func outboundEndOffset(partitions: Int = 6) async throws -> Int {
        let arguments = (0..<partitions).flatMap { ["-t", "\(topics.outbound):\($0):-1"] }
        let out = try await broker.kcat(["-Q"] + arguments)
        return out.split(separator: "\n").compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
    }

    /// Writes a command straight to its topic, as ingest would have (to stage an order of
    /// arrival that ingest alone would not produce).
    func produce<C: Command>(_ command: C) async throws {
        try await MixedStream.produce([EncodedCommand(command, topics: topics, encoder: WireJSON.encoder())], brokers: broker.bootstrapServers)
    }

    /// Reports tracking events (`deliveryId`, `broadlogId`, `action` each) in one request, expecting 202.
    func track(_ events: [[String: Any]], app: AdminAPI.AppCreatedAnswer, token: String? = nil) async throws {
        let answer = try await call(.POST, "/v1/apps/\(app.mobileAppId)/tracking", json: events, token: token ?? app.apiToken)
        guard answer.status == 202 else { throw TestFailure("tracking answered \(answer.status): \(answer.text)") }
    }

    /// A delivery's statistics, nil on 404.
    func stats(_ deliveryId: UUID, app: AdminAPI.AppCreatedAnswer) async throws -> TrackingAPI.DeliveryStats? {
        let answer = try await call(.GET, "/v1/apps/\(app.mobileAppId)/deliveries/\(deliveryId)", token: app.apiToken)
        if answer.status == 404 { return nil }
        guard answer.status == 200 else { throw TestFailure("stats answered \(answer.status): \(answer.text)") }
        return try answer.decode(TrackingAPI.DeliveryStats.self)
    }

    /// The value of one series of the processor's /metrics (`name{labels}`), 0 when absent.
    func processorMetric(_ series: String) async throws -> Double {
        try await HTTPClientHelpers.metric(series, of: processorURL)
    }

    /// The BW pending list of a device.
    func pendingList(app: AdminAPI.AppCreatedAnswer, device: String) async throws -> [[String]] {
        let answer = try await call(.GET, "/bwmi/v1/apps/\(app.mobileAppId)/devices/\(device)/notifications", token: app.apiToken)
        guard answer.status == 200 else { throw TestFailure("pending list answered \(answer.status): \(answer.text)") }
        let object = try JSONSerialization.jsonObject(with: answer.body) as? [String: Any]
        return object?["ns"] as? [[String]] ?? []
    }
}
