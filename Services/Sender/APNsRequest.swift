import Contracts
import Crypto
import Foundation
import WireCodec

/// One push to APNs: the path, headers and body of a `POST` to the provider API
/// (docs/ARCHITECTURE.md#delivery). The `authorization` header is added when it is sent.
public struct APNsRequest: Sendable, Equatable {
    public var path: String
    /// In the order they are sent.
    public var headers: [(name: String, value: String)]
    public var body: Data

    public static func == (a: APNsRequest, b: APNsRequest) -> Bool {
        a.path == b.path && a.body == b.body && a.headers.map { "\($0.name): \($0.value)" } == b.headers.map { "\($0.name): \($0.value)" }
    }

    /// The request for an outbound record, to the app of `bundleId`.
    ///
    /// - `apns-push-type` is `background` (priority 5, as Apple requires) for a payload that only
    ///   wakes the app (`content-available` without alert, badge or sound), else `alert`, at
    ///   priority 10, or 5 when the send's `priority` is `normal`.
    /// - `apns-collapse-id` is the send's `collapseKey`, when it has one.
    /// - `apns-id` is derived from the record's message id (`apnsId(messageId:)`): a record sent
    ///   again is the same push to Apple and to the app.
    /// - `apns-expiration` is set when the record expires (seconds since 1970), else left out.
    public static func make(_ record: OutboundPush, bundleId: String, expiresAt: Date? = nil) throws -> APNsRequest {
        guard record.contents.isObject else {
            throw ProviderRequestError.badRecord("the payload is not a JSON object")
        }
        let background = record.contents.wakesOnly
        var headers: [(name: String, value: String)] = [
            ("apns-topic", bundleId),
            ("apns-push-type", background ? "background" : "alert"),
            ("apns-priority", background || record.priority == .normal ? "5" : "10"),
            ("apns-id", apnsId(messageId: record.messageId)),
        ]
        if let collapseKey = record.collapseKey { headers.append(("apns-collapse-id", collapseKey)) }
        if let expiresAt { headers.append(("apns-expiration", String(Int(expiresAt.timeIntervalSince1970)))) }
        // The rendered payload is the body, byte for byte.
        return APNsRequest(path: "/3/device/\(record.deviceToken)", headers: headers, body: record.payload)
    }

    /// A UUID made of the SHA-256 of the message id (version 8, RFC 9562's custom layout):
    /// the same message id always gives the same `apns-id`.
    public static func apnsId(messageId: String) -> String {
        var bytes = Array(SHA256.hash(data: Data("pushline/apns-id/\(messageId)".utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        // Written by hand: `String(format:)` per byte was a tenth of the sender's CPU
        // (docs/BENCHMARKS.md, "Sender").
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
