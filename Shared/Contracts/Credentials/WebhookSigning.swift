import Crypto
import Foundation
import WireCodec

/// The signature Pushline puts on every status webhook and app callback, besides the seed's
/// (docs/API.md#webhook-signatures).
///
/// The seed's `Signature` is keyed with the app's client token, which ships in the app, and covers
/// only the URL: it proves nothing about who sent the body. This one is keyed with a per-app
/// secret that only the server holds, derived from the deployment's secrets key
/// (`SecretsKeyring.derivedKey`), and covers a timestamp and the exact body, so a receiver can
/// tell a webhook of Pushline's from a forged or replayed one. The processor signs; ingest derives
/// the same secret to show it to the admin.
///
/// The header is `x-pushline-signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]`, each `v1` being
/// `hex(HMAC-SHA256(key: UTF-8 of the secret, message: UTF-8 of "<t>." followed by the body))`
/// under one key of the keyring, the current key's first: during a rotation of the secrets key a
/// webhook carries one `v1` per key, so receivers holding either secret keep verifying.
public enum WebhookSigning {
    public static let header = "x-pushline-signature"
    /// What a secret's text starts with, so that one is recognised in a configuration file.
    public static let secretPrefix = "whsec_"

    /// The purpose of the key an app's secret is derived from.
    public static func purpose(app: UUID) -> String {
        "pushline/webhook-signing/v1/\(app.lowercasedString)"
    }

    /// The app's signing secret under the keyring's key `keyId` (nil: the current key), or nil
    /// when the keyring does not hold that key.
    public static func secret(app: UUID, keyring: SecretsKeyring, keyId: String? = nil) -> String? {
        guard let key = keyring.derivedKey(purpose: purpose(app: app), keyId: keyId) else { return nil }
        return secretPrefix + key.withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() }
    }

    /// Every secret of the app, one per key of the keyring, the current key's first.
    public static func secrets(app: UUID, keyring: SecretsKeyring) -> [String] {
        keyring.keyIds.compactMap { secret(app: app, keyring: keyring, keyId: $0) }
    }

    /// `hex(HMAC-SHA256(key: UTF-8 of secret, message: "<timestamp>." + body))`.
    public static func signature(secret: String, timestamp: Int64, body: Data) -> String {
        var message = Data("\(timestamp).".utf8)
        message.append(body)
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Data(secret.utf8)))
        return mac.map { String(format: "%02x", $0) }.joined()
    }

    /// The header's value for `body` sent at `timestamp`, signed with each of `secrets`.
    public static func headerValue(secrets: [String], timestamp: Int64, body: Data) -> String {
        (["t=\(timestamp)"] + secrets.map { "v1=" + signature(secret: $0, timestamp: timestamp, body: body) }).joined(separator: ",")
    }

    /// Whether `headerValue` signs `body` with `secret`, at a time within `tolerance` of `now`: what
    /// a receiver does (the tests use it as one).
    public static func verify(headerValue: String, body: Data, secret: String, now: Date, tolerance: TimeInterval = 300) -> Bool {
        var timestamp: Int64?
        var signatures: [String] = []
        for part in headerValue.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int64(pair[1]) } else if pair[0] == "v1" { signatures.append(pair[1]) }
        }
        guard let timestamp, abs(now.timeIntervalSince1970 - Double(timestamp)) <= tolerance else { return false }
        let expected = signature(secret: secret, timestamp: timestamp, body: body)
        return signatures.contains { ApiTokens.constantTimeEquals($0, expected) }
    }
}
