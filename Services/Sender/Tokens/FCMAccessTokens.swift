import Foundation

/// FCM access tokens per service account, kept until five minutes before they expire; one
/// exchange at a time per account, whatever the number of sends waiting for it.
public final class FCMAccessTokens: Sendable {
    private struct Entry: Sendable {
        var token: String
        var expiresAt: Date
    }

    /// An answer other than a token: not kept.
    private struct NoToken: Error {
        var answer: AccessTokenAnswer
    }

    private let cache = RefreshingCache<String, Entry>()
    /// Exchanges made: the tests check caching by it.
    public var exchanges: Int { cache.made }
    public let margin: TimeInterval

    public init(margin: TimeInterval = 300) {
        self.margin = margin
    }

    /// A valid access token for `account`, from the cache or a new exchange through `client`.
    public func token(for account: FCMServiceAccount, client: ProviderClient, now: Date = Date()) async -> AccessTokenAnswer {
        do {
            let entry = try await cache.value(for: account.id, fresh: { $0.expiresAt.timeIntervalSince(now) > self.margin }) {
                let answer: AccessTokenAnswer
                do {
                    answer = await client.exchange(assertion: try await GoogleAssertion.sign(account, now: now), tokenURI: account.tokenURI)
                } catch {
                    answer = .refused(reason: "the assertion could not be signed: \(error)")
                }
                guard case .token(let token, let expiresIn) = answer else { throw NoToken(answer: answer) }
                return Entry(token: token, expiresAt: now.addingTimeInterval(expiresIn))
            }
            return .token(entry.token, expiresIn: entry.expiresAt.timeIntervalSince(now))
        } catch let error as NoToken {
            return error.answer
        } catch {
            return .retry(reason: "no access token: \(error)", retryAfter: nil)
        }
    }

    /// Forgets the account's token: FCM refused it.
    public func invalidate(_ account: FCMServiceAccount) {
        cache.invalidate(account.id)
    }
}
