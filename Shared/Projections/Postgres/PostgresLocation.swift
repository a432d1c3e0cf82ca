import Foundation
import ProjectionChangelog
import Projections

/// Where a PostgreSQL store lives, parsed from a `postgres://` or `postgresql://` URL:
///
///     postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME&sslmode=disable|prefer|require&pool_size=N]
///
/// Defaults: port 5432, user `postgres`, database = user (as libpq), the server's default
/// schema (`public`), no TLS, at most 10 connections. Percent-escapes in the user, password and
/// database are decoded. `schema` names a schema of its own for the store's tables (created when
/// missing), so several stores can share one database.
public struct PostgresLocation: Sendable, Equatable {
    public enum TLSMode: String, Sendable {
        case disable, prefer, require
    }

    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String
    public var schema: String?
    public var tls: TLSMode
    /// Connections the store opens at most.
    public var poolSize: Int

    public init(host: String, port: Int = 5432, user: String = "postgres", password: String? = nil, database: String? = nil,
                schema: String? = nil, tls: TLSMode = .disable, poolSize: Int = 10) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database ?? user
        self.schema = schema
        self.tls = tls
        self.poolSize = poolSize
    }

    /// Parses a store URL; throws `ProjectionStoreError.invalidConfiguration` saying what is wrong.
    public init(url: String) throws {
        func invalid(_ why: String) -> ProjectionStoreError {
            .invalidConfiguration("PostgreSQL URL '\(Self.redacting(url))': \(why)")
        }
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
            throw invalid("expected postgres://user@host:port/database")
        }
        guard let components = URLComponents(string: url) else { throw invalid("not a valid URL") }
        guard let host = components.host, !host.isEmpty else { throw invalid("no host") }
        let user = components.user.flatMap { $0.isEmpty ? nil : $0 } ?? "postgres"
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard !path.contains("/") else { throw invalid("the path must be just the database name") }
        if let port = components.port, !(1...65535).contains(port) { throw invalid("port \(port) is out of range") }
        self.init(host: host, port: components.port ?? 5432, user: user, password: components.password,
                  database: path.isEmpty ? nil : path)
        for item in components.queryItems ?? [] {
            guard let value = item.value, !value.isEmpty else { throw invalid("parameter '\(item.name)' has no value") }
            switch item.name {
            case "schema":
                guard Self.isPlainIdentifier(value) else {
                    throw invalid("schema '\(value)' must be letters, digits and '_' (not first a digit), at most 63")
                }
                schema = value
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else { throw invalid("sslmode must be disable, prefer or require") }
                tls = mode
            case "pool_size":
                guard let size = Int(value), (1...1000).contains(size) else { throw invalid("pool_size must be 1...1000") }
                poolSize = size
            default:
                throw invalid("unknown parameter '\(item.name)' (known: schema, sslmode, pool_size)")
            }
        }
    }

    /// The URL with any password replaced by `***`, for logs and error messages.
    public static func redacting(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? url
    }

    private static func isPlainIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= 63 else { return false }
        let letters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
        let digits = CharacterSet(charactersIn: "0123456789")
        return letters.contains(first) && name.unicodeScalars.allSatisfy { letters.contains($0) || digits.contains($0) }
    }
}
