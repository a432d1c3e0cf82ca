import Contracts

extension SettingsReader {
    /// The deployment's keys for push credentials: `PUSHLINE_SECRETS_KEY` (seals and opens) and
    /// `PUSHLINE_SECRETS_PREVIOUS_KEYS` (comma-separated, only open); nil when the first is unset
    /// (docs/DEPLOYMENT.md#push-credentials-and-the-secrets-key).
    public func secretsKeyring() throws -> SecretsKeyring? {
        guard let current = raw(SecretsVariable.key), !current.isEmpty else { return nil }
        do {
            return try SecretsKeyring(current: current, previous: raw(SecretsVariable.previousKeys))
        } catch {
            throw ConfigurationError("\(SecretsVariable.key) or \(SecretsVariable.previousKeys): \(error)")
        }
    }
}

/// The variables of the secrets key.
public enum SecretsVariable {
    public static let key = "PUSHLINE_SECRETS_KEY"
    public static let previousKeys = "PUSHLINE_SECRETS_PREVIOUS_KEYS"
}
