import Foundation

/// The directory `pushline-mocks` writes while its mock APNs and FCM servers run (default
/// `var/mocks`): what a sender, an operator or a benchmark needs to talk to them. The CA and the
/// keys are made anew at every start, so the files are only good while that run lasts.
///
/// - `ca.pem`: the CA the servers' certificate chains to (`PUSHLINE_SENDER_CA_FILE`);
/// - `apns-key.p8`: the APNs signing key the APNs mock trusts;
/// - `fcm-service-account.json`: the service account the FCM mock trusts, its `token_uri` the
///   mock's token endpoint;
/// - `credentials.json` (`Credentials`): the ids that go with them and where the servers listen;
/// - `apns-jwt.txt`: a provider token of that key, rewritten every 20 minutes (APNs takes one
///   for an hour), for clients that cannot sign one, such as h2load;
/// - `apns-body.json`: a small alert payload to push;
/// - `sender.env`: `PUSHLINE_APNS_URL`, `PUSHLINE_FCM_URL` and `PUSHLINE_SENDER_CA_FILE` for
///   `pushline-sender`, one `NAME=value` a line; written last, and removed when the mocks stop.
public struct PushMocksDirectory: Sendable {
    /// The ids of the credentials the mocks trust, the files that hold their secrets, and where
    /// the mocks listen: `credentials.json`.
    public struct Credentials: Codable, Sendable, Equatable {
        public struct APNs: Codable, Sendable, Equatable {
            public var teamId: String
            public var keyId: String
            public var bundleId: String
            public var environment: String
            /// The absolute path of `apns-key.p8`.
            public var privateKeyFile: String
            public var url: String

            public init(teamId: String, keyId: String, bundleId: String, environment: String, privateKeyFile: String, url: String) {
                self.teamId = teamId
                self.keyId = keyId
                self.bundleId = bundleId
                self.environment = environment
                self.privateKeyFile = privateKeyFile
                self.url = url
            }
        }

        public struct FCM: Codable, Sendable, Equatable {
            public var projectId: String
            public var clientEmail: String
            /// The absolute path of `fcm-service-account.json`.
            public var serviceAccountFile: String
            public var url: String
            public var tokenURI: String

            public init(projectId: String, clientEmail: String, serviceAccountFile: String, url: String, tokenURI: String) {
                self.projectId = projectId
                self.clientEmail = clientEmail
                self.serviceAccountFile = serviceAccountFile
                self.url = url
                self.tokenURI = tokenURI
            }
        }

        public var apns: APNs
        public var fcm: FCM
        /// Tokens starting with it are unregistered at both mocks; empty when none is.
        public var unregisteredPrefix: String

        public init(apns: APNs, fcm: FCM, unregisteredPrefix: String) {
            self.apns = apns
            self.fcm = fcm
            self.unregisteredPrefix = unregisteredPrefix
        }
    }

    /// The directory, absolute.
    public let url: URL

    /// - Parameter path: absolute, or relative to the current directory.
    public init(path: String) {
        url = URL(fileURLWithPath: path).standardizedFileURL
    }

    public var caFile: String { file("ca.pem") }
    public var apnsKeyFile: String { file("apns-key.p8") }
    public var fcmServiceAccountFile: String { file("fcm-service-account.json") }
    public var credentialsFile: String { file("credentials.json") }
    public var apnsJWTFile: String { file("apns-jwt.txt") }
    public var apnsBodyFile: String { file("apns-body.json") }
    public var senderEnvFile: String { file("sender.env") }

    /// The lines of `sender.env`: the mocks' base URLs and the CA to trust.
    public func senderEnvironment(apnsURL: String, fcmURL: String) -> String {
        "PUSHLINE_APNS_URL=\(apnsURL)\nPUSHLINE_FCM_URL=\(fcmURL)\nPUSHLINE_SENDER_CA_FILE=\(caFile)\n"
    }

    public func readCredentials() throws -> Credentials {
        try JSONDecoder().decode(Credentials.self, from: Data(contentsOf: URL(fileURLWithPath: credentialsFile)))
    }

    /// Writes `text` to `path` at once (readers never see half a file); `secret` makes it
    /// readable by its owner only.
    public static func write(_ text: String, to path: String, secret: Bool = false) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        if secret { try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path) }
    }

    private func file(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }
}
