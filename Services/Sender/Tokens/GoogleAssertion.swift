import Foundation
import JWTKit

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
