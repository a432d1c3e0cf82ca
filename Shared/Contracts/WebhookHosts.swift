import Foundation

/// The hosts an app lets its status webhooks reach (docs/API.md#webhook-hosts).
///
/// A status webhook's URL is chosen by whoever holds the app's client token, which ships in the
/// app; without a list Pushline POSTs wherever they say. With one, ingest refuses a registration
/// whose callback URL's host is not on it, and the processor checks again against the list as
/// the log has it when it applies the registration. Both use this one rule.
public enum WebhookHosts {
    public static let maxEntries = 50
    /// A DNS name's longest text form.
    public static let maxEntryBytes = 253

    /// `entry` as stored and compared: lowercased, without a trailing dot or IPv6 brackets; a
    /// leading `*.` kept. Nil when it is neither a host name, an IP literal, nor `*.` and a host
    /// name.
    public static func normalized(_ entry: String) -> String? {
        var text = entry.trimmingCharacters(in: .whitespaces).lowercased()
        if text.hasSuffix(".") { text.removeLast() }
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        guard !text.isEmpty, text.utf8.count <= maxEntryBytes else { return nil }
        let wildcard = text.hasPrefix("*.")
        let name = wildcard ? String(text.dropFirst(2)) : text
        if !wildcard, name.contains(":") {
            // An IPv6 literal: two colons at least (a name with a port has one).
            let isLiteral = name.filter { $0 == ":" }.count >= 2 && name.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
            return isLiteral ? name : nil
        }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        let valid = labels.allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        }
        return valid ? text : nil
    }

    /// The host of `url` as `normalized` writes entries; nil when the URL has none.
    public static func host(of url: String) -> String? {
        // The same parser as ingest's URL check and the dispatcher's target policy.
        guard let host = URL(string: url)?.host, !host.isEmpty else { return nil }
        return normalized(host) ?? host.lowercased()
    }

    /// Whether `url` may be a status webhook's target under `hosts` (entries `normalized`); nil
    /// hosts: no list, every URL may.
    public static func allows(_ url: String, hosts: [String]?) -> Bool {
        guard let hosts else { return true }
        guard let host = host(of: url) else { return false }
        return hosts.contains { entry in
            if entry.hasPrefix("*.") { return host.hasSuffix(String(entry.dropFirst(1))) }
            return host == entry
        }
    }
}
