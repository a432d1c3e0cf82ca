import Foundation

/// SQL in pieces: text that both stores read alike, and what each renders its own way.
public struct ReadSQL: Sendable, ExpressibleByStringInterpolation {
    public enum Piece: Sendable {
        case sql(String)
        case value(ReadValue)
        /// The condition "the row's device token is this one": `device_token = ?` in SQLite;
        /// `token_key = sha256(…)` in PostgreSQL, which keys tokens by their SHA-256.
        case deviceToken(String)
        /// The condition "the row's device token comes after this one" in `tokenOrder`.
        case tokenAfter(String)
        /// The device tokens' byte order, for `ORDER BY`: the key's order in SQLite; in PostgreSQL
        /// the order of the index on a token's first characters, then the whole token
        /// (`PostgresRows.tokenOrder`).
        case tokenOrder
        /// The condition `(columns) IN keys` (`ReadKeys`); a statement holds one at most.
        case keys(ReadKeys)
        /// A whole statement: a page of the devices that carry names (`NamedTokens`), every
        /// column of `TableCatalog.devices` in order, read from the index of names.
        case namedDevicePage(NamedTokens)
    }

    public private(set) var pieces: [Piece]

    public init(stringLiteral value: String) {
        pieces = [.sql(value)]
    }

    public init(stringInterpolation: StringInterpolation) {
        pieces = stringInterpolation.pieces
    }

    private init(_ pieces: [Piece]) {
        self.pieces = pieces
    }

    /// The device tokens' byte order, for an `ORDER BY` (`Piece.tokenOrder`).
    public static let tokenOrder = ReadSQL([.tokenOrder])

    public static func + (a: ReadSQL, b: ReadSQL) -> ReadSQL {
        var sum = a
        sum.pieces += b.pieces
        return sum
    }

    public static func += (a: inout ReadSQL, b: ReadSQL) {
        a.pieces += b.pieces
    }

    /// The key set of the statement, if it has one.
    public var keys: ReadKeys? {
        for case .keys(let keys) in pieces { return keys }
        return nil
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var pieces: [Piece] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            pieces.reserveCapacity(2 * interpolationCount + 1)
        }

        public mutating func appendLiteral(_ literal: String) {
            if !literal.isEmpty { pieces.append(.sql(literal)) }
        }

        /// SQL text, not a value: a column list, a table name.
        public mutating func appendInterpolation(unescaped sql: String) { pieces.append(.sql(sql)) }
        public mutating func appendInterpolation(_ value: UUID) { pieces.append(.value(.uuid(value))) }
        public mutating func appendInterpolation(_ value: String) { pieces.append(.value(.text(value))) }
        public mutating func appendInterpolation(_ value: Int64) { pieces.append(.value(.int(value))) }
        public mutating func appendInterpolation(_ value: Int) { pieces.append(.value(.int(Int64(value)))) }
        /// A date as its milliseconds.
        public mutating func appendInterpolation(millis date: Date) { pieces.append(.value(.int(ProjectionValues.millis(date)))) }
        public mutating func appendInterpolation(deviceToken token: String) { pieces.append(.deviceToken(token)) }
        public mutating func appendInterpolation(tokenAfter token: String) { pieces.append(.tokenAfter(token)) }
        public mutating func appendInterpolation(keys: ReadKeys) { pieces.append(.keys(keys)) }
        public mutating func appendInterpolation(namedDevicePage: NamedTokens) { pieces.append(.namedDevicePage(namedDevicePage)) }
    }
}

/// A value bound to one parameter. UUIDs are bound as each store keeps them (lower-case text in
/// SQLite, `uuid` in PostgreSQL); dates as their milliseconds (`ProjectionValues.millis`).
public enum ReadValue: Sendable, Equatable {
    case uuid(UUID)
    case text(String)
    case int(Int64)
}
