public enum ProviderRequestError: Error, Equatable {
    /// An outbound record that cannot become a push (not written by Pushline's processor).
    case badRecord(String)
}
