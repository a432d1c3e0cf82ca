import Foundation

/// A webhook or callback URL as a trail may show it (docs/ARCHITECTURE.md#webhook-audit-records): a receiver's
/// URL may carry a credential in its userinfo (`https://user:secret@host/…`), its query string
/// (`?token=…`) or its path (Slack-style `https://hooks.slack.com/services/T…/B…/secret`), so the
/// userinfo, every query value and every path segment after the first are replaced by
/// `redacted`, and the fragment is dropped. The scheme, host, port, the path's first segment, the
/// number of its segments and the query's parameter names stay, which is what an operator needs
/// to tell receivers apart. The processor still calls the URL as given; only what is recorded or
/// logged is redacted.
public enum RedactedURL {
    public static let mask = "redacted"

    public static func string(_ url: String) -> String {
        guard var parts = URLComponents(string: url), parts.scheme != nil else { return "(not a URL)" }
        if parts.percentEncodedUser != nil || parts.percentEncodedPassword != nil {
            parts.percentEncodedUser = mask
            parts.percentEncodedPassword = nil
        }
        if let items = parts.percentEncodedQueryItems {
            parts.percentEncodedQueryItems = items.map { URLQueryItem(name: $0.name, value: $0.value == nil ? nil : mask) }
        } else if parts.percentEncodedQuery != nil {
            parts.percentEncodedQuery = mask
        }
        // The first segment names a receiver's route (`/services`, `/hooks`); later ones may be keys.
        let segments = parts.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: false)
        if segments.count > 2 {
            parts.percentEncodedPath = (segments.prefix(2) + segments.dropFirst(2).map { $0.isEmpty ? $0 : Substring(mask) })
                .joined(separator: "/")
        }
        parts.fragment = nil
        return parts.string ?? "(not a URL)"
    }
}
