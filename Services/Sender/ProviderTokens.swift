import Contracts
import Foundation
import JWTKit

/// An APNs signing key, opened from an app's sealed credentials.
public struct APNsSigningKey: Sendable {
    public let teamId: String
    public let keyId: String
    /// Tells two keys of the same ids apart (a key replaced under the same key id).
    public let fingerprint: String
    let key: ES256PrivateKey

    /// - Parameter pem: the `.p8` text.
    public init(teamId: String, keyId: String, fingerprint: String, pem: String) throws {
        self.teamId = teamId
        self.keyId = keyId
        self.fingerprint = fingerprint
        key = try ES256PrivateKey(pem: pem)
    }
}

/// APNs provider tokens (docs/ARCHITECTURE.md#delivery): one ES256 JWT per signing key, reused
/// until it is `refreshAfter` old. Apple refuses a token older than an hour
/// (`ExpiredProviderToken`) and one refreshed more often than every 20 minutes
/// (`TooManyProviderTokenUpdates`), so the default, 50 minutes, sits between the two.
public actor APNsProviderTokens {
    private struct Entry {
        var jwt: String
        var issuedAt: Date
    }

    private var entries: [String: Entry] = [:]
    /// Signings under way: concurrent first pushes of a key wait for one token (the actor is
    /// reentrant across the signing's suspension, and Apple throttles a key renewed too often).
    private var signing: [String: Task<String, any Error>] = [:]
    public let refreshAfter: TimeInterval
    /// How many tokens were signed: the tests check reuse by it.
    public private(set) var signed = 0

    public init(refreshAfter: TimeInterval = 50 * 60) {
        precondition(refreshAfter >= 20 * 60 && refreshAfter < 60 * 60, "APNs wants a token 20 to 60 minutes old")
        self.refreshAfter = refreshAfter
    }

    /// The token to send with `key` at `now`: the one in use while it is younger than
    /// `refreshAfter`, else a new one issued at `now`.
    public func token(for key: APNsSigningKey, now: Date = Date()) async throws -> String {
        let id = Self.id(key)
        if let entry = entries[id], now.timeIntervalSince(entry.issuedAt) < refreshAfter, entry.issuedAt <= now {
            return entry.jwt
        }
        if let running = signing[id] { return try await running.value }
        let task = Task<String, any Error> {
            let claims = APNsClaims(iss: key.teamId, iat: Int(now.timeIntervalSince1970))
            let keys = JWTKeyCollection()
            await keys.add(ecdsa: key.key, kid: JWKIdentifier(string: key.keyId))
            return try await keys.sign(claims, kid: JWKIdentifier(string: key.keyId))
        }
        signing[id] = task
        defer { signing[id] = nil }
        let jwt = try await task.value
        entries[id] = Entry(jwt: jwt, issuedAt: now)
        signed += 1
        return jwt
    }

    /// Forgets the key's token: APNs refused it (`ExpiredProviderToken`), so the next send signs anew.
    public func invalidate(_ key: APNsSigningKey) {
        entries[Self.id(key)] = nil
    }

    private static func id(_ key: APNsSigningKey) -> String { "\(key.teamId)/\(key.keyId)/\(key.fingerprint)" }
}

/// The claims Apple reads: the team and the issue time in whole seconds.
struct APNsClaims: JWTPayload {
    var iss: String
    var iat: Int

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// A Google service account, opened from an app's sealed FCM credentials.
public struct FCMServiceAccount: Sendable {
    public let projectId: String
    public let clientEmail: String
    public let privateKeyId: String?
    public let tokenURI: String
    public let fingerprint: String
    let key: Insecure.RSA.PrivateKey

    /// - Parameter json: the service-account key file, as sealed.
    public init(json: Data, fingerprint: String) throws {
        let account = try JSONDecoder().decode(GoogleServiceAccount.self, from: json)
        guard let projectId = account.projectId, let clientEmail = account.clientEmail, let pem = account.privateKey else {
            throw SenderError.credentials("the service account lacks project_id, client_email or private_key")
        }
        self.projectId = projectId
        self.clientEmail = clientEmail
        privateKeyId = account.privateKeyId
        tokenURI = account.tokenUri ?? "https://oauth2.googleapis.com/token"
        self.fingerprint = fingerprint
        key = try Insecure.RSA.PrivateKey(pem: pem)
    }
}

/// The signed assertion a service account trades for an access token (OAuth 2.0 JWT bearer
/// grant, RFC 7523): valid for an hour, for the FCM scope, addressed to the token URI.
public enum GoogleAssertion {
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    public static let lifetime: TimeInterval = 3600

    public static func sign(_ account: FCMServiceAccount, now: Date = Date()) async throws -> String {
        let iat = Int(now.timeIntervalSince1970)
        let claims = GoogleAssertionClaims(iss: account.clientEmail, scope: scope, aud: account.tokenURI, iat: iat,
                                           exp: iat + Int(lifetime))
        let keys = JWTKeyCollection()
        let kid = account.privateKeyId.map { JWKIdentifier(string: $0) }
        await keys.add(rsa: account.key, digestAlgorithm: .sha256, kid: kid)
        return try await keys.sign(claims, kid: kid)
    }

    /// The form body of the token request.
    public static func tokenRequestBody(assertion: String) -> String {
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
    }
}

struct GoogleAssertionClaims: JWTPayload {
    var iss: String
    var scope: String
    var aud: String
    var iat: Int
    var exp: Int

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// What went wrong on the sender's side of a delivery.
public enum SenderError: Error, Equatable, CustomStringConvertible {
    /// Credentials that cannot be used (missing, do not open, do not parse).
    case credentials(String)

    public var description: String {
        switch self {
        case .credentials(let why): "push credentials unusable: \(why)"
        }
    }
}
