import Contracts
import Crypto
import Foundation

/// The key the raw tokens of keyed admin creates derive from (`IdempotencyKeys.derivedToken`):
/// derived from the deployment's secrets key (`PUSHLINE_SECRETS_KEY`), which only the servers
/// hold, so every ingest instance derives the same raw token for a retry and no caller can
/// derive one by itself.
///
/// Without a secrets key each process draws a key of its own when it starts: a keyed create's
/// retry then gets its raw tokens back only from the instance that made it, before it restarts
/// (any other answers 409, as for a create made by another caller).
struct CreatedTokenKey: Sendable {
    // Raw bytes: swift-crypto's `SymmetricKey` is not `Sendable`.
    private let bytes: Data

    init(secrets: SecretsKeyring?) {
        let key = secrets?.derivedKey(purpose: IdempotencyKeys.tokenKeyPurpose) ?? SymmetricKey(size: .bits256)
        bytes = key.withUnsafeBytes { Data($0) }
    }

    /// The raw token of `tokenId` for the caller whose admin token has SHA-256 `callerDigest`.
    func token(_ tokenId: UUID, callerDigest: String) -> String {
        IdempotencyKeys.derivedToken(key: SymmetricKey(data: bytes), tokenId: tokenId, callerDigest: callerDigest)
    }
}
