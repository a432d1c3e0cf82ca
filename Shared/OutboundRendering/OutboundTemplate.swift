import Contracts
import Foundation
import Synchronization
import WireCodec

/// The outbound records of one send for one platform (and one managed badge), rendered once with
/// placeholders where the device token and message id go, then written per device by copying
/// bytes: a large fan-out costs a few copies per device instead of a full render.
///
/// The output is byte-identical to `OutboundRecord.notification` (tested).
public struct OutboundTemplate: Sendable {
    private enum Part: Sendable {
        case bytes([UInt8])
        case deviceToken
        case messageId
    }

    private let parts: [Part]
    private let series: MessageId.Series
    /// The bytes every record shares.
    private let size: Int

    /// `series`: the delivery's message ids (`MessageId.Series`, keyed when the send names a key),
    /// made once per delivery by the caller; `locale`: as `OutboundRecord.notification` has it.
    public init(_ n: NotificationRequested, platform: Platform, sentAt: Date, managedBadge: Int?, series: MessageId.Series,
                locale: String? = nil) {
        self.series = series
        // Placeholders are random hex (never escaped). Content that happened to contain one
        // would change the number of occurrences; a new pair is drawn then.
        while true {
            let token = Self.placeholder(), message = Self.placeholder()
            let rendered = OutboundRecord.notification(n, deviceToken: token, platform: platform, messageId: message,
                                                       sentAt: sentAt, managedBadge: managedBadge, locale: locale)
            if let parts = Self.split(Array(rendered), token: Array(token.utf8), message: Array(message.utf8)) {
                self.parts = parts
                size = parts.reduce(0) { if case .bytes(let b) = $1 { $0 + b.count } else { $0 } }
                return
            }
        }
    }

    /// The record of the device at `index` of the delivery, as a Kafka record value.
    public func record(deviceToken: String, index: Int) -> Data {
        var writer = JSONWriter(capacity: size + deviceToken.utf8.count + 64)
        render(deviceToken: deviceToken, index: index, into: &writer)
        return writer.data
    }

    /// Appends the record of the device at `index` of the delivery to `bytes`.
    public func render(deviceToken: String, index: Int, appendingTo bytes: inout [UInt8]) {
        var writer = JSONWriter(appendingTo: &bytes)
        render(deviceToken: deviceToken, index: index, into: &writer)
        bytes = writer.bytes
    }

    /// Writes the record of the device at `index` of the delivery into `w`.
    public func render(deviceToken: String, index: Int, into w: inout JSONWriter) {
        for part in parts {
            switch part {
            case .bytes(let bytes): w.appendVerbatim(bytes)
            case .deviceToken: w.appendEscapedContent(deviceToken)
            case .messageId: w.appendMessageId(series, index: index)
            }
        }
        w.endValue()
    }

    /// A placeholder: the process's random prefix, then a number never drawn before in it, then
    /// `q` (so that no placeholder begins another). Content cannot hold one but by chance (the
    /// prefix is 128 random bits); a template is made per send, so a draw costs no system call.
    private static func placeholder() -> String {
        placeholderPrefix + String(placeholdersDrawn.add(1, ordering: .relaxed).newValue, radix: 16) + "q"
    }

    private static let placeholderPrefix: String = {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(generator.next() as UInt64, radix: 16) }.joined() + "p"
    }()
    private static let placeholdersDrawn = Atomic<UInt64>(0)

    /// Cuts the rendered record at the placeholders: the token occurs once (the record's
    /// `deviceToken`), the message id twice (`messageId` and the payload's `_mId`).
    private static func split(_ rendered: [UInt8], token: [UInt8], message: [UInt8]) -> [Part]? {
        var parts: [Part] = []
        var tokens = 0, messages = 0
        var start = 0, i = 0
        while i < rendered.count {
            let kind: Part? = rendered[i...].starts(with: token) ? .deviceToken : rendered[i...].starts(with: message) ? .messageId : nil
            guard let kind else {
                i += 1
                continue
            }
            parts.append(.bytes(Array(rendered[start..<i])))
            parts.append(kind)
            if case .deviceToken = kind { tokens += 1; i += token.count } else { messages += 1; i += message.count }
            start = i
        }
        parts.append(.bytes(Array(rendered[start...])))
        return tokens == 1 && messages == 2 ? parts : nil
    }
}

extension JSONWriter {
    /// Appends the message id `index` of `series`, without quotes or separator.
    fileprivate mutating func appendMessageId(_ series: MessageId.Series, index: Int) {
        appendVerbatim { series.append(index: index, to: &$0) }
    }
}
