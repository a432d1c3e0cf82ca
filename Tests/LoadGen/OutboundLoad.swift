import _CryptoExtras
import Contracts
import Crypto
import Foundation
import Kafka
import Logging
import OutboundRendering
import Projections
import ProjectionStores
import Settings
import TestSupport
import WireCodec

/// `pushline-loadgen outbound`: the input of `scripts/bench-sender`, made without ingest or the
/// processor. One app is put into the projection store with the APNs and FCM credentials that
/// `pushline-mocks` trusts (read from its directory), sealed with `PUSHLINE_SECRETS_KEY` as
/// ingest seals them; then one send to `records` of that app's iOS devices is written straight
/// to the outbound topic as the processor writes it (`OutboundRecord.notification`, keyed by
/// device token, header `type: push`).
///
///   PUSHLINE_SECRETS_KEY=… pushline-loadgen outbound --store sqlite:PATH --records 100000
///     [--mocks-dir var/mocks] [--brokers 127.0.0.1:9092] [--prefix pushline.] [--partitions 12]
enum OutboundLoad {
    static func run(_ arguments: ArraySlice<String>) async throws {
        let options = try LoadGen.options(arguments, defaults: [
            "--brokers": "127.0.0.1:9092", "--records": "100000", "--prefix": "pushline.", "--partitions": "12",
            "--mocks-dir": "var/mocks", "--store": "",
        ])
        guard let records = Int(options["--records"]!), records > 0, let partitions = Int(options["--partitions"]!), partitions > 0 else {
            throw LoadGenError("--records and --partitions take positive numbers")
        }
        guard let store = options["--store"], !store.isEmpty else { throw LoadGenError("--store is required (sqlite:PATH or postgres://…)") }
        guard let key = ProcessInfo.processInfo.environment[SecretsVariable.key], !key.isEmpty else {
            throw LoadGenError("\(SecretsVariable.key) is required: the credentials are sealed with it, and the sender opens them with it")
        }
        let keyring = try SecretsKeyring(current: key)
        let mocks = PushMocksDirectory(path: options["--mocks-dir"]!)
        let app = UUID()

        let credentials = try pushCredentials(mocks.readCredentials(), app: app, keyring: keyring)
        var logger = Logger(label: "pushline-loadgen")
        logger.logLevel = .warning
        let projections = try await ProjectionStoreFactory.open(store, logger: logger)
        do {
            try await projections.commit(mutations: [.upsertApp(AppRow(appId: app, orgId: UUID(), name: "bench-sender", createdAt: Date(),
                                                                       pushCredentials: credentials))], offsets: [])
        } catch {
            await projections.close()
            throw error
        }
        await projections.close()
        print("app \(app.lowercasedString)")

        let brokers = options["--brokers"]!
        let topic = Topics(prefix: options["--prefix"]!).outbound
        try await KafkaAdmin.createTopics([(topic, partitions)], bootstrapServers: brokers)
        var config = KafkaProducerConfiguration()
        config.bootstrapServers = brokers
        let producer = try KafkaProducer(configuration: config, logger: logger)
        let send = NotificationRequested(deliveryId: UUID(), mobileAppId: app, target: NotificationTarget(userIds: ["bench"]),
                                         content: NotificationContent(title: "Hello", body: "from pushline-loadgen"))
        let messageIds = MessageId.Series(deliveryId: send.deliveryId)
        let headers = KafkaHeader.list(RecordHeaders(type: "push").fields)
        let sentAt = Date()
        do {
            for start in stride(from: 0, to: records, by: 10_000) {
                try await producer.send(count: min(10_000, records - start), topic: topic) { offset, record in
                    let index = start + offset
                    let token = deviceToken(index)
                    record.key = token
                    record.headers = headers
                    record.value.append(contentsOf: OutboundRecord.notification(
                        send, deviceToken: token, platform: .ios, messageId: messageIds.make(index: index), sentAt: sentAt, managedBadge: nil))
                }
            }
        } catch {
            await producer.shutdown()
            throw error
        }
        await producer.shutdown()
        print("outbound \(records)")
    }

    /// 64 hex digits, unique per index; never the mocks' unregistered prefix (`dead`), as it
    /// starts with zeros.
    static func deviceToken(_ index: Int) -> String {
        let hex = String(index, radix: 16)
        return String(repeating: "0", count: 64 - hex.count) + hex
    }

    /// The credentials of the mocks' directory as ingest would store them for `app`.
    static func pushCredentials(_ mocks: PushMocksDirectory.Credentials, app: UUID, keyring: SecretsKeyring) throws -> PushCredentials {
        let pem = try String(contentsOfFile: mocks.apns.privateKeyFile, encoding: .utf8)
        let apnsKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
        guard let environment = APNsEnvironment(rawValue: mocks.apns.environment) else {
            throw LoadGenError("credentials.json: unknown APNs environment \(mocks.apns.environment)")
        }
        // Sealed as sorted-key JSON, as ingest seals it.
        let account = try WireJSON.encoder().encode(JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: mocks.fcm.serviceAccountFile))))
        let fields = try JSONDecoder().decode(GoogleServiceAccount.self, from: account)
        guard let accountPEM = fields.privateKey, let tokenURI = fields.tokenUri else {
            throw LoadGenError("\(mocks.fcm.serviceAccountFile) has no private_key or token_uri")
        }
        let accountKey = try _RSA.Signing.PrivateKey(pemRepresentation: accountPEM)
        return PushCredentials(
            apns: APNsCredentials(teamId: mocks.apns.teamId, keyId: mocks.apns.keyId, bundleId: mocks.apns.bundleId, environment: environment,
                                  fingerprint: fingerprint(apnsKey.publicKey.derRepresentation),
                                  privateKey: keyring.seal(Data(pem.utf8), context: SecretsKeyring.context(app: app, provider: .apns))),
            fcm: FCMCredentials(projectId: mocks.fcm.projectId, clientEmail: mocks.fcm.clientEmail, privateKeyId: fields.privateKeyId,
                                tokenUri: tokenURI, fingerprint: fingerprint(accountKey.publicKey.derRepresentation),
                                serviceAccount: keyring.seal(account, context: SecretsKeyring.context(app: app, provider: .fcm))))
    }

    /// `SHA256:` and the unpadded base64 SHA-256 of a public key's DER, as ingest computes it.
    private static func fingerprint(_ publicKeyDER: Data) -> String {
        "SHA256:" + Data(SHA256.hash(data: publicKeyDER)).base64EncodedString().replacingOccurrences(of: "=", with: "")
    }
}
