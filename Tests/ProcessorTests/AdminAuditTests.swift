import Contracts
import Foundation
import Projections
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// Named admin tokens and the audit trail, decided in memory: each admin command, applied or
/// rejected, becomes one audit row of its envelope id and time, with its actor and no secret.
final class AdminAuditTests: XCTestCase {
    let org = UUID(), appId = UUID()
    let at = Date(timeIntervalSince1970: 1_800_000_000)
    let alice = AdminActor(id: UUID(), name: "alice")
    struct NotDecoded: Error {}

    private func state(adminTokens: [AdminTokenRow] = []) -> BatchState {
        var snapshot = StateSnapshot()
        snapshot.apps[AppPart(appId)] = AppRow(appId: appId, orgId: org, name: "a", createdAt: at)
        snapshot.tokens[AppPart(appId)] = []
        for token in adminTokens { snapshot.adminTokens[token.adminTokenId] = token }
        return BatchState(snapshot)
    }

    /// The command as the processor reads it from the log, with this envelope id and time.
    private func decoded<C: Command>(_ command: C, id: UUID = UUID(), at: Date? = nil) throws -> ProcessorCommand {
        let encoded = try EncodedCommand(command, topics: Topics(), id: id, at: at ?? self.at, encoder: WireJSON.encoder())
        guard case .command(let c) = CommandDecoder().decode(type: encoded.type, version: encoded.version, value: encoded.value) else {
            throw NotDecoded()
        }
        return c
    }

    private func audit(_ s: BatchState) -> [AuditEntryRow] {
        s.mutations.compactMap { if case .putAuditEntry(let e) = $0 { e } else { nil } }
    }

    /// An admin command type added later is audited too, or this fails.
    func testEveryAdminCommandTypeAndNoOtherIsAudited() {
        let admin = Set(CommandType.allCases.filter { $0.rawValue.hasPrefix("admin.") })
        XCTAssertEqual(HandlerRegistry.standard().auditedTypes, admin)
    }

