import Contracts
import Foundation
import OutboundRendering
import WireCodec
import XCTest

final class PushPayloadTests: XCTestCase {
    let delivery = UUID(uuidString: "0A1868E6-04C9-4D3B-8125-2F9597F68E78")!
    let d = "0a1868e6-04c9-4d3b-8125-2f9597f68e78"
    let app = UUID(uuidString: "6B1F0C2E-9A3D-4E5F-8A7B-1C2D3E4F5A6B")!
    let sentAt = Date(timeIntervalSince1970: 1_374_224_245.011)

    func notification(_ content: NotificationContent, managed: Bool = false, businessId: String? = nil,
                      tracking: Bool = true) -> NotificationRequested {
        NotificationRequested(deliveryId: delivery, mobileAppId: app, target: NotificationTarget(userIds: ["u1"]), content: content,
                              managed: managed, businessId: businessId, tracking: tracking)
    }

    func render(_ n: NotificationRequested, _ platform: Platform, messageId: String = "m1", managedBadge: Int? = nil) -> String {
        var w = JSONWriter()
        PushPayload.render(n, platform: platform, messageId: messageId, sentAt: sentAt, managedBadge: managedBadge, into: &w)
        return String(decoding: w.bytes, as: UTF8.self)
    }

    func badgeUpdate(_ platform: Platform, _ badge: Int) -> String {
        var w = JSONWriter()
        PushPayload.renderBadgeUpdate(platform: platform, badge: badge, into: &w)
        return String(decoding: w.bytes, as: UTF8.self)
    }

    // MARK: The vendor's payload examples

    var seedIOS: NotificationRequested {
        notification(NotificationContent(
            title: "Push Notification Title", body: "This is the content of my push notification", sound: "default", badge: 2,
            category: "NEW_MESSAGE_CATEGORY", uri: "https://mydeeplinkurl.com",
            mediaAttachmentUrl: "https://2.img-dpreview.com/files/p/articles/9440145363/Creative_Cloud.jpeg",
            contentAvailable: true, custom: ["custom_field2": "custom_value2", "custom_field1": "custom_value1"]))
    }

