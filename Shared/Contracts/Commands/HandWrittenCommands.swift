import Foundation

// The payloads of the high-volume routes' commands, written by hand (`HandWrittenCommand`): keys
// in the sorted order `WireJSON.encoder()` writes, nil fields left out, as their synthesized
// `Codable` conformances encode them. A field added to one of these types must be added here
// too: `HandWrittenCommandsTests.testHandWrittenCommandsAreWhatTheEncoderWrites` fails until it is.

extension DeviceRegistrationRequested: HandWrittenCommand {
    public func writePayload(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("apiTokenHash")
        writer.string(apiTokenHash)
        if let callback {
            writer.key("callback")
            writer.beginObject()
            writer.key("headers")
            writer.object(callback.headers)
            writer.key("signature")
            writer.string(callback.signature)
            writer.key("url")
            writer.string(callback.url)
            writer.endObject()
        }
        writer.key("deviceToken")
        writer.string(deviceToken)
        writer.key("mobileAppId")
        writer.uuid(mobileAppId)
        writer.key("orgId")
        writer.uuid(orgId)
        writer.key("platform")
        writer.string(platform.rawValue)
        writer.key("registrationRequestId")
        writer.uuid(registrationRequestId)
        writer.key("trackStatus")
        writer.bool(trackStatus)
        writer.key("userId")
        writer.string(userId)
        writer.endObject()
    }
}

extension DeviceCleanupRequested: HandWrittenCommand {
    public func writePayload(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("apiTokenHash")
        writer.string(apiTokenHash)
        writer.field("deviceToken", deviceToken)
        writer.key("mobileAppId")
        writer.uuid(mobileAppId)
        writer.key("orgId")
        writer.uuid(orgId)
        writer.key("userId")
        writer.string(userId)
        writer.endObject()
    }
}

extension NotificationAcknowledged: HandWrittenCommand {
    public func writePayload(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.field("businessId", businessId)
        writer.key("deviceToken")
        writer.string(deviceToken)
        writer.key("mobileAppId")
        writer.uuid(mobileAppId)
        writer.key("notificationId")
        writer.string(notificationId)
        writer.endObject()
    }
}

extension DeliveryResultReported: HandWrittenCommand {
    public func writePayload(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("attempts")
        writer.int(attempts)
        if let deliveryId {
            writer.key("deliveryId")
            writer.uuid(deliveryId)
        }
        writer.key("deviceToken")
        writer.string(deviceToken)
        if let invalidSince {
            writer.key("invalidSince")
            writer.date(invalidSince)
        }
        writer.key("messageId")
        writer.string(messageId)
        writer.key("mobileAppId")
        writer.uuid(mobileAppId)
        writer.key("outcome")
        writer.string(outcome.rawValue)
        writer.key("platform")
        writer.string(platform.rawValue)
        writer.field("reason", reason)
        writer.field("status", status)
        writer.endObject()
    }
}

extension TrackingReported: HandWrittenCommand {
    public func writePayload(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("deliveryId")
        writer.uuid(deliveryId)
        writer.key("events")
        writer.beginArray()
        for event in events {
            writer.beginArray()
            writer.string(event.broadlogId)
            writer.int(event.action.rawValue)
            writer.endArray()
        }
        writer.endArray()
        writer.key("mobileAppId")
        writer.uuid(mobileAppId)
        writer.endObject()
    }
}

extension NotificationRequested: HandWrittenCommand {
    public func writePayload(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.field("businessId", businessId)
        writer.key("content")
        content.write(to: &writer)
        writer.key("deliveryId")
        writer.uuid(deliveryId)
        writer.field("idempotencyKey", idempotencyKey)
        writer.key("kind")
        writer.string(kind.rawValue)
        writer.key("managed")
        writer.bool(managed)
        writer.field("message", message)
        writer.key("mobileAppId")
        writer.uuid(mobileAppId)
        writer.field("requestHash", requestHash)
        writer.key("target")
        writer.beginObject()
        writer.key("deviceTokens")
        writer.strings(target.deviceTokens)
        writer.key("userIds")
        writer.strings(target.userIds)
        writer.endObject()
        writer.field("ticketId", ticketId)
        writer.key("tracking")
        writer.bool(tracking)
        writer.endObject()
    }
}

extension NotificationContent {
    fileprivate func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.field("badge", badge)
        writer.field("body", body)
        writer.field("category", category)
        writer.field("collapseKey", collapseKey)
        writer.field("contentAvailable", contentAvailable)
        if let custom {
            writer.key("custom")
            writer.object(custom)
        }
        writer.field("mediaAttachmentUrl", mediaAttachmentUrl)
        writer.field("mutableContent", mutableContent)
        writer.field("priority", priority?.rawValue)
        writer.field("sound", sound)
        writer.field("text", text)
        writer.field("timeToLive", timeToLive)
        writer.field("title", title)
        writer.field("uri", uri)
        writer.endObject()
    }
}
