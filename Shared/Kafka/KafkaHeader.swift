/// One record header as Pushline uses them: a name and a UTF-8 text value.
/// Header order and repeated names are kept exactly as given.
public struct KafkaHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// Headers given as name/value pairs, in order.
    public static func list(_ pairs: [(name: String, value: String)]) -> [KafkaHeader] {
        pairs.map { KafkaHeader(name: $0.name, value: $0.value) }
    }
}
