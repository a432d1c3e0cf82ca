import Contracts
import Crypto
import Foundation
import Sender
import TestSupport
import XCTest

/// The mock APNs and FCM servers and `pushline-sender` processes beside a `PushlineStack`: the
/// sender trusts the mocks' CA through `PUSHLINE_SENDER_CA_FILE` and sends to them through
/// `PUSHLINE_APNS_URL` and `PUSHLINE_FCM_URL`, as the README's local walkthrough does.
final class DeliveryRig: @unchecked Sendable {
    let stack: PushlineStack
    let secretsKey: String
    let ca: TestCA
    let apns: MockAPNsServer
    let fcm: MockFCMServer
    let caFile: String
    let senderGroup = "pushline-sender-test-" + UUID().uuidString
    private(set) var senders: [(process: ServiceProcess, port: Int)] = []
    /// Keys the mock APNs trusts, by key id, and the one FCM account it knows.
    let apnsKeys: [String: TestPushKeys]
    let fcmKeys = TestPushKeys()
    static let team = "ABCDE12345"
    /// Apps of the mock APNs: each trusted key id signs for its bundle id.
    static let trusted = ["KEYAAAAAA1": "com.example.a", "KEYBBBBBB1": "com.example.b"]

    /// A stack whose ingest seals credentials with a new deployment key, the mocks started.
    /// `store`: the services' `PUSHLINE_STORE`; nil: a new SQLite file. `environment`: settings
    /// of both ingest and the processor (the sender takes its own, `startSender`).
    static func start(store: String? = nil, environment: [String: String] = [:]) async throws -> DeliveryRig {
        let key = TestPushKeys.secretsKey()
        let stack = try await PushlineStack.start(processorEnvironment: environment,
                                                  ingestEnvironment: ["PUSHLINE_SECRETS_KEY": key].merging(environment) { $1 }, store: store)
        do {
            let rig = try DeliveryRig(stack: stack, secretsKey: key)
            try await rig.apns.start()
            try await rig.fcm.start()
            return rig
        } catch {
            await stack.stop()
            throw error
        }
    }

    private init(stack: PushlineStack, secretsKey: String) throws {
        self.stack = stack
        self.secretsKey = secretsKey
        ca = try TestCA()
        var keys: [String: TestPushKeys] = [:]
        for keyId in Self.trusted.keys { keys[keyId] = TestPushKeys() }
        apnsKeys = keys
        apns = MockAPNsServer(ca: ca, trustedKeys: try Self.trusted.map { keyId, bundle in
            .init(teamId: Self.team, keyId: keyId, bundleId: bundle,
                  publicKey: try P256.Signing.PrivateKey(pemRepresentation: keys[keyId]!.apnsPEM).publicKey)
        })
        fcm = MockFCMServer(ca: ca, accounts: [try .init(fcmKeys)])
        caFile = stack.directory.appendingPathComponent("mock-ca.pem").path
        try ca.writeCertificate(to: caFile)
    }

    /// Starts one more sender of the rig's group and waits until it is healthy.
    @discardableResult
    func startSender(environment: [String: String] = [:]) async throws -> ServiceProcess {
        let port = TestBroker.freePort()
        let sender = ServiceProcess(name: "pushline-sender", environment: [
            "PUSHLINE_SENDER_PORT": "\(port)",
            "PUSHLINE_KAFKA_BROKERS": stack.broker.bootstrapServers,
            "PUSHLINE_STORE": stack.storeLocation,
            "PUSHLINE_PARTITIONS": "6",
            "PUSHLINE_SENDER_GROUP_ID": senderGroup,
            "PUSHLINE_KAFKA_SESSION_TIMEOUT_MS": "6000",
            "PUSHLINE_KAFKA_MAX_POLL_INTERVAL_MS": "7000",
            "PUSHLINE_SECRETS_KEY": secretsKey,
            "PUSHLINE_SENDER_CA_FILE": caFile,
            "PUSHLINE_APNS_URL": apns.baseURL,
            "PUSHLINE_FCM_URL": fcm.baseURL,
            "PUSHLINE_SENDER_CREDENTIALS_CACHE_MS": "200",
            "PUSHLINE_SENDER_RETRY_BASE_MS": "100",
            "PUSHLINE_LOG_LEVEL": "info",
        ].merging(environment) { $1 }, logDirectory: stack.directory)
        try sender.start()
        senders.append((sender, port))
        try await sender.waitHealthy("http://127.0.0.1:\(port)/health")
        return sender
    }

    func stop() async {
        for sender in senders { _ = try? await sender.process.stop() }
        await apns.stop()
        await fcm.stop()
        await stack.stop()
    }

    func logs() -> String {
        stack.logs() + senders.enumerated().map { "\n--- sender \($0.offset) ---\n\($0.element.process.tail(lines: 60))" }.joined()
    }

    /// The value of one series of sender `index`'s /metrics (`name{labels}`), 0 when absent.
    func senderMetric(_ series: String, sender index: Int = 0) async throws -> Double {
        try await HTTPClientHelpers.metric(series, of: "http://127.0.0.1:\(senders[index].port)")
    }

