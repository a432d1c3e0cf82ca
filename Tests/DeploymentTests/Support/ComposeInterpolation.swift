/// Compose's `${…}` interpolation, enough to read values the way `docker compose` would:
/// `$$`, `$NAME`, `${NAME}`, `${NAME:-default}`, `${NAME-default}`, `${NAME:?message}`,
/// `${NAME?message}`, `${NAME:+alternative}`, `${NAME+alternative}` (defaults may nest).
///
/// A required variable (`:?`, `?`) that the environment does not set is one supplied when
/// the stack is started (a secret); it reads as `<NAME>` and is listed in `required`.
struct ComposeInterpolation {
    var environment: [String: String]
    /// Required variables met so far that the environment did not set.
    private(set) var required: Set<String> = []

    init(environment: [String: String] = [:]) {
        self.environment = environment
    }

    mutating func resolve(_ text: String) -> String {
        var output = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            guard character == "$" else {
                output.append(character)
                index = text.index(after: index)
                continue
            }
            let next = text.index(after: index)
            guard next < text.endIndex else {
                output.append("$")
                break
            }
            if text[next] == "$" {
                output.append("$")
                index = text.index(after: next)
            } else if text[next] == "{", let close = Self.matchingBrace(in: text, from: next) {
                output += expand(String(text[text.index(after: next)..<close]))
                index = text.index(after: close)
            } else {
                let name = text[next...].prefix { $0 == "_" || $0.isLetter || $0.isNumber }
                if name.isEmpty {
                    output.append("$")
                    index = next
                } else {
                    output += environment[String(name)] ?? ""
                    index = name.endIndex
                }
            }
        }
        return output
    }

    /// The index of the `}` closing the `{` at `open`, counting nested `${…}`.
    private static func matchingBrace(in text: String, from open: String.Index) -> String.Index? {
        var depth = 0
        var index = open
        while index < text.endIndex {
            if text[index] == "{" { depth += 1 }
            if text[index] == "}" {
                depth -= 1
                if depth == 0 { return index }
            }
            index = text.index(after: index)
        }
        return nil
    }

    private mutating func expand(_ body: String) -> String {
        let name = String(body.prefix { $0 == "_" || $0.isLetter || $0.isNumber })
        let rest = body.dropFirst(name.count)
        let value = environment[name]
        let isSetNonEmpty = !(value ?? "").isEmpty
        for (op, whenUnset) in [(":-", { !isSetNonEmpty }), ("-", { value == nil })] where rest.hasPrefix(op) {
            return whenUnset() ? resolve(String(rest.dropFirst(op.count))) : value ?? ""
        }
        for (op, whenUnset) in [(":?", { !isSetNonEmpty }), ("?", { value == nil })] where rest.hasPrefix(op) {
            guard whenUnset() else { return value ?? "" }
            required.insert(name)
            return "<\(name)>"
        }
        for (op, whenSet) in [(":+", { isSetNonEmpty }), ("+", { value != nil })] where rest.hasPrefix(op) {
            return whenSet() ? resolve(String(rest.dropFirst(op.count))) : ""
        }
        return value ?? ""
    }
}
