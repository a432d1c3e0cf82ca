import Contracts
import Foundation
import Hummingbird
import Logging
import WireCodec

/// Wraps every route: gives the request its id (from `x-request-id` when sane, else a new one),
/// turns every error into a JSON `Problem` answer, echoes the id and counts the answer.
///
/// Unknown routes pass through here too (Hummingbird's not-found responder is wrapped by the
/// router's middleware), so a 404 is a JSON problem like every other refusal.
struct RequestMiddleware: RouterMiddleware {
    typealias Context = IngestRequestContext

    let metrics: IngestMetrics
    let retryAfterSeconds: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let requestId = Self.requestId(from: request.headers[.requestId])
        context.requestId = requestId
        context.logger[metadataKey: "request_id"] = .string(requestId)

        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            response = problemResponse(for: error, logger: context.logger)
        }
        response.headers[.requestId] = requestId
        metrics.countRequest(route: context.endpointPath ?? "unmatched", status: Int(response.status.code))
        return response
    }

    private func problemResponse(for error: any Error, logger: Logger) -> Response {
        let status: HTTPResponse.Status
        let problem: Problem
        var headers: HTTPFields = [:]
        switch error {
        case IngestError.rejected(let rejectedStatus, let rejectedProblem):
            logger.debug("request refused", metadata: ["status": "\(rejectedStatus.code)", "field": "\(rejectedProblem.field ?? "")"])
            status = rejectedStatus
            problem = rejectedProblem
            if status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        case IngestError.rateLimited(let limitProblem, let retryAfterSeconds, let policy):
            status = .tooManyRequests
            problem = limitProblem
            headers[.retryAfter] = String(retryAfterSeconds)
            policy.write(remaining: 0, resetSeconds: retryAfterSeconds, to: &headers)
        case IngestError.unavailable:
            status = .serviceUnavailable
            problem = Problem(error: "the service cannot accept this right now; retry later", code: .unavailable)
            headers[.retryAfter] = String(retryAfterSeconds)
        case IngestError.notApplied(let message):
            status = .serviceUnavailable
            problem = Problem(error: message, code: .notApplied)
            headers[.retryAfter] = String(retryAfterSeconds)
        case let error as HTTPError:
            status = error.status
            problem = Problem(error: error.body ?? Self.defaultMessage(for: error.status), code: Self.code(for: error.status))
        case let error as any HTTPResponseError:
            status = error.status
            problem = Problem(error: Self.defaultMessage(for: error.status), code: Self.code(for: error.status))
        default:
            logger.error("request failed", metadata: ["error": "\(String(reflecting: error))"])
            status = .internalServerError
            problem = Problem(error: "internal error", code: .internalError)
        }
        do {
            return try JSONResponse.make(problem, status: status, encoder: WireJSON.encoder(), headers: headers)
        } catch {
            return Response(status: status, headers: headers)
        }
    }

    /// The code of an error the HTTP layer raised (no route, a body it could not read).
    static func code(for status: HTTPResponse.Status) -> ProblemCode {
        switch status.code {
        case 404, 405: .notFound
        case 413: .bodyTooLarge
        case 415: .mediaTypeUnsupported
        case 400..<500: .bodyMalformed
        default: .internalError
        }
    }

    private static func defaultMessage(for status: HTTPResponse.Status) -> String {
        switch status {
        case .notFound: "no such route"
        case .contentTooLarge: "the body is too large"
        default: status.reasonPhrase.isEmpty ? "request failed" : status.reasonPhrase.lowercased()
        }
    }

    /// A client's `x-request-id` is kept when it is short printable ASCII (it ends up in logs and
    /// record headers); otherwise a new one is made.
    static func requestId(from header: String?) -> String {
        if let header, !header.isEmpty, header.utf8.count <= 128, header.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            return header
        }
        return UUID.random().uuidString.lowercased()
    }
}
