import Contracts
import Foundation
import JWTKit
import Synchronization

/// An APNs signing key, opened from an app's sealed credentials.
public struct APNsSigningKey: Sendable {
    public let teamId: String
    public let keyId: String
    /// Tells two keys of the same ids apart (a key replaced under the same key id).
    public let fingerprint: String
    let key: ES256PrivateKey
    /// Which token is this key's.
    let id: String

    /// - Parameter pem: the `.p8` text.
    public init(teamId: String, keyId: String, fingerprint: String, pem: String) throws {
        self.teamId = teamId
        self.keyId = keyId
        self.fingerprint = fingerprint
        key = try ES256PrivateKey(pem: pem)
        id = "\(teamId)/\(keyId)/\(fingerprint)"
    }
}

/// APNs provider tokens (docs/ARCHITECTURE.md#delivery): one ES256 JWT per signing key, reused
/// until it is `refreshAfter` old. Apple refuses a token older than an hour
/// (`ExpiredProviderToken`) and one refreshed more often than every 20 minutes
/// (`TooManyProviderTokenUpdates`), so the default, 50 minutes, sits between the two.
public final class APNsProviderTokens: Sendable {
    private struct Entry: Sendable {
        var jwt: String
        var issuedAt: Date
    }

    private let cache = RefreshingCache<String, Entry>()
    public let refreshAfter: TimeInterval
    /// How many tokens were signed: the tests check reuse by it.
    public var signed: Int { cache.made }

    public init(refreshAfter: TimeInterval = 50 * 60) {
        precondition(refreshAfter >= 20 * 60 && refreshAfter < 60 * 60, "APNs wants a token 20 to 60 minutes old")
        self.refreshAfter = refreshAfter
    }

    /// The token to send with `key` at `now`: the one in use while it is younger than
    /// `refreshAfter`, else a new one issued at `now`. Concurrent first pushes of a key wait for
    /// one signing (Apple throttles a key renewed too often).
    public func token(for key: APNsSigningKey, now: Date = Date()) async throws -> String {
        try await cache.value(for: key.id, fresh: { now.timeIntervalSince($0.issuedAt) < self.refreshAfter && $0.issuedAt <= now }) {
            let claims = APNsClaims(iss: key.teamId, iat: Int(now.timeIntervalSince1970))
            let keys = JWTKeyCollection()
            await keys.add(ecdsa: key.key, kid: JWKIdentifier(string: key.keyId))
            return Entry(jwt: try await keys.sign(claims, kid: JWKIdentifier(string: key.keyId)), issuedAt: now)
        }.jwt
    }

    /// Forgets the key's token: APNs refused it (`ExpiredProviderToken`), so the next send signs anew.
    public func invalidate(_ key: APNsSigningKey) {
        cache.invalidate(key.id)
    }
}

/// FCM access tokens per service account, kept until five minutes before they expire; one
/// exchange at a time per account, whatever the number of sends waiting for it.
public final class FCMAccessTokens: Sendable {
    private struct Entry: Sendable {
        var token: String
        var expiresAt: Date
    }

    /// An answer other than a token: not kept.
    private struct NoToken: Error {
        var answer: AccessTokenAnswer
    }

    private let cache = RefreshingCache<String, Entry>()
    /// Exchanges made: the tests check caching by it.
    public var exchanges: Int { cache.made }
    public let margin: TimeInterval

    public init(margin: TimeInterval = 300) {
        self.margin = margin
    }

    /// A valid access token for `account`, from the cache or a new exchange through `client`.
    public func token(for account: FCMServiceAccount, client: ProviderClient, now: Date = Date()) async -> AccessTokenAnswer {
        do {
            let entry = try await cache.value(for: account.id, fresh: { $0.expiresAt.timeIntervalSince(now) > self.margin }) {
                let answer: AccessTokenAnswer
                do {
                    answer = await client.exchange(assertion: try await GoogleAssertion.sign(account, now: now), tokenURI: account.tokenURI)
                } catch {
                    answer = .refused(reason: "the assertion could not be signed: \(error)")
                }
                guard case .token(let token, let expiresIn) = answer else { throw NoToken(answer: answer) }
                return Entry(token: token, expiresAt: now.addingTimeInterval(expiresIn))
            }
            return .token(entry.token, expiresIn: entry.expiresAt.timeIntervalSince(now))
        } catch let error as NoToken {
            return error.answer
        } catch {
            return .retry(reason: "no access token: \(error)", retryAfter: nil)
        }
    }

    /// Forgets the account's token: FCM refused it.
    public func invalidate(_ account: FCMServiceAccount) {
        cache.invalidate(account.id)
    }
}

/// Values per key (provider tokens, access tokens, apps' credentials), reused while they are
/// fresh and made by one task at a time per key, however many callers wait for it. Reading a
/// fresh value takes a lock, not a hop to an actor: it happens for every push.
final class RefreshingCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct State {
        var values: [Key: Value] = [:]
        var making: [Key: Task<Value, any Error>] = [:]
        var made = 0
    }

    private let state = Mutex(State())

    /// Values made so far.
    var made: Int { state.withLock { $0.made } }

    /// The value of `key` if `fresh` accepts it, else the one `make` is making or makes now.
    /// A value `make` fails to make is not kept: the next call tries again.
    func value(for key: Key, fresh: (Value) -> Bool, make: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let (cached, task) = state.withLock { state -> (Value?, Task<Value, any Error>?) in
            if let value = state.values[key], fresh(value) { return (value, nil) }
            if let running = state.making[key] { return (nil, running) }
            let task = Task(operation: make)
            state.making[key] = task
            return (nil, task)
        }
        if let cached { return cached }
        guard let task else { preconditionFailure("either a value or a task") }
        let result = await task.result
        state.withLock { state in
            // The first of the waiters keeps the value.
            guard state.making[key] == task else { return }
            state.making[key] = nil
            if case .success(let value) = result {
                state.values[key] = value
                state.made += 1
            }
        }
        return try result.get()
    }

    func invalidate(_ key: Key) {
        state.withLock { _ = $0.values.removeValue(forKey: key) }
    }
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
    /// Which access token is this account's.
    let id: String

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
        id = "\(clientEmail)/\(fingerprint)"
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
