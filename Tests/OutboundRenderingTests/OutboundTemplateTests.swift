import Contracts
import Foundation
import OutboundRendering
import WireCodec
import XCTest

/// The template's per-device records are byte-identical to a full render.
final class OutboundTemplateTests: XCTestCase {
    let sentAt = Date(timeIntervalSince1970: 1_374_224_245.011)

    private func assertSameAsFullRender(_ n: NotificationRequested, managedBadge: Int? = nil, key: MessageIdKey? = nil,
                                        file: StaticString = #filePath, line: UInt = #line) {
        let tokens = [String(repeating: "ab", count: 32), "fcm:" + String(repeating: "Z", count: 140), #"odd"token\with\#nescapes"#]
        for platform in Platform.allCases {
            let template = OutboundTemplate(n, platform: platform, sentAt: sentAt, managedBadge: managedBadge,
                                            series: MessageId.Series(deliveryId: n.deliveryId, key: key))
            var writer = JSONWriter()
            for (token, index) in zip(tokens, [0, 7, 123_456]) {
                writer.reset()
                template.render(deviceToken: token, index: index, into: &writer)
                let full = OutboundRecord.notification(n, deviceToken: token, platform: platform,
                                                       messageId: MessageId.make(deliveryId: n.deliveryId, index: index, key: key),
                                                       sentAt: sentAt, managedBadge: managedBadge)
                XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), String(decoding: full, as: UTF8.self),
                               "\(platform) #\(index)", file: file, line: line)
            }
        }
    }

    func testSeedContentRendersLikeAFullRender() {
        assertSameAsFullRender(NotificationRequested(
            deliveryId: UUID(), mobileAppId: UUID(), target: NotificationTarget(userIds: ["u"]),
            content: NotificationContent(title: "Push Notification Title", body: "This is the content", sound: "default", badge: 2,
                                         category: "NEW_MESSAGE_CATEGORY", uri: "https://mydeeplinkurl.com",
                                         mediaAttachmentUrl: "https://2.img-dpreview.com/x.jpeg", contentAvailable: true,
                                         collapseKey: "1476005", priority: .high,
                                         custom: ["custom key 1": "value 1", "custom_field2": "custom_value2"])))
    }

    func testKeyedIdsRenderLikeAFullRenderWithTheKeyedId() {
        assertSameAsFullRender(NotificationRequested(deliveryId: UUID(), mobileAppId: UUID(), target: NotificationTarget(userIds: ["u"]),
                                                     content: NotificationContent(title: "t"), messageKeyId: "k"),
                               key: MessageIdKey(id: "k", bytes: Data(repeating: 7, count: 32)))
    }

    func testManagedAndEscapedContentRendersLikeAFullRender() {
        let n = NotificationRequested(deliveryId: UUID(), mobileAppId: UUID(), target: NotificationTarget(userIds: ["u"]),
                                      content: NotificationContent(text: "quote \" backslash \\ newline \n tab \t ü 🚀"),
                                      managed: true, businessId: "GATE_CHANGE", tracking: false)
        assertSameAsFullRender(n, managedBadge: 3)
    }

    func testContentThatLooksLikeAPlaceholderStillRendersRight() {
        // Hex-like content cannot be mistaken for a placeholder: the occurrence count would differ.
        let custom = Dictionary(uniqueKeysWithValues: (0..<20).map { ("k\($0)", String(UInt64.random(in: 0 ... .max), radix: 16) + "q") })
        assertSameAsFullRender(NotificationRequested(deliveryId: UUID(), mobileAppId: UUID(), target: NotificationTarget(userIds: ["u"]),
                                                     content: NotificationContent(title: "t", custom: custom)))
    }

    func testMessageIdSeriesMatchesTheOneShotIds() {
        let delivery = UUID()
        let series = MessageId.Series(deliveryId: delivery)
        for index in [0, 1, 9, 10, 99_999, Int(Int32.max)] {
            XCTAssertEqual(series.make(index: index), MessageId.make(deliveryId: delivery, index: index))
            XCTAssertEqual(MessageId.index(of: series.make(index: index), deliveryId: delivery), index)
        }
    }
}
