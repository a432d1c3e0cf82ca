/// What went wrong on the sender's side of a delivery.
public enum SenderError: Error, Equatable, CustomStringConvertible {
    /// Credentials that cannot be used (missing, do not open, do not parse).
    case credentials(String)

    public var description: String {
        switch self {
        case .credentials(let why): "push credentials unusable: \(why)"
        }
    }
}
