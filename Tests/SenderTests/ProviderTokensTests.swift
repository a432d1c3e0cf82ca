import _CryptoExtras
import Contracts
import Crypto
import Foundation
import Sender
import TestSupport
import XCTest

/// Provider tokens, checked with swift-crypto directly (not with the JWT library that signed them).
final class ProviderTokensTests: XCTestCase {
    static let keys = TestPushKeys(tokenURI: "https://oauth2.test/token")
    let keys = ProviderTokensTests.keys
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    private func parts(_ jwt: String) throws -> DecodedJWT {
        try XCTUnwrap(DecodedJWT(compact: jwt), "not a compact JWS: \(jwt)")
    }

    private func apnsKey(keyId: String = "KEY1234567") throws -> APNsSigningKey {
        try APNsSigningKey(teamId: "ABCDE12345", keyId: keyId, fingerprint: "SHA256:x", pem: keys.apnsPEM)
    }

    func testAnAPNsTokenIsAnES256JWTOfTheTeamAndKeyAtTheMomentOfIssue() async throws {
        let tokens = APNsProviderTokens()
        let jwt = try await tokens.token(for: try apnsKey(), now: t0)
        let parts = try parts(jwt)
        XCTAssertEqual(parts.header["alg"], .string("ES256"))
        XCTAssertEqual(parts.header["kid"], .string("KEY1234567"))
        XCTAssertEqual(parts.claims["iss"], .string("ABCDE12345"))
        XCTAssertEqual(parts.claims["iat"], .number(1_800_000_000), "whole seconds")
        let publicKey = try P256.Signing.PrivateKey(pemRepresentation: keys.apnsPEM).publicKey
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: parts.signature)
        XCTAssertTrue(publicKey.isValidSignature(signature, for: parts.signingInput))
        XCTAssertFalse(publicKey.isValidSignature(signature, for: parts.signingInput + [0]))
    }

    func testAnAPNsTokenIsReusedFor50MinutesThenRenewedAndCanBeDropped() async throws {
        let tokens = APNsProviderTokens()
        let key = try apnsKey()
        let first = try await tokens.token(for: key, now: t0)
        let reused = try await tokens.token(for: key, now: t0.addingTimeInterval(49 * 60 + 59))
        XCTAssertEqual(reused, first)
        let signedOnce = tokens.signed
        XCTAssertEqual(signedOnce, 1)
        let renewed = try await tokens.token(for: key, now: t0.addingTimeInterval(50 * 60))
        XCTAssertNotEqual(renewed, first)
        XCTAssertEqual(try parts(renewed).claims["iat"], .number(1_800_000_000 + 3000))
        tokens.invalidate(key)
        let afterInvalidation = try await tokens.token(for: key, now: t0.addingTimeInterval(50 * 60 + 1))
        XCTAssertNotEqual(afterInvalidation, renewed)
        let other = try await tokens.token(for: try apnsKey(keyId: "OTHERKEY12"), now: t0.addingTimeInterval(50 * 60 + 1))
        XCTAssertEqual(try parts(other).header["kid"], .string("OTHERKEY12"), "each key has its own token")
        let signed = tokens.signed
        XCTAssertEqual(signed, 4)
    }

    func testConcurrentFirstPushesOfAKeyWaitForOneToken() async throws {
        let tokens = APNsProviderTokens()
        let (key, now) = (try apnsKey(), t0)
        let all = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 { group.addTask { try await tokens.token(for: key, now: now) } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        XCTAssertEqual(all.count, 1)
        let signed = tokens.signed
        XCTAssertEqual(signed, 1, "one signing for all of them")
    }

    func testAGoogleAssertionIsAnRS256JWTForTheFCMScopeAddressedToTheTokenURI() async throws {
        let json = try JSONSerialization.data(withJSONObject: keys.serviceAccount())
        let account = try FCMServiceAccount(json: json, fingerprint: "SHA256:y")
        XCTAssertEqual(account.projectId, keys.projectId)
        XCTAssertEqual(account.tokenURI, "https://oauth2.test/token")
        let jwt = try await GoogleAssertion.sign(account, now: t0)
        let parts = try parts(jwt)
        XCTAssertEqual(parts.header["alg"], .string("RS256"))
        XCTAssertEqual(parts.header["kid"], .string("0123456789abcdef"))
        XCTAssertEqual(parts.claims["iss"], .string(keys.clientEmail))
        XCTAssertEqual(parts.claims["aud"], .string("https://oauth2.test/token"))
        XCTAssertEqual(parts.claims["scope"], .string("https://www.googleapis.com/auth/firebase.messaging"))
        XCTAssertEqual(parts.claims["iat"], .number(1_800_000_000))
        XCTAssertEqual(parts.claims["exp"], .number(1_800_003_600))
        let publicKey = try _RSA.Signing.PrivateKey(pemRepresentation: keys.rsaPEM).publicKey
        XCTAssertTrue(publicKey.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: parts.signature), for: parts.signingInput,
                                                 padding: .insecurePKCS1v1_5))
        XCTAssertTrue(GoogleAssertion.tokenRequestBody(assertion: jwt)
            .hasPrefix("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=ey"))
    }

    func testAServiceAccountWithoutItsKeyIsUnusable() throws {
        let json = try JSONSerialization.data(withJSONObject: keys.serviceAccount(extra: ["private_key": NSNull()]))
        XCTAssertThrowsError(try FCMServiceAccount(json: json, fingerprint: "f")) { error in
            guard case SenderError.credentials = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try APNsSigningKey(teamId: "T", keyId: "K", fingerprint: "f", pem: keys.rsaPEM))
    }
}
