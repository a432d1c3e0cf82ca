import Foundation

/// The body of `GET /health` on both services: `{"status":"ok"}` (200) or
/// `{"status":"unavailable"}` (503), the processor's with a `reason`.
public struct HealthAnswer: Codable, Sendable, Equatable {
    public static let ok = HealthAnswer(status: "ok")
    public static let unavailable = HealthAnswer(status: "unavailable")

    public var status: String
    /// Why the service is unavailable, in one line (absent when it is ok).
    public var reason: String?

    public init(status: String, reason: String? = nil) {
        self.status = status
        self.reason = reason
    }
}
