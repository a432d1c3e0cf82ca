import Contracts
import Foundation
import JWTKit

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
