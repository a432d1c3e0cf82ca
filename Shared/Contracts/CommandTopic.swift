/// Which command topic a command travels on.
public enum CommandTopic: Sendable {
    case admin, registration, notification, tracking, delivery

    public func name(in topics: Topics) -> String {
        switch self {
        case .admin: topics.admin
        case .registration: topics.registration
        case .notification: topics.notification
        case .tracking: topics.tracking
        case .delivery: topics.delivery
        }
    }
}
