import Yams

/// A YAML document as compose reads it: every scalar kept as its text (compose turns numbers
/// into strings for `environment` anyway, and this avoids YAML 1.1 surprises such as `1:30`
/// read as a sexagesimal number), aliases resolved and `<<` merge keys applied.
indirect enum YAMLValue: Equatable {
    case null
    case scalar(String)
    case sequence([YAMLValue])
    case mapping([String: YAMLValue])

    struct Unreadable: Error, CustomStringConvertible {
        var description: String
    }

    /// Parses one YAML document.
    static func parse(_ text: String) throws -> YAMLValue {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            throw Unreadable(description: "not YAML: \(error)")
        }
        guard let root else { return .null }
        return try YAMLValue(root)
    }

    private static let nullTag = "tag:yaml.org,2002:null"

    private init(_ node: Node) throws {
        switch node {
        case .scalar(let scalar):
            self = node.tag.description == Self.nullTag ? .null : .scalar(scalar.string)
        case .sequence(let sequence):
            self = .sequence(try sequence.map(YAMLValue.init))
        case .mapping(let mapping):
            // Merge keys first (an earlier merged mapping wins over a later one), then the
            // mapping's own keys, which win over everything merged.
            var merged: [String: YAMLValue] = [:]
            var own: [String: YAMLValue] = [:]
            for (keyNode, valueNode) in mapping {
                guard case .scalar(let key) = keyNode else { throw Unreadable(description: "a mapping key is not a scalar") }
                if key.string == "<<" {
                    let sources: [Node]
                    switch valueNode {
                    case .mapping: sources = [valueNode]
                    case .sequence(let sequence): sources = Array(sequence)
                    case .scalar: throw Unreadable(description: "a merge key (<<) names a scalar, not a mapping")
                    }
                    for source in sources.reversed() {
                        guard case .mapping(let values) = try YAMLValue(source) else {
                            throw Unreadable(description: "a merge key (<<) names something other than a mapping")
                        }
                        merged.merge(values) { _, earlier in earlier }
                    }
                } else {
                    own[key.string] = try YAMLValue(valueNode)
                }
            }
            self = .mapping(merged.merging(own) { _, mine in mine })
        }
    }

    subscript(key: String) -> YAMLValue? {
        if case .mapping(let values) = self { return values[key] }
        return nil
    }

    var string: String? {
        if case .scalar(let text) = self { return text }
        return nil
    }

    var mapping: [String: YAMLValue]? {
        if case .mapping(let values) = self { return values }
        return nil
    }

    var sequence: [YAMLValue]? {
        if case .sequence(let values) = self { return values }
        return nil
    }

    /// A string, or a list of strings (compose accepts both for `entrypoint`, `command`, `test`).
    var strings: [String]? {
        switch self {
        case .scalar(let text): return [text]
        case .sequence(let values): return values.compactMap(\.string)
        default: return nil
        }
    }
}
