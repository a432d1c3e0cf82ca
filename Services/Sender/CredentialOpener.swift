import Contracts
import Foundation
import Synchronization
import WireCodec

/// Opens apps' sealed credentials for sending (docs/ARCHITECTURE.md#delivery) and keeps each
/// opened key, parsed, for as long as the app's credentials stay the same: a key is opened and
/// parsed once, not once per push.
public final class CredentialOpener: Sendable {
    private let keyring: SecretsKeyring
    /// Per app, with the sealed secret they were opened from: compared, not hashed, per push
    /// (the same string in the credentials cache, so usually by identity).
    private let apnsKeys = Mutex<[UUID: (sealed: String, key: APNsSigningKey)]>([:])
    private let accounts = Mutex<[UUID: (sealed: String, account: FCMServiceAccount)]>([:])

    public init(keyring: SecretsKeyring) {
        self.keyring = keyring
    }

    /// The APNs signing key of `app`'s credentials.
    public func apnsKey(app: UUID, _ credentials: APNsCredentials) throws(SenderError) -> APNsSigningKey {
        let sealed = credentials.privateKey.box
        if let entry = apnsKeys.withLock({ $0[app] }), entry.sealed == sealed { return entry.key }
        let pem = try open(credentials.privateKey, app: app, provider: .apns)
        let key: APNsSigningKey
        do {
            key = try APNsSigningKey(teamId: credentials.teamId, keyId: credentials.keyId, fingerprint: credentials.fingerprint,
                                     pem: String(decoding: pem, as: UTF8.self))
        } catch {
            throw .credentials("the APNs key of app \(app.lowercasedString) does not parse")
        }
        apnsKeys.withLock { $0[app] = (sealed, key) }
        return key
    }

    /// The service account of `app`'s FCM credentials.
    public func fcmAccount(app: UUID, _ credentials: FCMCredentials) throws(SenderError) -> FCMServiceAccount {
        let sealed = credentials.serviceAccount.box
        if let entry = accounts.withLock({ $0[app] }), entry.sealed == sealed { return entry.account }
        let json = try open(credentials.serviceAccount, app: app, provider: .fcm)
        let account: FCMServiceAccount
        do {
            account = try FCMServiceAccount(json: json, fingerprint: credentials.fingerprint)
        } catch {
            throw .credentials("the FCM service account of app \(app.lowercasedString) does not parse")
        }
        accounts.withLock { $0[app] = (sealed, account) }
        return account
    }

    private func open(_ sealed: SealedSecret, app: UUID, provider: PushProvider) throws(SenderError) -> Data {
        do {
            return try keyring.open(sealed, context: SecretsKeyring.context(app: app, provider: provider))
        } catch {
            throw .credentials("\(provider.rawValue) credentials of app \(app.lowercasedString): \(error)")
        }
    }
}
