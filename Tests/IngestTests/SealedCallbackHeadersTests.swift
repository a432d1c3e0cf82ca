import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import TestSupport
import XCTest

/// Callback header values are sealed at the door like push credentials: with the deployment's
/// keys, neither an app's `callbackHeaders` nor a registration's `x-ms-callback-url-headers`
/// enters a command in clear, and each seal opens only for its app and header.
final class SealedCallbackHeadersTests: XCTestCase {
    private func makeHarness(secrets keyring: SecretsKeyring?) async -> Harness {
        var harness = Harness()
        harness.configuration.secrets = keyring
        _ = await harness.seedApp()
        return harness
    }

    func testAnAppsCallbackHeaderValuesAreSealedForThatAppAndHeader() async throws {
        let keyring = try SecretsKeyring(current: TestPushKeys.secretsKey())
        let harness = await makeHarness(secrets: keyring)
        let answer = try await harness.test { client in
            try await client.admin(.patch, "/admin/v1/apps/\(Fixture.appId)", json: #"{"callbackHeaders": {"X-Key": "backend-s3cret"}}"#)
        }
        XCTAssertEqual(answer.status, .accepted)
        let command = try await harness.onlyPublished(AppSettingsChanged.self)
        let sealed = try XCTUnwrap(command.callbackHeaders?["X-Key"])
        XCTAssertTrue(SealedHeaders.isSealed(sealed) && !sealed.contains("backend-s3cret"), sealed)
        XCTAssertEqual(try SealedHeaders.open(["X-Key": sealed], app: Fixture.appId, keyring: keyring), ["X-Key": "backend-s3cret"])
        XCTAssertThrowsError(try SealedHeaders.open(["X-Key": sealed], app: UUID(), keyring: keyring), "bound to its app")
        XCTAssertThrowsError(try SealedHeaders.open(["X-Other": sealed], app: Fixture.appId, keyring: keyring), "bound to its header")
        let raw = await harness.publisher.commands.map { String(decoding: $0.value, as: UTF8.self) }.joined()
        XCTAssertFalse(raw.contains("backend-s3cret"), "the record holds only the seal")
    }

    func testAStatusWebhooksHeaderValuesAreSealedAndWithoutKeysWrittenAsGiven() async throws {
        let keyring = try SecretsKeyring(current: TestPushKeys.secretsKey())
        for secrets in [keyring, nil] {
            let harness = await makeHarness(secrets: secrets)
            let answer = try await harness.test { client in
                try await client.post(Fixture.devices(), object: Fixture.registration(), headers: [
                    .xMsCallbackURL: "https://hooks.example.com/status",
                    .xMsCallbackURLHeaders: #"{"X-App-Key": "hook-s3cret"}"#,
                ])
            }
            XCTAssertEqual(answer.status, .accepted)
            let command = try await harness.onlyPublished(DeviceRegistrationRequested.self)
            let value = try XCTUnwrap(command.callback?.headers["X-App-Key"])
            if secrets == nil {
                XCTAssertEqual(value, "hook-s3cret")
            } else {
                XCTAssertFalse(value.contains("hook-s3cret"), value)
                XCTAssertEqual(try SealedHeaders.open(["X-App-Key": value], app: Fixture.appId, keyring: keyring)["X-App-Key"], "hook-s3cret")
            }
        }
    }
}
