import Contracts
import Foundation
import WireCodec

/// One push to FCM HTTP v1: `POST /v1/projects/{project}/messages:send` with
/// `{"message": {"token", "data", "android": {"priority", "collapse_key", "ttl"}}}`. Pushline's
/// FCM payloads are data messages (`data` holds strings only); the record's `priority` and
/// `collapseKey` (also in the rendered payload, where records written before they were in the
/// record have them) become the Android options.
public struct FCMRequest: Sendable, Equatable {
    public var path: String
    public var body: Data

    public static func make(_ record: OutboundPush, projectId: String, expiresAt: Date? = nil, now: Date = Date()) throws -> FCMRequest {
        let contents = record.contents
        guard contents.isObject else {
            throw ProviderRequestError.badRecord("the payload is not a JSON object")
        }
        let priority = record.priority?.rawValue ?? contents.priority, collapseKey = record.collapseKey ?? contents.collapseKey
        var w = JSONWriter(capacity: record.payload.count + 256)
        w.beginObject()
        w.key("message")
        w.beginObject()
        w.field("token", record.deviceToken)
        if let data = contents.data {
            // The payload's `data` as rendered.
            w.key("data")
            w.raw(data)
        }
        if priority != nil || collapseKey != nil || expiresAt != nil {
            w.key("android")
            w.beginObject()
            w.field("priority", priority.map { $0 == "high" ? "HIGH" : "NORMAL" })
            w.field("collapse_key", collapseKey)
            w.field("ttl", expiresAt.map { "\(max(0, Int($0.timeIntervalSince(now).rounded(.up))))s" })
            w.endObject()
        }
        w.endObject()
        w.endObject()
        return FCMRequest(path: "/v1/projects/\(projectId)/messages:send", body: w.data)
    }
}
