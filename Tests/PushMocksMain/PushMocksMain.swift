import ArgumentParser
import Contracts
import Crypto
import Foundation
import Logging
import ServiceLifecycle
import TestSupport

/// `pushline-mocks`: the mock APNs and FCM servers of the tests (`MockAPNsServer`,
/// `MockFCMServer`) as a process on loopback, with a CA, an APNs key and an FCM service account
/// made for the run, written where a sender or a benchmark finds them (`PushMocksDirectory`).
/// Requests are counted, not kept; the counts are printed when it stops (SIGTERM, SIGINT). With
/// `--push-log FILE`, every push answered is also appended to FILE as a line of JSON (`PushLog`).
@main
struct PushMocks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushline-mocks",
        abstract: "Runs mock APNs and FCM servers on 127.0.0.1 with credentials they trust, until SIGTERM or SIGINT.",
        discussion: """
            Writes into --dir: ca.pem, apns-key.p8, fcm-service-account.json, credentials.json, apns-jwt.txt, \
            apns-body.json and sender.env (PUSHLINE_APNS_URL, PUSHLINE_FCM_URL, PUSHLINE_SENDER_CA_FILE for \
            pushline-sender). scripts/push-mocks starts and stops it.
            """
    )

    /// The credentials the mocks trust: Apple's and Google's formats, no real account.
    static let teamId = "PUSHLINE01"
    static let keyId = "MOCKKEY001"
    static let bundleId = "com.example.pushline"
    static let projectId = "pushline-mock"

    @Option(help: "Port of the mock APNs; 0 lets the system pick one.") var apnsPort = 0
    @Option(help: "Port of the mock FCM and its token endpoint; 0 lets the system pick one.") var fcmPort = 0
    @Option(help: "Where the CA, the credentials and sender.env are written.") var dir = "var/mocks"
    @Option(help: "Device and registration tokens starting with this are unregistered: APNs answers 410 Unregistered, FCM 404 UNREGISTERED. Empty: none.")
    var unregisteredPrefix = "dead"
    @Option(help: "Append one line of JSON per push answered to this file: provider, device token, status, apns-id or FCM message name, and the payload's _dId and _mId.")
    var pushLog: String?

    func validate() throws {
        for (name, port) in [("--apns-port", apnsPort), ("--fcm-port", fcmPort)] where !(0...65535).contains(port) {
            throw ValidationError("\(name) must be a port number (0 picks one)")
        }
    }

    func run() async throws {
        let directory = PushMocksDirectory(path: dir)
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let ca = try TestCA()
        let keys = TestPushKeys(projectId: Self.projectId)
        let apnsKey = try P256.Signing.PrivateKey(pemRepresentation: keys.apnsPEM)
        let apns = MockAPNsServer(ca: ca, trustedKeys: [
            .init(teamId: Self.teamId, keyId: Self.keyId, bundleId: Self.bundleId, publicKey: apnsKey.publicKey),
        ], keepsRequests: false)
        let fcm = MockFCMServer(ca: ca, accounts: [try .init(keys)], keepsRequests: false)
        if !unregisteredPrefix.isEmpty {
            let prefix = unregisteredPrefix
            apns.setBehaviourRule { token in
                token.hasPrefix(prefix) ? .unregistered(timestampMs: Int64(Date().timeIntervalSince1970 * 1000)) : nil
            }
            fcm.setBehaviourRule { token in token.hasPrefix(prefix) ? .unregistered : nil }
        }

        if let pushLog {
            let log = try PushLog(path: pushLog)
            apns.setPushObserver { log.append($0) }
            fcm.setPushObserver { log.append($0) }
        }

        try await apns.start(port: apnsPort)
        do {
            try await fcm.start(port: fcmPort)
        } catch {
            await apns.stop()
            throw error
        }
        do {
            try write(directory, ca: ca, keys: keys, apns: apns, fcm: fcm)
            try Self.writeProviderToken(apnsKey, to: directory)
        } catch {
            await apns.stop()
            await fcm.stop()
            throw error
        }
        say("mock APNs \(apns.baseURL)  team \(Self.teamId), key \(Self.keyId), bundle \(Self.bundleId)")
        say("mock FCM  \(fcm.baseURL)  project \(Self.projectId), token endpoint \(fcm.tokenURI)")
        if !unregisteredPrefix.isEmpty { say("tokens starting with '\(unregisteredPrefix)' are unregistered") }
        say("credentials and \(URL(fileURLWithPath: directory.senderEnvFile).lastPathComponent) in \(directory.url.path)")
        if let pushLog { say("pushes answered are logged to \(pushLog)") }

        var logger = Logger(label: "pushline-mocks")
        logger.logLevel = .warning
        var failure: (any Error)?
        do {
            try await ServiceGroup(services: [TokenRefresher(key: apnsKey, directory: directory)],
                                   gracefulShutdownSignals: [.sigterm, .sigint], logger: logger).run()
        } catch {
            failure = error
        }

        // The ports and the CA die with this process: a sender must not be pointed at them.
        try? FileManager.default.removeItem(atPath: directory.senderEnvFile)
        await apns.stop()
        await fcm.stop()
        say("answered: APNs \(Self.describe(apns.answeredByStatus)), FCM \(Self.describe(fcm.answeredByStatus))")
        if let failure { throw failure }
    }

    private func write(_ directory: PushMocksDirectory, ca: TestCA, keys: TestPushKeys, apns: MockAPNsServer, fcm: MockFCMServer) throws {
        try ca.writeCertificate(to: directory.caFile)
        try PushMocksDirectory.write(keys.apnsPEM, to: directory.apnsKeyFile, secret: true)
        let account = try JSONSerialization.data(withJSONObject: keys.serviceAccount(extra: ["token_uri": fcm.tokenURI]),
                                                 options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        try PushMocksDirectory.write(String(decoding: account, as: UTF8.self) + "\n", to: directory.fcmServiceAccountFile, secret: true)
        let credentials = PushMocksDirectory.Credentials(
            apns: .init(teamId: Self.teamId, keyId: Self.keyId, bundleId: Self.bundleId, environment: "production",
                        privateKeyFile: directory.apnsKeyFile, url: apns.baseURL),
            fcm: .init(projectId: keys.projectId, clientEmail: keys.clientEmail, serviceAccountFile: directory.fcmServiceAccountFile,
                       url: fcm.baseURL, tokenURI: fcm.tokenURI),
            unregisteredPrefix: unregisteredPrefix)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try PushMocksDirectory.write(String(decoding: try encoder.encode(credentials), as: UTF8.self) + "\n", to: directory.credentialsFile)
        try PushMocksDirectory.write(#"{"aps":{"alert":{"title":"Hello","body":"from pushline-mocks"}}}"# + "\n", to: directory.apnsBodyFile)
        // Last: its presence says the rest is written.
        try PushMocksDirectory.write(directory.senderEnvironment(apnsURL: apns.baseURL, fcmURL: fcm.baseURL), to: directory.senderEnvFile)
    }

    /// Writes a provider token of `key` issued now: ES256 over `{"alg","kid"}.{"iss","iat"}`,
    /// the signature as r‖s (RFC 7518 §3.4), as Apple specifies it.
    static func writeProviderToken(_ key: P256.Signing.PrivateKey, to directory: PushMocksDirectory) throws {
        func base64URL(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let header = base64URL(Data(#"{"alg":"ES256","kid":"\#(keyId)"}"#.utf8))
        let claims = base64URL(Data(#"{"iss":"\#(teamId)","iat":\#(Int(Date().timeIntervalSince1970))}"#.utf8))
        let signature = try key.signature(for: Data("\(header).\(claims)".utf8))
        try PushMocksDirectory.write("\(header).\(claims).\(base64URL(signature.rawRepresentation))\n", to: directory.apnsJWTFile)
    }

    /// Writes a line at once: the output usually goes to a log file, where `print` would hold it
    /// back until the process ends.
    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// `200×9, 410×1`, statuses in order; `none` for no request.
    static func describe(_ counts: [Int: Int]) -> String {
        counts.isEmpty ? "none" : counts.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: ", ")
    }
}

/// Rewrites `apns-jwt.txt` every 20 minutes, so that the token in it is always less than the
/// hour old APNs accepts; returns on graceful shutdown.
private struct TokenRefresher: Service {
    /// swift-crypto's key is not `Sendable`; its PEM is.
    let keyPEM: String
    let directory: PushMocksDirectory

    init(key: P256.Signing.PrivateKey, directory: PushMocksDirectory) {
        keyPEM = key.pemRepresentation
        self.directory = directory
    }

    func run() async throws {
        while (try? await cancelWhenGracefulShutdown({ try await Task.sleep(for: .seconds(20 * 60)) })) != nil {
            try PushMocks.writeProviderToken(try P256.Signing.PrivateKey(pemRepresentation: keyPEM), to: directory)
        }
    }
}
