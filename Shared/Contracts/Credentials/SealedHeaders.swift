import Foundation
import WireCodec

/// Callback header values sealed like push credentials (docs/API.md#webhook-delivery).
///
/// An app's `callbackHeaders` and a registration's `x-ms-callback-url-headers` often carry the
/// receiver's credentials. When ingest holds the deployment's keyring it seals each value
/// (AES-256-GCM, bound to the app and the header's name) before it enters a command, so Kafka,
/// the store, the outbox, the changelog and the logs hold only seals; the webhook dispatcher opens
/// them right before it sends. A sealed value is text: `pushline-sealed:v1:<keyId>:<box>`. Values
/// written without a keyring (or before sealing existed) stay as they are and are sent as they are.
public enum SealedHeaders {
    public static let prefix = "pushline-sealed:v1:"

    /// What the seal of the value of header `name` of `app` is bound to.
    public static func context(app: UUID, name: String) -> String {
        "pushline/callback-header/v1/\(app.lowercasedString)/\(name.lowercased())"
    }

    public static func isSealed(_ value: String) -> Bool {
        value.hasPrefix(prefix)
    }

    /// Every value sealed for `app` under the keyring's current key.
    public static func seal(_ headers: [String: String], app: UUID, keyring: SecretsKeyring) -> [String: String] {
        var sealed: [String: String] = [:]
        for (name, value) in headers {
            let seal = keyring.seal(Data(value.utf8), context: context(app: app, name: name))
            sealed[name] = prefix + seal.keyId + ":" + seal.box
        }
        return sealed
    }

    /// The values as sent: sealed ones opened (throws when one does not open: no keyring, a key
    /// it does not hold, or a seal of another app or header), the others as they are.
    public static func open(_ headers: [String: String], app: UUID?, keyring: SecretsKeyring?) throws(SecretsKeyError) -> [String: String] {
        var opened: [String: String] = [:]
        for (name, value) in headers {
            guard isSealed(value) else {
                opened[name] = value
                continue
            }
            let rest = value.dropFirst(prefix.count)
            guard let colon = rest.firstIndex(of: ":") else { throw .cannotOpen("?") }
            let seal = SealedSecret(keyId: String(rest[..<colon]), box: String(rest[rest.index(after: colon)...]))
            guard let keyring else { throw .unknownKey(seal.keyId) }
            guard let app else { throw .cannotOpen(seal.keyId) }
            let secret = try keyring.open(seal, context: context(app: app, name: name))
            opened[name] = String(decoding: secret, as: UTF8.self)
        }
        return opened
    }
}
