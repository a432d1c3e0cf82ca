import Contracts
import Foundation

/// A command that binds a device to a user (a registration) or removes a user's devices (a
/// cleanup): what a user assertion guards (`UserIdentityCheck`), in every dialect.
protocol UserBinding: Command {
    var mobileAppId: UUID { get }
    var apiTokenHash: String { get }
    var userId: String { get }
    /// Set by ingest once it checked the command's assertion; the processor judges it again.
    var identityVerified: Bool? { get set }
    /// A registration (counted in `pushline_ingest_unverified_user_bindings_total`), not a cleanup.
    var isRegistration: Bool { get }
}

extension DeviceRegistrationRequested: UserBinding {
    var isRegistration: Bool { true }
}

extension DeviceCleanupRequested: UserBinding {
    var isRegistration: Bool { false }
}
