import Foundation
import Synchronization

/// A push a mock server answered, as its observer is told (`MockAPNsServer.setPushObserver`,
/// `MockFCMServer.setPushObserver`): enough to tell which device got which message, and whether
/// a repeat was the same push, without keeping the request.
public struct AnsweredPush: Sendable, Equatable {
    public enum Provider: String, Sendable {
        case apns, fcm
    }

    public var provider: Provider
    /// The APNs device token of the path, or FCM's `message.token`; empty when there was none.
    public var deviceToken: String
    public var status: Int
    /// APNs: the `apns-id` answered (the request's, else a new one).
    public var apnsId: String?
    /// FCM: the message name answered on success (a new one for every send, as Google's).
    public var messageName: String?
    /// Pushline's delivery and message ids in the payload (`_dId`, `_mId`: the APNs body's top
    /// level, FCM's `message.data`); nil when the payload has none (a badge update).
    public var deliveryId: String?
    public var messageId: String?

    public init(provider: Provider, deviceToken: String, status: Int, apnsId: String? = nil, messageName: String? = nil,
                deliveryId: String? = nil, messageId: String? = nil) {
        self.provider = provider
        self.deviceToken = deviceToken
        self.status = status
        self.apnsId = apnsId
        self.messageName = messageName
        self.deliveryId = deliveryId
        self.messageId = messageId
    }

    /// `_dId` and `_mId` of an APNs body or of an FCM send's `message.data`; nils where absent.
    static func pushlineIds(_ body: Data?, provider: Provider) -> (deliveryId: String?, messageId: String?) {
        guard let body, var object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else { return (nil, nil) }
        if provider == .fcm {
            object = ((object["message"] as? [String: Any])?["data"] as? [String: Any]) ?? [:]
        }
        return (object["_dId"] as? String, object["_mId"] as? String)
    }
}

/// `pushline-mocks --push-log FILE`: one JSON object a line per push answered, appended as it is
/// answered, so that a benchmark can tell which devices got what, and which pushes were repeats:
///
///     {"at":1764380000.123,"provider":"apns","deviceToken":"…","status":200,"apnsId":"…","deliveryId":"…","messageId":"0-…"}
///
/// `at` is seconds since 1970; members that are nil are left out.
public final class PushLog: Sendable {
    private let file: Mutex<FileHandle>

    /// Appends to `path`, creating it.
    public init(path: String) throws {
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
            }
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        file = Mutex(handle)
    }

    public func append(_ push: AnsweredPush, at date: Date = Date()) {
        let line = Data((Self.line(push, at: date) + "\n").utf8)
        file.withLock { $0.write(line) }
    }

    /// The line of `push` answered at `date`, without its newline.
    public static func line(_ push: AnsweredPush, at date: Date) -> String {
        var members: [String: Any] = [
            "at": (date.timeIntervalSince1970 * 1000).rounded() / 1000, "provider": push.provider.rawValue,
            "deviceToken": push.deviceToken, "status": push.status,
        ]
        members["apnsId"] = push.apnsId
        members["messageName"] = push.messageName
        members["deliveryId"] = push.deliveryId
        members["messageId"] = push.messageId
        // Plain strings and numbers: serialising them cannot fail.
        let data = try! JSONSerialization.data(withJSONObject: members, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }
}
