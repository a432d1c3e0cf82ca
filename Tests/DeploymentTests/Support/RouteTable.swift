import Foundation

/// The routes a route table names (docs/API.md, "Routes"), read from its first column: each code
/// span `METHOD /path` is a route; a path may start with `…/` for the part of the last path
/// named before it up to its segment of that name (`…/devices/batch` after
/// `/api/…/pushdeviceregistration/devices`), and a span without a method takes the one before it
/// in the row. A query (`?limit=`) and a final `/` are left out; path parameters, whatever their
/// name (`{id}`, `{apns|fcm}`), are written `{}`.
enum RouteTable {
    static let methods: Set<String> = ["GET", "POST", "PUT", "PATCH", "DELETE"]

    /// `METHOD /path` for every route the rows name, and the spans it could not read.
    static func routes(in rows: [[String]]) -> (routes: Set<String>, unreadable: [String]) {
        var routes: Set<String> = []
        var unreadable: [String] = []
        var last: [String] = []
        for row in rows {
            var method: String?
            for span in MarkdownTable.codeSpans(in: row.first ?? "") {
                let words = span.split(separator: " ", maxSplits: 1).map(String.init)
                var path = span
                if words.count == 2, methods.contains(words[0]) {
                    method = words[0]
                    path = words[1]
                }
                guard path.hasPrefix("/") || path.hasPrefix("…/") else { continue }
                path = String(path.prefix { $0 != "?" })
                var segments = path.split(separator: "/").map(String.init)
                if segments.first == "…" {
                    guard segments.count > 1, let at = last.lastIndex(of: segments[1]) else {
                        unreadable.append(span)
                        continue
                    }
                    segments = Array(last[..<at]) + segments.dropFirst()
                }
                guard let method else {
                    unreadable.append(span)
                    continue
                }
                last = segments
                routes.insert(method + " " + normalized(segments))
            }
        }
        return (routes, unreadable)
    }

    /// `/a/{x}/b` → `/a/{}/b`.
    static func normalized(_ segments: [String]) -> String {
        "/" + segments.map { $0.hasPrefix("{") && $0.hasSuffix("}") ? "{}" : $0 }.joined(separator: "/")
    }

    static func normalized(_ path: String) -> String {
        normalized(path.split(separator: "/").map(String.init))
    }

    /// Whether the table's `documented` route is the router's `implemented` one: the same method
    /// and segments, where a parameter of the router's matches any segment (the table may name
    /// `credentials/apns` and `credentials/fcm` of the router's `credentials/{provider}`).
    static func matches(_ documented: String, _ implemented: String) -> Bool {
        let d = documented.split(separator: " ", maxSplits: 1), i = implemented.split(separator: " ", maxSplits: 1)
        guard d.count == 2, i.count == 2, d[0] == i[0] else { return false }
        let ds = d[1].split(separator: "/"), iss = i[1].split(separator: "/")
        return ds.count == iss.count && zip(ds, iss).allSatisfy { $0 == $1 || $1 == "{}" }
    }

    /// The router's routes no documented route is, and the documented routes that are none of the router's.
    static func differences(documented: Set<String>, implemented: Set<String>) -> (undocumented: [String], unknown: [String]) {
        (implemented.filter { route in !documented.contains { matches($0, route) } }.sorted(),
         documented.filter { route in !implemented.contains { matches(route, $0) } }.sorted())
    }
}
