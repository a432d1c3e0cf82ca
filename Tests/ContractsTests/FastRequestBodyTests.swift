import Contracts
import Foundation
import WireCodec
import XCTest

/// `FastRequestBody` returns exactly what `JSONDecoder` decodes, or nothing: a differential test
/// over random bodies, plain and hostile (escapes, nulls, other JSON types, unknown and repeated
/// keys, white space, truncation).
final class FastRequestBodyTests: XCTestCase {
    typealias Registration = DeviceRegistrationAPI.Registration
    typealias Cleanup = DeviceRegistrationAPI.Cleanup

    func testFastReadingAgreesWithJSONDecoder() throws {
        var random = SplitMix64(seed: 0xb0d1)
        var taken = 0, plainTaken = 0, plain = 0
        for round in 0..<4_000 {
            let hostile = round % 2 == 1
            let body: String
            let agrees: Bool?
            switch round % 16 / 2 {
            case 0:
                body = object(["MobileAppId", "UserId", "ApiToken", "ApnsDeviceToken", "FcmDeviceToken"], hostile, &random)
                agrees = check(Registration.self, body)
            case 1:
                body = array(["MobileAppId", "UserId", "ApiToken", "ApnsDeviceToken", "FcmDeviceToken"], hostile, &random)
                agrees = check([Registration].self, body)
            case 2:
                body = object(["MobileAppId", "ApiToken", "UserId", "DeviceToken"], hostile, &random)
                agrees = check(Cleanup.self, body)
            case 3:
                body = array(["MobileAppId", "ApiToken", "UserId", "DeviceToken"], hostile, &random)
                agrees = check([Cleanup].self, body)
            case 4:
                body = object(["nid", "did", "bid"], hostile, &random)
                agrees = check(BWDeviceAPI.Ack.self, body)
            case 5:
                let user = Bool.random(using: &random) ? nil : object(["phone", "email"], hostile, &random)
                body = object(["deviceId", "type"], hostile, &random, extra: user.map { ("user", $0) })
                agrees = check(BWDeviceAPI.Device.self, body)
            case 6:
                body = change(hostile, &random)
                agrees = check(DevicesAPI.Change.self, body)
            default:
                let changes = (0..<Int.random(in: 0...4, using: &random)).map { _ in change(hostile, &random) }
                body = object(members: [("changes", "[" + changes.joined(separator: ",") + "]")], hostile, &random)
                agrees = check(DevicesAPI.ChangeBatch.self, body)
            }
            guard let agrees else { continue }
            XCTAssertTrue(agrees, "round \(round): \(body)")
            taken += 1
            if !hostile { plainTaken += 1 }
        }
        for round in 0..<500 {
            // Plain bodies: every key known, once; strings without escapes; nulls.
            plain += 1
            let body = array(["MobileAppId", "UserId", "ApiToken", "ApnsDeviceToken", "FcmDeviceToken"], false, &random)
            XCTAssertEqual(check([Registration].self, body), true, "round \(round): a plain body should be read by hand: \(body)")
            let changes = (0..<Int.random(in: 1...4, using: &random)).map { _ in change(false, &random) }
            let batch = #"{"changes":["# + changes.joined(separator: ",") + "]}"
            XCTAssertEqual(check(DevicesAPI.ChangeBatch.self, batch), true, "round \(round): a plain batch should be read by hand: \(batch)")
        }
        XCTAssertGreaterThan(plainTaken, 1_000)
        XCTAssertGreaterThan(taken, plainTaken)
        XCTAssertEqual(plain, 500)
    }

    func testOtherTypesAreLeftToJSONDecoder() {
        let body = #"{"name":"x"}"#
        let value = body.utf8.withContiguousStorageIfAvailable { FastRequestBody.decode(AdminAPI.CreateApp.self, from: UnsafeRawBufferPointer($0)) }
        XCTAssertNil(value ?? nil)
    }

    /// nil when the fast reading gave up; else whether it agrees with `JSONDecoder` (which must
    /// then decode the body too).
    private func check<T: Decodable & Equatable>(_: T.Type, _ body: String) -> Bool? {
        let bytes = Array(body.utf8)
        guard let fast = bytes.withUnsafeBytes({ FastRequestBody.decode(T.self, from: $0) }) else { return nil }
        guard let decoded = try? WireJSON.decoder().decode(T.self, from: Data(bytes)) else { return false }
        return fast == decoded
    }

