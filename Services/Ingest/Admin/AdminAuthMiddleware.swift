import Contracts
import Foundation
import Hummingbird

/// Guards the admin API: `Authorization: Bearer <PUSHLINE_ADMIN_TOKEN>`, compared in constant
/// time. Anything else is a 401 problem; an empty configured token admits no one.
struct AdminAuthMiddleware: RouterMiddleware {
    typealias Context = IngestRequestContext

    let adminToken: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard !adminToken.isEmpty,
              let presented = Self.bearerToken(request.headers[.authorization]),
              ApiTokens.constantTimeEquals(presented, adminToken)
        else {
            throw IngestError.rejected(.unauthorized, Problem(error: "a valid admin bearer token is required", field: "Authorization"))
        }
        return try await next(request, context)
    }

    /// The token of a `Bearer` authorization (scheme case-insensitive, RFC 9110).
    static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}
