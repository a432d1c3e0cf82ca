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
    ///
    /// Where the app requires verified identity, the caller proves it is the device's user:
    /// `X-Pushline-User-Id` and its assertion in `X-Pushline-User-Assertion` (403 without, or
    /// with a wrong one), and only a device registered to that user has a list; any other
    /// answers an empty one, as an unknown device does, so that nothing tells them apart.
    @Sendable func pendingNotifications(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let raw = context.parameters.get("deviceToken") ?? ""
        let deviceToken = try FieldRules.deviceToken(raw.removingPercentEncoding ?? raw, field: "deviceToken")
        let device = DeviceKey(appId: auth.mobileAppId, deviceToken: deviceToken)
        let claimedUser = request.headers[.userId].nonEmpty
        let assertion = request.headers[.userAssertion]
        if auth.app.identityRequired && claimedUser == nil {
            throw IngestError.rejected(.forbidden, Problem(
                error: "this app requires the device's user id and its user assertion to read a pending list", field: UserIdentity.userIdHeader, code: .userAssertionRequired))
        }
        let verified = try claimedUser.map {
            try identity.verify(app: auth.app, userId: $0, assertion: assertion, field: UserIdentity.assertionHeader, context: context)
        } ?? false
        let rows = try await readStore(context) { () -> [PendingNotificationRow] in
            if verified {
                guard try await store.device(device)?.userId == claimedUser else { return [] }
            }
            return try await store.pendingNotifications(device)
        }
        let list = BWDeviceAPI.PendingList(ns: rows.map { row in
            let sentAtMillis = Int64((row.sentAt.timeIntervalSince1970 * 1000).rounded())
            return [row.notificationId, String(sentAtMillis), row.text] + (row.businessId.map { [$0] } ?? [])
        })
        return try JSONResponse.make(list, status: .ok, encoder: WireJSON.encoder())
    }
}