    func testSeed003IOSExampleIsReproduced() throws {
        let rendered = render(seedIOS, .ios, messageId: "h138a")
        // The vendor's example, with our ids and the tracking flag (docs/API.md#outbound-payloads).
        let expected = """
        {
            "aps":{
                    "alert":{
                            "body":"This is the content of my push notification",
                            "title":"Push Notification Title"
                    },
                    "content-available":1,
                    "category":"NEW_MESSAGE_CATEGORY",
                    "badge":2,
                    "mutable-content":1,
                    "sound":"default"
                },
            "custom_field1":"custom_value1",
            "custom_field2":"custom_value2",
            "media-attachment-url":"https://2.img-dpreview.com/files/p/articles/9440145363/Creative_Cloud.jpeg",
            "uri":"https://mydeeplinkurl.com",
            "_dId":"\(d)",
            "_mId":"h138a",
            "_acsDeliveryTracking":"on"}
        """
        XCTAssertEqual(try JSONValue.parse(rendered), try JSONValue.parse(expected))
        XCTAssertEqual(rendered, #"{"aps":{"alert":{"title":"Push Notification Title","body":"This is the content of my push notification"},"#
            + #""badge":2,"sound":"default","category":"NEW_MESSAGE_CATEGORY","content-available":1,"mutable-content":1},"#
            + #""custom_field1":"custom_value1","custom_field2":"custom_value2","#
            + #""media-attachment-url":"https://2.img-dpreview.com/files/p/articles/9440145363/Creative_Cloud.jpeg","#
            + #""uri":"https://mydeeplinkurl.com","_dId":"\#(d)","_mId":"h138a","_acsDeliveryTracking":"on"}"#)
        // content-available is the integer 1, not true.
        XCTAssertEqual(try JSONValue.parse(rendered)["aps"]?["content-available"], .number(1))
        XCTAssertLessThan(rendered.utf8.count, PushPayload.maxBytes)
    }

    func testSeed003AndroidExampleIsReproducedWithStringValues() throws {
        let n = notification(NotificationContent(
            title: "adobe title 123", body: "adobe body 123", sound: "http://testcampaign.instance.com/r/?id=s1685a5,d57fd6,d57ff5",
            badge: 1817, category: "adobe category 123", uri: "http://testcampaign.instance.com/r/?id=d1685a5,d57fd6,d57ff6",
            mediaAttachmentUrl: "http://adobegiphy.com?test=123", collapseKey: "1476005", priority: .high,
            custom: ["custom key 3": "foo bar android", "custom key 1": "value 1", "custom key 2": "test value 2"]))
        let rendered = render(n, .android, messageId: "h1685a5")
        let expected = """
        {
          "collapseKey": "1476005",
          "priority": "high",
          "data": {
            "_dId": "\(d)",
            "_mId": "h1685a5",
            "body": "adobe body 123",
            "category": "adobe category 123",
            "custom key 1": "value 1",
            "custom key 2": "test value 2",
            "custom key 3": "foo bar android",
            "media-attachment-url": "http://adobegiphy.com?test=123",
            "sound": "http://testcampaign.instance.com/r/?id=s1685a5,d57fd6,d57ff5",
            "title": "adobe title 123",
            "uri": "http://testcampaign.instance.com/r/?id=d1685a5,d57fd6,d57ff6",
            "badge": "1817",
            "_acsDeliveryTracking": "on"
          }
        }
        """
        XCTAssertEqual(try JSONValue.parse(rendered), try JSONValue.parse(expected))
        XCTAssertEqual(rendered, #"{"collapseKey":"1476005","priority":"high","data":{"_dId":"\#(d)","_mId":"h1685a5","#
            + #""title":"adobe title 123","body":"adobe body 123","category":"adobe category 123","#
            + #""custom key 1":"value 1","custom key 2":"test value 2","custom key 3":"foo bar android","#
            + #""media-attachment-url":"http://adobegiphy.com?test=123","#
            + #""sound":"http://testcampaign.instance.com/r/?id=s1685a5,d57fd6,d57ff5","#
            + #""uri":"http://testcampaign.instance.com/r/?id=d1685a5,d57fd6,d57ff6","badge":"1817","_acsDeliveryTracking":"on"}}"#)
        // FCM data is map<string,string>.
        guard case .object(let data)? = try JSONValue.parse(rendered)["data"] else { return XCTFail("no data object") }
        for (key, value) in data {
            guard case .string = value else { return XCTFail("data[\(key)] is not a string: \(value)") }
        }
    }

    // MARK: Omitted keys

    func testAMinimalNotificationHasOnlyItsTitleAndTheIds() {
        let n = notification(NotificationContent(title: "Hi"))
        XCTAssertEqual(render(n, .ios), #"{"aps":{"alert":{"title":"Hi"}},"_dId":"\#(d)","_mId":"m1","_acsDeliveryTracking":"on"}"#)
        XCTAssertEqual(render(n, .android), #"{"data":{"_dId":"\#(d)","_mId":"m1","title":"Hi","_acsDeliveryTracking":"on"}}"#)
    }

    func testAlertIsOmittedWithoutTitleOrBodyButApsIsAlwaysThere() {
        let silent = notification(NotificationContent(contentAvailable: true))
        XCTAssertEqual(render(silent, .ios), #"{"aps":{"content-available":1},"_dId":"\#(d)","_mId":"m1","_acsDeliveryTracking":"on"}"#)
        let empty = notification(NotificationContent(sound: "default"))
        XCTAssertEqual(render(empty, .ios), #"{"aps":{"sound":"default"},"_dId":"\#(d)","_mId":"m1","_acsDeliveryTracking":"on"}"#)
        let nothing = notification(NotificationContent())
        XCTAssertEqual(render(nothing, .ios), #"{"aps":{},"_dId":"\#(d)","_mId":"m1","_acsDeliveryTracking":"on"}"#)
    }

    func testTextIsTheAlertBodyWhenBodyIsAbsentAndBodyWinsOtherwise() throws {
        let textOnly = notification(NotificationContent(text: "Salary deposited"))
        XCTAssertEqual(render(textOnly, .ios), #"{"aps":{"alert":{"body":"Salary deposited"}},"_dId":"\#(d)","_mId":"m1","_acsDeliveryTracking":"on"}"#)
        XCTAssertEqual(try JSONValue.parse(render(textOnly, .android))["data"]?["body"], .string("Salary deposited"))

        let both = notification(NotificationContent(body: "the body", text: "the text"))
        XCTAssertEqual(try JSONValue.parse(render(both, .ios))["aps"]?["alert"]?["body"], .string("the body"))
        XCTAssertEqual(try JSONValue.parse(render(both, .android))["data"]?["body"], .string("the body"))
        // Unmanaged: `text` is not written as a key of its own.
        XCTAssertNil(try JSONValue.parse(render(both, .ios))["text"])
    }

    func testFalseFlagsAreOmittedAndMutableContentCanBeSetAlone() throws {
        let off = notification(NotificationContent(title: "t", contentAvailable: false, mutableContent: false))
        XCTAssertEqual(try JSONValue.parse(render(off, .ios))["aps"], .object(["alert": .object(["title": .string("t")])]))
        let mutable = notification(NotificationContent(title: "t", mutableContent: true))
        XCTAssertEqual(try JSONValue.parse(render(mutable, .ios))["aps"]?["mutable-content"], .number(1))
        // Android never carries the APNs flags.
        let flags = notification(NotificationContent(title: "t", mediaAttachmentUrl: "https://x/y.png", contentAvailable: true, mutableContent: true))
        let android = render(flags, .android)
        XCTAssertFalse(android.contains("content-available"))
        XCTAssertFalse(android.contains("mutable-content"))
    }

    func testNormalPriorityAndCustomKeysInByteOrder() {
        let n = notification(NotificationContent(priority: .normal, custom: ["b": "2", "a": "1", "C": "3"]))
        XCTAssertEqual(render(n, .android),
                       #"{"priority":"normal","data":{"_dId":"\#(d)","_mId":"m1","C":"3","a":"1","b":"2","_acsDeliveryTracking":"on"}}"#)
        XCTAssertEqual(render(n, .ios), #"{"aps":{},"C":"3","a":"1","b":"2","_dId":"\#(d)","_mId":"m1","_acsDeliveryTracking":"on"}"#)
    }

    func testCustomFieldsCannotOverridePushlineKeys() throws {
        let n = notification(NotificationContent(title: "t", custom: ["_mId": "forged", "aps": "x", "badge": "99", "zeta": "z"]))
        for platform in Platform.allCases {
            let rendered = render(n, platform)
            XCTAssertFalse(rendered.contains("forged"), "\(platform)")
            XCTAssertEqual(rendered.components(separatedBy: "\"_mId\"").count, 2, "one _mId key on \(platform)")
            XCTAssertTrue(rendered.contains(#""zeta":"z""#), "\(platform)")
            XCTAssertFalse(rendered.contains("99"), "\(platform)")
        }
        XCTAssertTrue(PushPayload.reservedCustomKeys.isSuperset(of: ["_dId", "_mId", "_acsDeliveryTracking", "aps", "nid", "faf"]))
    }

    // MARK: Tracking

    func testTrackingOffIsWrittenAsOff() throws {
        let n = notification(NotificationContent(title: "t"), tracking: false)
        XCTAssertEqual(try JSONValue.parse(render(n, .ios))["_acsDeliveryTracking"], .string("off"))
        XCTAssertEqual(try JSONValue.parse(render(n, .android))["data"]?["_acsDeliveryTracking"], .string("off"))
        XCTAssertEqual(try JSONValue.parse(render(n, .ios))["_dId"], .string(d))
    }

    // MARK: Managed (BW keys)

    func testManagedIOSCarriesTheSeed004KeysAndTheManagedBadge() throws {
        let n = notification(NotificationContent(title: "Bank", text: "Cash withdrawal", badge: 5), managed: true, businessId: "USER_TRANSACTION")
        let rendered = render(n, .ios, managedBadge: 1)
        XCTAssertEqual(rendered, #"{"aps":{"alert":{"title":"Bank","body":"Cash withdrawal"},"badge":1},"#
            + #""_dId":"\#(d)","_mId":"m1","_acsDeliveryTracking":"on","#
            + #""text":"Cash withdrawal","timestamp":"1374224245011","nid":"\#(d)","bid":"USER_TRANSACTION","faf":"false","badge":"1"}"#)
        XCTAssertEqual(try JSONValue.parse(rendered)["nid"], .string(n.notificationId))
    }

    func testManagedAndroidOmitsAMissingBidAndUsesTheManagedBadge() throws {
        let n = notification(NotificationContent(title: "Gate change", badge: 5), managed: true)
        let rendered = render(n, .android, managedBadge: 3)
        let expected = """
        {"data":{"_dId":"\(d)","_mId":"m1","title":"Gate change","badge":"3","_acsDeliveryTracking":"on",
                 "text":"Gate change","timestamp":"1374224245011","nid":"\(d)","faf":"false"}}
        """
        XCTAssertEqual(try JSONValue.parse(rendered), try JSONValue.parse(expected))
        XCTAssertEqual(rendered, #"{"data":{"_dId":"\#(d)","_mId":"m1","title":"Gate change","badge":"3","_acsDeliveryTracking":"on","#
            + #""text":"Gate change","timestamp":"1374224245011","nid":"\#(d)","faf":"false"}}"#)
        XCTAssertFalse(rendered.contains("bid"))
    }

    func testManagedAlertTextFallsBackToBodyThenTitleThenEmpty() throws {
        let body = notification(NotificationContent(title: "T", body: "B"), managed: true)
        XCTAssertEqual(try JSONValue.parse(render(body, .ios, managedBadge: 2))["text"], .string("B"))
        let none = notification(NotificationContent(sound: "default"), managed: true)
        XCTAssertEqual(try JSONValue.parse(render(none, .android, managedBadge: 2))["data"]?["text"], .string(""))
    }

    func testUnmanagedPayloadsHaveNoSeed004Keys() throws {
        let n = notification(NotificationContent(title: "T", badge: 4))
        let ios = try JSONValue.parse(render(n, .ios))
        for key in ["text", "timestamp", "nid", "bid", "faf", "badge"] { XCTAssertNil(ios[key], key) }
        XCTAssertEqual(ios["aps"]?["badge"], .number(4))
        let data = try JSONValue.parse(render(n, .android))["data"]
        for key in ["text", "timestamp", "nid", "bid", "faf"] { XCTAssertNil(data?[key], key) }
        XCTAssertEqual(data?["badge"], .string("4"))
    }

    func testEpochMillisRoundsToTheNearestMillisecond() {
        XCTAssertEqual(PushPayload.epochMillis(Date(timeIntervalSince1970: 1_365_753_980.483)), 1_365_753_980_483)
        XCTAssertEqual(PushPayload.epochMillis(Date(timeIntervalSince1970: 0)), 0)
        XCTAssertEqual(PushPayload.epochMillis(Date(timeIntervalSince1970: 1.0006)), 1001)
    }

    // MARK: Badge updates

    func testBadgeUpdatesForBothPlatforms() {
        XCTAssertEqual(badgeUpdate(.ios, 0), #"{"aps":{"badge":0},"badge":"0"}"#)
        XCTAssertEqual(badgeUpdate(.ios, 7), #"{"aps":{"badge":7},"badge":"7"}"#)
        XCTAssertEqual(badgeUpdate(.android, 0), #"{"data":{"badge":"0"}}"#)
        XCTAssertEqual(badgeUpdate(.android, 12), #"{"data":{"badge":"12"}}"#)
        XCTAssertEqual(PushPayload.maxBytes, 4096)
    }
}
