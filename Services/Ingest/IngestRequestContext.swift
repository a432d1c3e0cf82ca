import Contracts
import Hummingbird
import NIOCore

/// The request context of every ingest route: Hummingbird's core storage plus the request id
/// that `RequestMiddleware` assigns (taken from `x-request-id` or generated) and that is
/// passed to the publisher and put on every log line of the request.
public struct IngestRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var requestId: String
    /// The client end of the connection (the key of the per-source rate limit).
    public let remoteAddress: SocketAddress?
    /// The app of a Bearer route, set by `AppAuthMiddleware` (nil on every other route).
    var authenticatedApp: AuthenticatedApp?
    /// The matched route's scope, from `RouteScopes.table` (`RouteScopeMiddleware`); nil for a
    /// request that matched no route.
    var routeScope: RouteScope?
    /// Who is calling an admin route, set by `AdminAuthMiddleware` (nil on every other route).
    var adminActor: AdminActor?
    /// SHA-256 of the admin token that caller presented: a keyed create's raw tokens derive from
    /// it and a key only the server holds (`AdminCreateKey`), so a retry by another caller never
    /// gets them.
    var adminCredentialDigest: String?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.requestId = ""
        self.remoteAddress = source.channel.remoteAddress
        self.authenticatedApp = nil
        self.routeScope = nil
        self.adminActor = nil
        self.adminCredentialDigest = nil
    }
}
