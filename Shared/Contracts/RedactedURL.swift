import Foundation

/// A webhook or callback URL as a trail may show it (docs/ARCHITECTURE.md#webhook-audit-records): a receiver's
/// URL may carry a credential in its userinfo (`https://user:secret@host/…`) or its query string
/// (`?token=…`), so both are replaced by `redacted` and the fragment is dropped. The scheme, host,
/// port, path and the query's parameter names stay, which is what an operator needs to tell
/// receivers apart. The processor still calls the URL as given; only what is recorded or logged
/// is redacted.
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
        parts.fragment = nil
        return parts.string ?? "(not a URL)"
    }
}
