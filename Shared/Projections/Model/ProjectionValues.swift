import Contracts
import Foundation
import WireCodec

/// How model values become stored column values and back, in every backend alike: dates are
/// integer milliseconds since 1970, header maps sorted-key JSON from the project's one coder
/// setup, so that the same commits give the same rows (and dumps) in SQLite and PostgreSQL.
package enum ProjectionValues {
    /// Rounded rather than truncated: a date built from whole milliseconds is often a hair
    /// below them as a `Double`.
    package static func millis(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    package static func date(millis: Int64) -> Date {
        Date(timeIntervalSince1970: Double(millis) / 1000)
    }

    package static func headersJSON(_ headers: [String: String]) throws -> String {
        // Most jobs and apps carry no extra headers; skip the encoder for them.
        if headers.isEmpty { return "{}" }
        return String(decoding: try encoder.encode(headers), as: UTF8.self)
    }

    package static func headers(json: String, column: String) throws -> [String: String] {
        if json == "{}" { return [:] }
        do {
            return try decoder.decode([String: String].self, from: Data(json.utf8))
        } catch {
            throw ProjectionStoreError.database("column \(column) holds invalid header JSON: \(error)")
        }
    }

    /// An API token's scopes as stored (`client,server`); NULL for a legacy token.
    package static func scopesColumn(_ scopes: [ApiTokenScope]?) -> String? {
        ApiTokenScopes.column(scopes)
    }

    package static func scopes(column: String?) throws -> [ApiTokenScope]? {
        do {
            return try ApiTokenScopes.parse(column: column)
        } catch {
            throw ProjectionStoreError.database("column api_tokens.scopes holds \(error)")
        }
    }

    /// NULL for an app without credentials.
    package static func pushCredentialsJSON(_ credentials: PushCredentials?) throws -> String? {
        guard let credentials, !credentials.isEmpty else { return nil }
        return try credentials.storedJSON()
    }

    package static func pushCredentials(json: String?) throws -> PushCredentials? {
        guard let json else { return nil }
        do {
            return try PushCredentials.fromStoredJSON(json)
        } catch {
            throw ProjectionStoreError.database("column apps.push_credentials holds invalid JSON: \(error)")
        }
    }

    /// A sealed secret as sorted-key JSON; NULL for none.
    package static func sealedSecretJSON(_ secret: SealedSecret?) throws -> String? {
        guard let secret else { return nil }
        return String(decoding: try WireJSON.encoder().encode(secret), as: UTF8.self)
    }

    package static func sealedSecret(json: String?, column: String) throws -> SealedSecret? {
        guard let json else { return nil }
        do {
            return try JSONDecoder().decode(SealedSecret.self, from: Data(json.utf8))
        } catch {
            throw ProjectionStoreError.database("column \(column) holds invalid JSON: \(error)")
        }
    }

    package static func decode<T: RawRepresentable>(_ type: T.Type, _ raw: T.RawValue, column: String) throws -> T {
        guard let value = T(rawValue: raw) else {
            throw ProjectionStoreError.database("column \(column) holds unknown value '\(raw)'")
        }
        return value
    }

    private static let encoder = WireJSON.encoder()
    private static let decoder = WireJSON.decoder()
}

extension OutboxAttemptResult {
    /// What this attempt makes of its job, for both stores: its state, the audit record's
    /// outcome, and when it is due next (`stored`, unless the attempt asks for a retry).
    package func settle(nextAttemptAt stored: Int64) -> (state: OutboxState, outcome: WebhookAttemptRecord.Outcome, nextAttemptAt: Int64) {
        switch next {
        case .delivered: (.delivered, .delivered, stored)
        case .retry(let at): (.pending, .retrying, ProjectionValues.millis(at))
        case .failed: (.failed, .failed, stored)
        }
    }
}
