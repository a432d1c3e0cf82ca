import Foundation

/// A UUID field written in lower case, the one form of UUIDs in Pushline's JSON (HTTP answers,
/// commands, webhooks); Foundation's `Codable` would write upper case. Reading accepts either.
@propertyWrapper
public struct LowercaseUUID: Codable, Hashable, Sendable {
    public var wrappedValue: UUID

    public init(wrappedValue: UUID) {
        self.wrappedValue = wrappedValue
    }

    public init(from decoder: any Decoder) throws {
        wrappedValue = try UUID.decode(decoder.singleValueContainer())
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrappedValue.lowercasedString)
    }
}

/// `LowercaseUUID` for an optional field: a nil is left out, a missing key reads as nil.
@propertyWrapper
public struct LowercaseOptionalUUID: Codable, Hashable, Sendable {
    public var wrappedValue: UUID?

    public init(wrappedValue: UUID?) {
        self.wrappedValue = wrappedValue
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try UUID.decode(container)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue.lowercasedString) } else { try container.encodeNil() }
    }
}

extension KeyedDecodingContainer {
    public func decode(_ type: LowercaseOptionalUUID.Type, forKey key: Key) throws -> LowercaseOptionalUUID {
        try decodeIfPresent(type, forKey: key) ?? LowercaseOptionalUUID(wrappedValue: nil)
    }
}

extension KeyedEncodingContainer {
    public mutating func encode(_ value: LowercaseOptionalUUID, forKey key: Key) throws {
        if value.wrappedValue != nil { try encodeIfPresent(value, forKey: key) }
    }
}

private extension UUID {
    static func decode(_ container: any SingleValueDecodingContainer) throws -> UUID {
        let text = try container.decode(String.self)
        guard let id = UUID(parsing: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "Attempted to decode UUID from invalid UUID string.")
        }
        return id
    }
}