    func testAdminTokenIsIssuedOnceAndRevokedAtTheRevocationsTime() {
        var s = state()
        let id = UUID()
        let issue = AdminTokenIssued(adminTokenId: id, name: "ops", tokenHash: "h1", actor: .bootstrap, requestId: "r1")
        XCTAssertEqual(AdminTokenIssuedHandler().apply(issue, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.adminTokens[id], AdminTokenRow(adminTokenId: id, name: "ops", tokenHash: "h1", createdAt: at))

        let later = at.addingTimeInterval(60)
        XCTAssertEqual(AdminTokenRevokedHandler().apply(AdminTokenRevoked(adminTokenId: id), CommandContext(at: later), to: &s), .applied)
        XCTAssertEqual(s.adminTokens[id]?.revoked, true)
        XCTAssertEqual(s.adminTokens[id]?.revokedAt, later)
        // A repeated issue does not bring a revoked token back; a repeated revocation changes nothing.
        XCTAssertEqual(AdminTokenIssuedHandler().apply(issue, CommandContext(at: later), to: &s), .applied)
        XCTAssertEqual(AdminTokenRevokedHandler().apply(AdminTokenRevoked(adminTokenId: id), CommandContext(at: later), to: &s), .applied)
        XCTAssertEqual(s.adminTokens[id]?.revoked, true)
        XCTAssertEqual(s.mutations.count, 2)

        XCTAssertEqual(AdminTokenRevokedHandler().apply(AdminTokenRevoked(adminTokenId: UUID()), CommandContext(at: at), to: &s),
                       .rejected("unknown-admin-token"))
        XCTAssertEqual(s.mutations.count, 2)
    }

    func testRevocationNeedsTheTokensRowAndFindsItLoaded() {
        var query = StateQuery()
        let id = UUID()
        AdminTokenRevokedHandler().addNeeds(of: AdminTokenRevoked(adminTokenId: id), to: &query)
        XCTAssertEqual(query.adminTokenIds, [id])
        var s = state(adminTokens: [AdminTokenRow(adminTokenId: id, name: "ops", tokenHash: "h", createdAt: at)])
        XCTAssertEqual(AdminTokenRevokedHandler().apply(AdminTokenRevoked(adminTokenId: id), CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.mutations, [.upsertAdminToken(AdminTokenRow(adminTokenId: id, name: "ops", tokenHash: "h", revoked: true,
                                                                     createdAt: at, revokedAt: at))])
    }

    func testEveryAdminCommandIsAuditedWithItsEnvelopeActorRequestAndOutcome() throws {
        var s = state()
        let commandId = UUID(), later = at.addingTimeInterval(5)
        let create = try decoded(AppCreated(orgId: org, mobileAppId: appId, name: "n", tokenId: UUID(), tokenHash: "secret-hash",
                                            actor: alice, requestId: "req-1"), id: commandId, at: later)
        XCTAssertEqual(create.apply(to: &s), .applied)
        let unknownApp = UUID(), rejectedId = UUID()
        let rejected = try decoded(ApiTokenRevoked(mobileAppId: unknownApp, tokenId: UUID(), actor: .bootstrap, requestId: "req-2"),
                                   id: rejectedId)
        XCTAssertEqual(rejected.apply(to: &s), .rejected("unknown-token"))
        let old = try decoded(ApiTokenIssued(mobileAppId: appId, tokenId: UUID(), tokenHash: "h"))
        XCTAssertEqual(old.apply(to: &s), .applied)

        let entries = audit(s)
        XCTAssertEqual(entries.count, 3)
        XCTAssertEqual(entries[0].commandId, commandId)
        XCTAssertEqual(entries[0].at, later, "the command's log time, never the clock")
        XCTAssertEqual(entries[0].type, "admin.app-created")
        XCTAssertEqual(entries[0].appId, appId)
        XCTAssertEqual(entries[0].actorId, alice.id)
        XCTAssertEqual(entries[0].actorName, "alice")
        XCTAssertEqual(entries[0].requestId, "req-1")
        XCTAssertEqual(entries[0].outcome, "applied")
        XCTAssertNil(entries[0].reason)
        XCTAssertFalse(entries[0].changes.contains("secret-hash"), entries[0].changes)

        XCTAssertEqual(entries[1].commandId, rejectedId)
        XCTAssertEqual(entries[1].appId, unknownApp)
        XCTAssertNil(entries[1].actorId)
        XCTAssertEqual(entries[1].actorName, "bootstrap")
        XCTAssertEqual(entries[1].outcome, "rejected")
        XCTAssertEqual(entries[1].reason, "unknown-token")

        XCTAssertNil(entries[2].actorName, "a command written before actors were recorded has none")
    }

    func testSummariesHoldNoSecret() throws {
        let sealed = SealedSecret(keyId: "deploy-key-1", box: "SEALED-BOX-BYTES")
        let apns = APNsCredentials(teamId: "TEAM123456", keyId: "KEY1234567", bundleId: "com.example", environment: .sandbox,
                                   fingerprint: "SHA256:abc", privateKey: sealed)
        let fcm = FCMCredentials(projectId: "project-1", clientEmail: "a@b.iam", privateKeyId: "kid", tokenUri: "https://t.example/token",
                                 fingerprint: "SHA256:def", serviceAccount: sealed)
        let settings = AppSettingsChanged(mobileAppId: appId, callbackUrl: "https://user:hunter2@hooks.example/cb?key=hunter3&x",
                                          callbackHeaders: ["Authorization": "Bearer hunter4"], webhookRetries: 3)
        let commands: [any AuditedCommand] = [
            AppCreated(orgId: org, mobileAppId: appId, name: "n", tokenId: UUID(), tokenHash: "hunter5"),
            ApiTokenIssued(mobileAppId: appId, tokenId: UUID(), tokenHash: "hunter5"),
            settings,
            PushCredentialsSet(mobileAppId: appId, apns: apns),
            PushCredentialsSet(mobileAppId: appId, fcm: fcm),
            AdminTokenIssued(adminTokenId: UUID(), name: "ops", tokenHash: "hunter5"),
        ]
        for command in commands {
            let changes = AuditTrail.json(command.auditedChanges)
            for secret in ["hunter", "SEALED-BOX-BYTES"] {
                XCTAssertFalse(changes.contains(secret), "\(type(of: command)): \(changes)")
            }
        }
        let settingsChanges = try JSONValue.parse(AuditTrail.json(settings.auditedChanges))
        XCTAssertEqual(settingsChanges["callbackUrl"], .string("https://redacted@hooks.example/cb?key=redacted&x"))
        XCTAssertEqual(settingsChanges["callbackHeaders"], .object(["Authorization": .string("redacted")]))
        XCTAssertEqual(settingsChanges["webhookRetries"], .number(3))
        let apnsChanges = try JSONValue.parse(AuditTrail.json(PushCredentialsSet(mobileAppId: appId, apns: apns).auditedChanges))
        XCTAssertEqual(apnsChanges["apns"]?["fingerprint"], .string("SHA256:abc"), "credentials appear by fingerprint")
        XCTAssertEqual(AuditTrail.redactedURL(""), "", "removing the callback shows as removing it")
        XCTAssertEqual(AuditTrail.redactedURL("https://hooks.example/cb"), "https://hooks.example/cb")
    }
}
