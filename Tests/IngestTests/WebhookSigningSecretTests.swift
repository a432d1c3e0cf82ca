import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import TestSupport
import XCTest

/// `GET /admin/v1/apps/{id}/webhook-signing-secret`: the secret ingest shows is the one the
/// processor signs with (both derive it from the deployment's keys), never cached.
final class WebhookSigningSecretTests: XCTestCase {
    private static let path = "/admin/v1/apps/\(Fixture.appId)/webhook-signing-secret"

    func testTheSecretIsTheAppsDerivedSecretWithThePreviousKeysSecretsDuringARotation() async throws {
        let current = TestPushKeys.secretsKey(), previous = TestPushKeys.secretsKey()
        var harness = Harness()
        let keyring = try SecretsKeyring(current: current, previous: previous)
        harness.configuration.secrets = keyring
        _ = await harness.seedApp()
        let path = Self.path
        let (answer, unauthenticated, unknown) = try await harness.test { client in
            (try await client.admin(.get, path), try await client.admin(.get, path, token: "wrong"),
             try await client.admin(.get, "/admin/v1/apps/\(UUID())/webhook-signing-secret"))
        }
        XCTAssertEqual(answer.status, .ok)
        XCTAssertEqual(answer.headers[.cacheControl], "no-store")
        let view = try decodeBody(AdminAPI.WebhookSigningSecretView.self, answer)
        XCTAssertEqual(view.header, "x-pushline-signature")
        XCTAssertEqual(view.secret, WebhookSigning.secret(app: Fixture.appId, keyring: try SecretsKeyring(current: current)))
        XCTAssertEqual(view.keyId, keyring.currentKeyId)
        XCTAssertEqual(view.previousSecrets.map(\.secret), [WebhookSigning.secret(app: Fixture.appId, keyring: try SecretsKeyring(current: previous))])
        XCTAssertEqual(unauthenticated.status, .unauthorized)
        try assertProblem(unknown, .notFound, field: "mobileAppId")
    }

    func testWithoutASecretsKeyTheRouteSays503() async throws {
        let harness = Harness()
        _ = await harness.seedApp()
        let path = Self.path
        let answer = try await harness.test { client in try await client.admin(.get, path) }
        try assertProblem(answer, .serviceUnavailable, field: nil, code: .secretsKeyMissing)
    }
}
