import _CryptoExtras
import Contracts
import Crypto
import Foundation

/// Push credentials made for a test: an APNs signing key and a Google service account with keys
/// generated on the spot, so that no key is ever committed.
public struct TestPushKeys: Sendable {
    /// The `.p8` PEM (PKCS#8, EC P-256), as Apple hands it out.
    public let apnsPEM: String
    /// The service account's RSA key, PKCS#8 PEM as in Google's key files.
    public let rsaPEM: String
    public let projectId: String
    public let clientEmail: String

    public init(projectId: String = "pushline-test-1", tokenURI: String = "https://oauth2.googleapis.com/token") {
        apnsPEM = P256.Signing.PrivateKey().pemRepresentation
        rsaPEM = try! _RSA.Signing.PrivateKey(keySize: .bits2048).pkcs8PEMRepresentation
        self.projectId = projectId
        clientEmail = "pushline@\(projectId).iam.gserviceaccount.com"
        self.tokenURI = tokenURI
    }

    public let tokenURI: String

    /// The service-account key file's JSON object.
    public func serviceAccount(extra: [String: Any] = [:]) -> [String: Any] {
        var account: [String: Any] = [
            "type": "service_account", "project_id": projectId, "private_key_id": "0123456789abcdef",
            "private_key": rsaPEM, "client_email": clientEmail, "client_id": "1234567890",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": tokenURI,
        ]
        for (key, value) in extra { account[key] = value }
        return account
    }

    /// The base64 body of a PEM (its lines joined, no armour): what must never show outside a seal.
    public static func pemBody(_ pem: String) -> String {
        pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    }

    /// A 32-byte deployment key, base64, as `PUSHLINE_SECRETS_KEY` takes it.
    public static func secretsKey() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64EncodedString()
    }
}
