import Contracts
import Foundation
import Projections
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// The registration rules (docs/API.md#registration-outcomes), decided in memory (no store, no
/// broker).
final class HandlerTests: XCTestCase {
    typealias API = DeviceRegistrationAPI
    let org = UUID(), appId = UUID(), tokenHash = ApiTokens.hash("good-token")
    let at = Date(timeIntervalSince1970: 1_800_000_000)
    let apns = String(repeating: "ab", count: 32)

    private func state(devices: [DeviceRow] = [], retries: Int = 0) -> BatchState {
        var snapshot = StateSnapshot()
        snapshot.apps[AppPart(appId)] = AppRow(appId: appId, orgId: org, name: "a", webhookRetries: retries, createdAt: at)
        snapshot.tokens[AppPart(appId)] = [ApiTokenRow(tokenId: UUID(), appId: appId, tokenHash: tokenHash, createdAt: at),
                                  ApiTokenRow(tokenId: UUID(), appId: appId, tokenHash: ApiTokens.hash("old"), revoked: true, createdAt: at)]
        for d in devices { snapshot.devices[d.key] = d }
        return BatchState(snapshot)
    }

    private func registration(user: String = "u", token: String? = nil, platform: Platform = .ios, hash: String? = nil,
                              track: Bool = true, callback: StatusCallback? = nil, org: UUID? = nil,
                              timeZone: String? = nil) -> DeviceRegistrationRequested {
        DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: org ?? self.org, mobileAppId: appId, userId: user, platform: platform,
                                    deviceToken: token ?? apns, apiTokenHash: hash ?? tokenHash, trackStatus: track, callback: callback,
                                    timeZone: timeZone)
    }

    private let handler = RegistrationHandler(verifier: TokenFormatVerifier())

    func testNewDeviceSucceedsAndIsStoredWithVersionOne() {
        var s = state()
        XCTAssertEqual(handler.apply(registration(), CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.devices[DeviceKey(appId: appId, deviceToken: apns)]?.version, 1)
        guard case .putRegistrationStatus(let status)? = s.mutations.last else { return XCTFail("no status: \(s.mutations)") }
        XCTAssertEqual(status.status, .Success)
        XCTAssertNil(status.failureReason)
    }

    func testSameUserSameTokenTwiceInOneBatchIsDuplicateExists() {
        var s = state()
        _ = handler.apply(registration(), CommandContext(at: at), to: &s)
        XCTAssertEqual(handler.apply(registration(), CommandContext(at: at), to: &s), .rejected("DuplicateExists"))
    }

    func testATimeZoneIsStoredKeptWhenNoneIsGivenAndAnotherOneIsAChange() {
        var s = state()
        let key = DeviceKey(appId: appId, deviceToken: apns)
        XCTAssertEqual(handler.apply(registration(timeZone: "Europe/Lisbon"), CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.devices[key]?.timeZone, "Europe/Lisbon")
        XCTAssertEqual(handler.apply(registration(), CommandContext(at: at), to: &s), .rejected("DuplicateExists"), "none given: no change")
        XCTAssertEqual(handler.apply(registration(timeZone: "Europe/Lisbon"), CommandContext(at: at), to: &s), .rejected("DuplicateExists"))
        XCTAssertEqual(s.devices[key]?.timeZone, "Europe/Lisbon")
        XCTAssertEqual(handler.apply(registration(timeZone: "Asia/Tokyo"), CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.devices[key]?.timeZone, "Asia/Tokyo")
        XCTAssertEqual(s.devices[key]?.version, 2)
        XCTAssertEqual(handler.apply(registration(user: "other"), CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.devices[key]?.timeZone, "Asia/Tokyo", "moving to another user without a time zone keeps the device's")
    }

    func testTokenOfAnotherUserMovesAndBumpsVersion() {
        var s = state(devices: [DeviceRow(appId: appId, deviceToken: apns, userId: "old", platform: .ios, version: 3, updatedAt: at)])
        XCTAssertEqual(handler.apply(registration(user: "new"), CommandContext(at: at), to: &s), .applied)
        let row = s.devices[DeviceKey(appId: appId, deviceToken: apns)]
        XCTAssertEqual(row?.userId, "new")
        XCTAssertEqual(row?.version, 4)
    }

    func testTooLongTokenFailsBeforeFormatCheck() {
        var s = state()
        let result = handler.apply(registration(token: String(repeating: "a", count: 4097), platform: .android), CommandContext(at: at), to: &s)
        XCTAssertEqual(result, .rejected("DeviceTokenTooLong"))
        XCTAssertTrue(s.devices.isEmpty)
    }

    func testInvalidRevokedOrForeignOrgTokensLeaveNoTrace() {
        for c in [registration(hash: ApiTokens.hash("forged")), registration(hash: ApiTokens.hash("old")), registration(org: UUID())] {
            var s = state()
            XCTAssertEqual(handler.apply(c, CommandContext(at: at), to: &s), .rejected("invalid-api-token"))
            XCTAssertTrue(s.mutations.isEmpty, "no status, no device, no webhook")
        }
    }

    func testStoreFailureIsRecordedAsFailedToStoreDeviceWithoutTheDevice() {
        var s = state()
        XCTAssertEqual(handler.apply(registration(), CommandContext(at: at, storeFailed: true), to: &s), .rejected("FailedToStoreDevice"))
        XCTAssertTrue(s.devices.isEmpty)
        guard case .putRegistrationStatus(let status)? = s.mutations.last else { return XCTFail() }
        XCTAssertEqual(status.failureReason, .FailedToStoreDevice)
    }

    func testUntrackedRegistrationStoresNoStatusButStillSendsItsWebhook() throws {
        var s = state(retries: 2)
        let callback = StatusCallback(url: "http://127.0.0.1:9/x", headers: ["X-K": "v"], signature: "sig")
        let c = registration(track: false, callback: callback)
        _ = handler.apply(c, CommandContext(at: at), to: &s)
        XCTAssertFalse(s.mutations.contains { if case .putRegistrationStatus = $0 { true } else { false } })
        guard case .enqueueOutbox(let job)? = s.mutations.last else { return XCTFail("no webhook job") }
        XCTAssertEqual(job.id, "registration-status:\(c.registrationRequestId.uuidString.lowercased())")
        XCTAssertEqual(job.maxAttempts, 3)
        XCTAssertEqual(job.headers["X-K"], "v")
        let body = try JSONDecoder().decode(API.StatusWebhook.self, from: job.body)
        XCTAssertEqual(body, API.StatusWebhook(Status: .Success, Signature: "sig", FailureReason: nil))
    }

    func testATokenThatFailsVerificationSendsNoWebhookButKeepsItsStatus() throws {
        let callback = StatusCallback(url: "https://relay.example/x", headers: [:], signature: "sig")
        for (token, platform, reason) in [("made-up", Platform.ios, API.FailureReason.DryRunSendingFailed),
                                          (String(repeating: "a", count: 4097), .android, .DeviceTokenTooLong)] {
            var s = state()
            XCTAssertEqual(handler.apply(registration(token: token, platform: platform, callback: callback), CommandContext(at: at), to: &s),
                           .rejected(reason.rawValue))
            XCTAssertFalse(s.mutations.contains { if case .enqueueOutbox = $0 { true } else { false } }, "\(reason): \(s.mutations)")
            guard case .putRegistrationStatus(let status)? = s.mutations.last else { return XCTFail("no status for \(reason)") }
            XCTAssertEqual(status.failureReason, reason)
        }
        // A duplicate is a token that verified: its webhook is sent, as the seed does.
        var s = state()
        _ = handler.apply(registration(), CommandContext(at: at), to: &s)
        XCTAssertEqual(handler.apply(registration(callback: callback), CommandContext(at: at), to: &s), .rejected("DuplicateExists"))
        guard case .enqueueOutbox(let job)? = s.mutations.last else { return XCTFail("no webhook for a duplicate") }
        XCTAssertEqual(try JSONDecoder().decode(API.StatusWebhook.self, from: job.body).FailureReason, .DuplicateExists)
    }

    func testAnAppsWebhookHostsAsTheLogHasThemDecideWhetherTheStatusWebhookIsSent() {
        var s = state()
        _ = AppSettingsChangedHandler().apply(AppSettingsChanged(mobileAppId: appId, webhookHosts: ["Hooks.Example.com.", "*.example.net"]),
                                              CommandContext(at: at), to: &s)
        XCTAssertEqual(s.apps[AppPart(appId)]?.webhookHosts, ["hooks.example.com", "*.example.net"])
        func jobs(_ url: String, user: String) -> [OutboxJob] {
            let callback = StatusCallback(url: url, headers: [:], signature: "sig")
            _ = handler.apply(registration(user: user, token: String(repeating: "ab", count: 32 + user.count), callback: callback),
                              CommandContext(at: at), to: &s)
            return s.mutations.compactMap { if case .enqueueOutbox(let job) = $0, job.url == url { job } else { nil } }
        }
        XCTAssertEqual(jobs("https://hooks.example.com:8443/status", user: "a").count, 1)
        XCTAssertEqual(jobs("https://deep.er.example.net/status", user: "bb").count, 1)
        XCTAssertEqual(jobs("https://example.net/status", user: "ccc").count, 0, "a wildcard covers subdomains, not the domain")
        XCTAssertEqual(jobs("https://relay.attacker.test/status", user: "dddd").count, 0)
        XCTAssertEqual(jobs("https://hooks.example.com.attacker.test/status", user: "eeeee").count, 0)
        // The list removed: open again, as the seed behaves.
        _ = AppSettingsChangedHandler().apply(AppSettingsChanged(mobileAppId: appId, webhookHosts: []), CommandContext(at: at), to: &s)
        XCTAssertNil(s.apps[AppPart(appId)]?.webhookHosts)
        XCTAssertEqual(jobs("https://relay.attacker.test/other", user: "ffffff").count, 1)
    }

    func testCleanupWithoutTokenRemovesOnlyThatUsersDevices() {
        let other = String(repeating: "cd", count: 32)
        var s = state(devices: [
            DeviceRow(appId: appId, deviceToken: apns, userId: "u", platform: .ios, version: 1, updatedAt: at),
            DeviceRow(appId: appId, deviceToken: other, userId: "someone", platform: .ios, version: 1, updatedAt: at),
        ])
        let c = DeviceCleanupRequested(orgId: org, mobileAppId: appId, userId: "u", deviceToken: nil, apiTokenHash: tokenHash)
        XCTAssertEqual(CleanupHandler().apply(c, CommandContext(at: at), to: &s), .applied)
        let key = DeviceKey(appId: appId, deviceToken: apns)
        XCTAssertEqual(s.mutations, [.clearPending(key), .deleteDevice(key)], "the device and its pending notifications go")
        XCTAssertNotNil(s.devices[DeviceKey(appId: appId, deviceToken: other)])
    }

    func testCleanupOfAnotherUsersTokenRemovesNothing() {
        var s = state(devices: [DeviceRow(appId: appId, deviceToken: apns, userId: "owner", platform: .ios, version: 1, updatedAt: at)])
        let c = DeviceCleanupRequested(orgId: org, mobileAppId: appId, userId: "u", deviceToken: apns, apiTokenHash: tokenHash)
        XCTAssertEqual(CleanupHandler().apply(c, CommandContext(at: at), to: &s), .applied)
        XCTAssertTrue(s.mutations.isEmpty)
    }

    func testRepeatedAppCreationKeepsLaterSettings() {
        var s = state()
        _ = AppSettingsChangedHandler().apply(AppSettingsChanged(mobileAppId: appId, callbackUrl: "http://x.test/cb"), CommandContext(at: at), to: &s)
        _ = AppCreatedHandler().apply(AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: "h"), CommandContext(at: at), to: &s)
        XCTAssertEqual(s.apps[AppPart(appId)]?.callbackUrl, "http://x.test/cb")
    }

    func testPushCredentialsAreSetPerProviderReplacedAndRemoved() {
        var s = state()
        let sealed = SealedSecret(keyId: "k", box: "b")
        let apns = APNsCredentials(teamId: "T", keyId: "K", bundleId: "b", environment: .sandbox, fingerprint: "1", privateKey: sealed)
        let fcm = FCMCredentials(projectId: "p", clientEmail: "e", privateKeyId: nil, tokenUri: "u", fingerprint: "2", serviceAccount: sealed)
        let context = CommandContext(at: at)
        XCTAssertEqual(PushCredentialsSetHandler().apply(PushCredentialsSet(mobileAppId: appId, apns: apns), context, to: &s), .applied)
        XCTAssertEqual(PushCredentialsSetHandler().apply(PushCredentialsSet(mobileAppId: appId, fcm: fcm), context, to: &s), .applied)
        XCTAssertEqual(s.apps[AppPart(appId)]?.pushCredentials, PushCredentials(apns: apns, fcm: fcm), "setting one provider keeps the other")
        var newer = apns
        newer.fingerprint = "3"
        _ = PushCredentialsSetHandler().apply(PushCredentialsSet(mobileAppId: appId, apns: newer), context, to: &s)
        XCTAssertEqual(s.apps[AppPart(appId)]?.pushCredentials, PushCredentials(apns: newer, fcm: fcm))
        XCTAssertEqual(s.apps[AppPart(appId)]?.name, "a", "the app's other settings stay")

        XCTAssertEqual(PushCredentialsRemovedHandler().apply(PushCredentialsRemoved(mobileAppId: appId, provider: .apns), context, to: &s),
                       .applied)
        XCTAssertEqual(s.apps[AppPart(appId)]?.pushCredentials, PushCredentials(fcm: fcm))
        _ = PushCredentialsRemovedHandler().apply(PushCredentialsRemoved(mobileAppId: appId, provider: .fcm), context, to: &s)
        XCTAssertNil(s.apps[AppPart(appId)]?.pushCredentials, "none left is none at all")
        XCTAssertEqual(s.mutations.count, 5)

        let unknown = UUID()
        XCTAssertEqual(PushCredentialsSetHandler().apply(PushCredentialsSet(mobileAppId: unknown, apns: apns), context, to: &s),
                       .rejected("unknown-app"))
        XCTAssertEqual(PushCredentialsRemovedHandler().apply(PushCredentialsRemoved(mobileAppId: unknown, provider: .fcm), context, to: &s),
                       .rejected("unknown-app"))
        XCTAssertEqual(PushCredentialsSetHandler().apply(PushCredentialsSet(mobileAppId: appId), context, to: &s), .rejected("no-credentials"))
        XCTAssertEqual(s.mutations.count, 5)
    }

    func testFormatVerifier() {
        let v = TokenFormatVerifier()
        XCTAssertTrue(v.verify(token: String(repeating: "aB", count: 32), platform: .ios))
        XCTAssertFalse(v.verify(token: String(repeating: "a", count: 65), platform: .ios), "odd length")
        XCTAssertFalse(v.verify(token: String(repeating: "g", count: 64), platform: .ios), "not hex")
        XCTAssertFalse(v.verify(token: String(repeating: "a", count: 62), platform: .ios), "too short")
        XCTAssertTrue(v.verify(token: String(repeating: "A-_:9", count: 20), platform: .android))
        XCTAssertFalse(v.verify(token: String(repeating: "a", count: 99), platform: .android), "too short")
        XCTAssertFalse(v.verify(token: String(repeating: "a", count: 99) + "!", platform: .android), "bad character")
    }

    func testUnknownTypesAndNewerVersionsAreSkippedNotFatal() throws {
        let decoder = CommandDecoder()
        guard case .unknownType = decoder.decode(type: "something.new", version: 1, value: Data("{}".utf8)) else { return XCTFail() }
        guard case .unsupportedVersion = decoder.decode(type: CommandType.appCreated.rawValue, version: 2, value: Data("{}".utf8)) else { return XCTFail() }
        guard case .malformed = decoder.decode(type: CommandType.appCreated.rawValue, version: 1, value: Data("{".utf8)) else { return XCTFail() }
        let encoded = try EncodedCommand(AppCreated(orgId: org, mobileAppId: appId, name: "n", tokenId: UUID(), tokenHash: "h"),
                                         topics: Topics(), encoder: WireJSON.encoder())
        guard case .command(let c) = decoder.decode(type: encoded.type, version: encoded.version, value: encoded.value) else { return XCTFail() }
        XCTAssertEqual(c.type, .appCreated)
    }

    /// Records written around ingest may hold `\u0000`, which PostgreSQL cannot store: every
    /// store skips them as malformed instead of failing the batch forever.
    func testRecordsWithAnEscapedNULAreMalformedWhateverTheirTypeAndReader() throws {
        let decoder = CommandDecoder()
        let commands: [EncodedCommand] = try [
            EncodedCommand(registration(user: "u\u{0}1"), topics: Topics(), encoder: WireJSON.encoder()),
            EncodedCommand(AppCreated(orgId: org, mobileAppId: appId, name: "n\u{0}", tokenId: UUID(), tokenHash: "h"),
                           topics: Topics(), encoder: WireJSON.encoder()),
        ]
        for encoded in commands {
            XCTAssertTrue(String(decoding: encoded.value, as: UTF8.self).contains(#"\u0000"#))
            guard case .malformed(_, let error) = decoder.decode(type: encoded.type, version: encoded.version, value: encoded.value) else {
                XCTFail("\(encoded.type) with NUL was not refused"); continue
            }
            XCTAssertTrue(error.contains("NUL character"), error)
        }
        let clean = try EncodedCommand(registration(user: "u\u{1}1"), topics: Topics(), encoder: WireJSON.encoder())
        guard case .command = decoder.decode(type: clean.type, version: clean.version, value: clean.value) else {
            return XCTFail("another escaped control character is fine")
        }
    }
}
