import Foundation
import WireCodec

/// The body of the app callback (docs/API.md#app-callbacks), POSTed once per user for `ticket` and
/// `im` notifications:
/// `{"user":{"user_id":123},"device":[{"device_token":"…","type":"IOS"}],"notification":{"ticket_id":"123","type":"ticket"}}`.
public enum AppCallback {
    /// `ticket_id` is written for `.ticket`, `message` for `.im` (each only when set).
    public static func body(userId: String, devices: [(token: String, platform: Platform)], kind: NotificationKind,
                            ticketId: String?, message: String?) -> Data {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("user")
        w.beginObject()
        w.key("user_id")
        // The KF5 user_id is an integer; ids that are not one stay strings rather than fail.
        if let number = integerUserId(userId) {
            w.raw(number.utf8)
        } else {
            w.string(userId)
        }
        w.endObject()
        w.key("device")
        w.beginArray()
        for device in devices {
            w.beginObject()
            w.field("device_token", device.token)
            w.field("type", platformType(device.platform))
            w.endObject()
        }
        w.endArray()
        w.key("notification")
        w.beginObject()
        switch kind {
        case .ticket: w.field("ticket_id", ticketId)
        case .im: w.field("message", message)
        case .alert: break
        }
        w.field("type", kind.rawValue)
        w.endObject()
        w.endObject()
        return w.data
    }

    /// The device `type` of the KF5 callback, also the BW device service's `type`.
    public static func platformType(_ platform: Platform) -> String {
        switch platform {
        case .ios: "IOS"
        case .android: "ANDROID"
        }
    }

    /// `userId` when it is the canonical decimal form of an Int64 (what `String(Int64)` gives:
    /// no `+`, no leading zero, no `-0`), else nil.
    static func integerUserId(_ userId: String) -> String? {
        guard let value = Int64(userId), String(value) == userId else { return nil }
        return userId
    }
}