    // MARK: - Credentials

    /// Sets APNs credentials signed by `keyId` (one the mock trusts, or any other: a key Apple
    /// would refuse) for the bundle the key signs for.
    func setAPNs(app: UUID, keyId: String, bundleId: String? = nil) async throws {
        let pem = apnsKeys[keyId]?.apnsPEM ?? P256.Signing.PrivateKey().pemRepresentation
        try await put(app: app, provider: "apns", [
            "teamId": Self.team, "keyId": keyId, "bundleId": bundleId ?? Self.trusted[keyId] ?? "com.example.unknown",
            "environment": "production", "privateKey": pem,
        ])
    }

    /// Sets FCM credentials: the account the mock knows, or `account`'s (one Google would refuse).
    func setFCM(app: UUID, account: TestPushKeys? = nil) async throws {
        try await put(app: app, provider: "fcm", ["serviceAccount": (account ?? fcmKeys).serviceAccount(extra: ["token_uri": fcm.tokenURI])])
    }

    private func put(app: UUID, provider: String, _ body: [String: Any]) async throws {
        let answer = try await HTTPClientHelpers.request(.PUT, "\(stack.ingestURL)/admin/v1/apps/\(app)/credentials/\(provider)",
                                                         body: try JSONSerialization.data(withJSONObject: body), headers: stack.adminHeaders)
        guard answer.status == 202 else { throw TestFailure("credentials PUT answered \(answer.status): \(answer.text)") }
    }

    /// Searches the senders' logs and the delivery topic for every 40-character piece of the
    /// rig's private keys; returns where one was found (each haystack checked to be read).
    func secretsFoundInSenderOutputs() async throws -> [String] {
        let needles = [apnsKeys.values.map(\.apnsPEM), [fcmKeys.rsaPEM]].joined().flatMap { pem -> [String] in
            let body = Array(TestPushKeys.pemBody(pem))
            return stride(from: 0, to: body.count - 40, by: 40).map { String(body[$0..<$0 + 40]) }
        } + ["PRIVATE KEY"]
        let log = try String(contentsOf: senders[0].process.logURL, encoding: .utf8)
        let delivery = try await stack.broker.kcat(["-C", "-t", stack.topics.delivery, "-o", "beginning", "-e", "-q"])
        guard log.contains("sender partitions assigned"), delivery.contains("delivery.result-reported") else {
            throw TestFailure("the search did not read the sender's log or the delivery topic")
        }
        return ["the sender's log": log, "the delivery topic": delivery].compactMap { name, haystack in
            needles.contains { haystack.contains($0) } ? name : nil
        }
    }

    // MARK: - Outcomes

    /// Waits until the delivery's statistics satisfy `condition` and returns them.
    @discardableResult
    func waitForStats(_ deliveryId: UUID, app: AdminAPI.AppCreatedAnswer, timeout: Duration = .seconds(60),
                      _ what: String, _ condition: @escaping (TrackingAPI.DeliveryStats) -> Bool) async throws -> TrackingAPI.DeliveryStats {
        var last: TrackingAPI.DeliveryStats?
        do {
            try await eventually("\(what) (last: \(String(describing: last)))", timeout: timeout) {
                last = try await self.stack.stats(deliveryId, app: app)
                return last.map(condition) ?? false
            }
        } catch {
            throw TestFailure("\(error)\n\(logs())")
        }
        return last!
    }

    /// The delivery's per-device outcomes, as the API lists them.
    func outcomes(_ deliveryId: UUID, app: AdminAPI.AppCreatedAnswer, outcome: String? = nil) async throws -> [[String: Any]] {
        let query = outcome.map { "?outcome=\($0)" } ?? ""
        let answer = try await stack.call(.GET, "/v1/apps/\(app.mobileAppId)/deliveries/\(deliveryId)/outcomes\(query)", token: app.apiToken)
        guard answer.status == 200 else { throw TestFailure("outcomes answered \(answer.status): \(answer.text)") }
        let object = try JSONSerialization.jsonObject(with: answer.body) as? [String: Any]
        return object?["outcomes"] as? [[String: Any]] ?? []
    }

    /// Where each device's outbound records are: (partition, offset) by device token (the key).
    func outboundPositions() async throws -> [String: [(partition: Int, offset: Int)]] {
        let out = try await stack.broker.kcat(["-C", "-t", stack.topics.outbound, "-o", "beginning", "-e", "-q", "-f", "%p %o %k\\n"])
        var positions: [String: [(partition: Int, offset: Int)]] = [:]
        for line in out.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 2)
            guard parts.count == 3, let partition = Int(parts[0]), let offset = Int(parts[1]) else { continue }
            positions[String(parts[2]), default: []].append((partition, offset))
        }
        return positions
    }

    /// Whether the app still has the user's device, as the store says (SQLite or PostgreSQL).
    func hasDevice(_ token: String, user: String, app: UUID) async throws -> Bool {
        let store = try await stack.openStore()
        let devices = try await store.devices(app: app, user: user)
        await store.close()
        return devices.contains { $0.deviceToken == token }
    }
}
