import Contracts
import Foundation
import Hummingbird
import Projections
import WireCodec

/// The BW managed-notification routes (docs/API.md#managed-notifications-and-acknowledgements): a
/// device acknowledges a notification, and lists the ones it has not acknowledged yet.
extension BWDeviceRoutes {
    /// `PUT /acks` `{"nid", "did", "bid"?}` → 201, empty. Pushline's `nid`s are delivery ids, so
    /// `nid` must be a UUID; it is stored lower-case, as it was sent in the payload.
    @Sendable func acknowledge(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let ack = try JSONBody.decode(BWDeviceAPI.Ack.self, from: body, decoder: WireJSON.decoder())
        let nid = try FieldRules.uuid(ack.nid, field: "nid")
        let did = try FieldRules.deviceToken(ack.did, field: "did")
        if let bid = ack.bid { try FieldRules.bounded(bid, maxBytes: FieldLimits.shortTextBytes, field: "bid") }

        let command = NotificationAcknowledged(mobileAppId: auth.mobileAppId, notificationId: nid.uuidString.lowercased(),
                                               deviceToken: did, businessId: ack.bid.nonEmpty)
        try await writer.publish(command, context: context)
        return Response(status: .created)
    }

    /// `GET /devices/{deviceToken}/notifications` → `200 {"ns": [[nid, sentAt millis, text, bid?], …]}`,
    /// oldest first, as the projection store has them now; an unknown device has none.
    @Sendable func pendingNotifications(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let raw = context.parameters.get("deviceToken") ?? ""
        let deviceToken = try FieldRules.deviceToken(raw.removingPercentEncoding ?? raw, field: "deviceToken")
        let rows = try await readStore(context) {
            try await store.pendingNotifications(DeviceKey(appId: auth.mobileAppId, deviceToken: deviceToken))
        }
        let list = BWDeviceAPI.PendingList(ns: rows.map { row in
            let sentAtMillis = Int64((row.sentAt.timeIntervalSince1970 * 1000).rounded())
            return [row.notificationId, String(sentAtMillis), row.text] + (row.businessId.map { [$0] } ?? [])
        })
        return try JSONResponse.make(list, status: .ok, encoder: WireJSON.encoder())
    }
}
