import Foundation

/// The body of `GET /health` on both services: `{"status":"ok"}` (200) or
/// `{"status":"unavailable"}` (503).
public struct HealthAnswer: Codable, Sendable, Equatable {
    public static let ok = HealthAnswer(status: "ok")
    public static let unavailable = HealthAnswer(status: "unavailable")

    public var status: String
    public init(status: String) { self.status = status }
}