    private func array(_ keys: [String], _ hostile: Bool, _ random: inout SplitMix64) -> String {
        let elements = (0..<Int.random(in: 0...5, using: &random)).map { _ in object(keys, hostile, &random) }
        return space(&random) + "[" + elements.joined(separator: space(&random) + "," + space(&random)) + "]" + space(&random)
    }

    private func object(_ keys: [String], _ hostile: Bool, _ random: inout SplitMix64, extra: (String, String)? = nil) -> String {
        var members: [(String, String)] = keys.shuffled(using: &random).filter { _ in Int.random(in: 0..<4, using: &random) > 0 }
            .map { ($0, value(hostile, &random)) }
        if let extra { members.append(extra) }
        return object(members: members, hostile, &random)
    }

    /// A device change: string members, and `tags` and `topics` objects of name lists.
    private func change(_ hostile: Bool, _ random: inout SplitMix64) -> String {
        var members: [(String, String)] = ["deviceToken", "userId", "locale", "timeZone", "appVersion"].shuffled(using: &random)
            .filter { _ in Int.random(in: 0..<3, using: &random) == 0 }.map { ($0, value(hostile, &random)) }
        for (key, lists) in [("tags", ["add", "remove"]), ("topics", ["subscribe", "unsubscribe"])] where Bool.random(using: &random) {
            let inner = lists.filter { _ in Int.random(in: 0..<4, using: &random) > 0 }.map { ($0, names(hostile, &random)) }
            members.append((key, Int.random(in: 0..<8, using: &random) == 0 ? "null" : object(members: inner, hostile, &random)))
        }
        return object(members: members.shuffled(using: &random), hostile, &random)
    }

    private func names(_ hostile: Bool, _ random: inout SplitMix64) -> String {
        if hostile, Int.random(in: 0..<6, using: &random) == 0 { return value(true, &random) }
        let names = (0..<Int.random(in: 0...3, using: &random)).map { _ in
            let name = value(hostile, &random)
            return name == "null" ? "\"n\"" : name
        }
        return "[" + names.joined(separator: "," + space(&random)) + "]"
    }

    private func object(members: [(String, String)], _ hostile: Bool, _ random: inout SplitMix64) -> String {
        var members = members
        if hostile {
            switch Int.random(in: 0..<6, using: &random) {
            case 0: members.append(("Unknown", value(false, &random)))
            case 1: if let first = members.first { members.append((first.0, value(false, &random))) }
            case 2: if !members.isEmpty { members[0].0 = members[0].0.lowercased() }
            default: break
            }
        }
        let text = "{" + members.map { "\"\($0.0)\"" + space(&random) + ":" + space(&random) + $0.1 }.joined(separator: ",") + "}"
        if hostile, Int.random(in: 0..<10, using: &random) == 0 { return String(text.dropLast()) }
        return text
    }

    private func value(_ hostile: Bool, _ random: inout SplitMix64) -> String {
        if Int.random(in: 0..<6, using: &random) == 0 { return "null" }
        let plainPool: [Character] = ["a", "Z", "0", "-", "_", ".", "/", " ", "é", "東", "😀", "e\u{301}", "\u{7f}", "+"]
        var text = String((0..<Int.random(in: 0...10, using: &random)).map { _ in plainPool.randomElement(using: &random)! })
        guard hostile else { return "\"\(text)\"" }
        switch Int.random(in: 0..<8, using: &random) {
        case 0: text += #"\""#
        case 1: text += #"\u0041\n"#
        case 2: return String(Int.random(in: -9...99, using: &random))
        case 3: return "true"
        case 4: return #"{"a":1}"#
        case 5: return "[\"\(text)\"]"
        default: break
        }
        return "\"\(text)\""
    }

    private func space(_ random: inout SplitMix64) -> String {
        ["", "", "", " ", "\n", "\t ", "\r\n"].randomElement(using: &random)!
    }
}
