import Foundation
import WireCodec

/// How one push ended at its provider.
public enum DeliveryOutcome: String, Codable, Sendable, CaseIterable {
    /// The provider accepted it for the device.
    case delivered
    /// Refused for good, for a reason that is not the device's token.
    case failed
    /// The device's token is dead: the processor retires the device.
    case unregistered
    /// Its time to live ran out before a provider took it: the sender never hands a push over
    /// after its expiry.
    case expired
}

extension DeliveryOutcome: WireDecodable {}

/// How many of a delivery's devices (of one locale) ended in each outcome, by the last report
/// of each (docs/API.md#delivery-outcomes).
public struct OutcomeCounts: Codable, Sendable, Equatable {
    public var delivered: Int
    public var failed: Int
    public var unregistered: Int
    public var expired: Int

    public init(delivered: Int = 0, failed: Int = 0, unregistered: Int = 0, expired: Int = 0) {
        self.delivered = delivered
        self.failed = failed
        self.unregistered = unregistered
        self.expired = expired
    }

    private enum CodingKeys: String, CodingKey { case delivered, failed, unregistered, expired }

    /// `expired` may be absent: counts written before pushes could expire have none.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(delivered: try c.decode(Int.self, forKey: .delivered), failed: try c.decode(Int.self, forKey: .failed),
                  unregistered: try c.decode(Int.self, forKey: .unregistered),
                  expired: try c.decodeIfPresent(Int.self, forKey: .expired) ?? 0)
    }

    public subscript(outcome: DeliveryOutcome) -> Int {
        get {
            switch outcome {
            case .delivered: delivered
            case .failed: failed
            case .unregistered: unregistered
            case .expired: expired
            }
        }
        set {
            switch outcome {
            case .delivered: delivered = newValue
            case .failed: failed = newValue
            case .unregistered: unregistered = newValue
            case .expired: expired = newValue
            }
        }
    }

    /// Moves one device from the count of `from` (nil: not counted yet) to that of `to`.
    public mutating func recount(from: DeliveryOutcome?, to: DeliveryOutcome) {
        if let from { self[from] -= 1 }
        self[to] += 1
    }

    public static func + (a: OutcomeCounts, b: OutcomeCounts) -> OutcomeCounts {
        OutcomeCounts(delivered: a.delivered + b.delivered, failed: a.failed + b.failed, unregistered: a.unregistered + b.unregistered,
                      expired: a.expired + b.expired)
    }
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
    /// The variant of a localized send the push carried (its outbound record's `locale`); absent
    /// for a send without localized text.
    public var locale: String?

    public init(mobileAppId: UUID, deviceToken: String, platform: Platform, deliveryId: UUID?, messageId: String,
                outcome: DeliveryOutcome, reason: String? = nil, status: Int? = nil, attempts: Int = 1, invalidSince: Date? = nil,
                locale: String? = nil) {
        self.locale = locale
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

extension DeliveryResultReported: WireDecodable {
    private enum Key: String, CaseIterable {
        case mobileAppId, deviceToken, platform, deliveryId, messageId, outcome, reason, status, attempts, invalidSince, locale
    }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var mobileAppId: UUID?, deviceToken: String?, platform: Platform?, deliveryId: UUID?, messageId: String?
        var outcome: DeliveryOutcome?, reason: String?, status: Int?, attempts: Int?, invalidSince: Date?, locale: String?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .mobileAppId: reader.read(&mobileAppId)
            case .deviceToken: reader.read(&deviceToken)
            case .platform: reader.read(&platform)
            case .deliveryId: reader.readOptional(&deliveryId)
            case .messageId: reader.read(&messageId)
            case .outcome: reader.read(&outcome)
            case .reason: reader.readOptional(&reason)
            case .status: reader.readOptional(&status)
            case .attempts: reader.read(&attempts)
            case .invalidSince: reader.readOptional(&invalidSince)
            case .locale: reader.readOptional(&locale)
            }
        }), let mobileAppId, let deviceToken, let platform, let messageId, let outcome, let attempts else { return nil }
        self.init(mobileAppId: mobileAppId, deviceToken: deviceToken, platform: platform, deliveryId: deliveryId, messageId: messageId,
                  outcome: outcome, reason: reason, status: status, attempts: attempts, invalidSince: invalidSince, locale: locale)
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
        writer.field("locale", locale)
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
