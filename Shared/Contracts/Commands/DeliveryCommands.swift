import Foundation
import WireCodec

/// How one push ended at its provider.
public enum DeliveryOutcome: String, Codable, Sendable, CaseIterable {
    /// The provider accepted it for the device.
    case delivered
    /// Refused for good, for a reason that is not the device's token (or the retries ran out).
    case failed
    /// The device's token is dead: the processor retires the device.
    case unregistered
}

/// The sender's report of how one outbound record ended (docs/ARCHITECTURE.md#delivery), keyed
/// by device so that one device's outcomes are applied in the order they happened. The
/// processor counts it against its delivery and, for `unregistered`, retires the device unless
/// it was registered again after `invalidSince`.
public struct DeliveryResultReported: DeviceScopedCommand, Equatable {
    public static let type = CommandType.deliveryResultReported
    public static let topic = CommandTopic.delivery

    @LowercaseUUID public var mobileAppId: UUID
    public var deviceToken: String
    public var platform: Platform
    /// Absent for a badge update, which belongs to no delivery.
    @LowercaseOptionalUUID public var deliveryId: UUID?
    public var messageId: String
    public var outcome: DeliveryOutcome
    /// The provider's reason (`Unregistered`, `BadDeviceToken`, `UNREGISTERED`, `PayloadTooLarge`, …).
    public var reason: String?
    /// The HTTP status of the last attempt; absent when no answer came (connection errors).
    public var status: Int?
    /// Attempts made, this one included.
    public var attempts: Int
    /// Since when the provider says the token is invalid (APNs's `timestamp` of a 410); absent:
    /// since the attempt, the command's time.
    public var invalidSince: Date?

    public init(mobileAppId: UUID, deviceToken: String, platform: Platform, deliveryId: UUID?, messageId: String,
                outcome: DeliveryOutcome, reason: String? = nil, status: Int? = nil, attempts: Int = 1, invalidSince: Date? = nil) {
        self.mobileAppId = mobileAppId
        self.deviceToken = deviceToken
        self.platform = platform
        self.deliveryId = deliveryId
        self.messageId = messageId
        self.outcome = outcome
        self.reason = reason
        self.status = status
        self.attempts = attempts
        self.invalidSince = invalidSince
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
