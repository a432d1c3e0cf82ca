import JWTKit

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
