import NIOHTTP2

/// Why a request got no answer. Every case is worth another attempt: none says the push is wrong.
enum HTTP2TransportError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The base URL is not `https://host[:port]`.
    case unsupportedURL(String)
    /// TCP or TLS could not be set up.
    case connectFailed(String)
    /// TLS agreed on another protocol than `h2` (ALPN).
    case notHTTP2(negotiated: String?)
    /// The connection closed (or failed) with the request open.
    case connectionClosed(String?)
    /// The server sent `GOAWAY`: it will not answer this stream, or takes no new ones.
    case goingAway(HTTP2ErrorCode)
    /// The connection used up its stream IDs; the next request opens a new one.
    case streamIDsUsedUp
    /// The server reset the stream (`RST_STREAM`) with this code.
    case streamReset(HTTP2ErrorCode)
    /// No answer within the timeout; the stream was reset (`CANCEL`).
    case timedOut
    /// The answer's body is longer than the limit; the stream was reset (`CANCEL`).
    case responseTooLarge(limit: Int)
    /// The answer is not HTTP (no `:status`).
    case badResponse(String)
    /// The client was shut down.
    case shutDown
    /// The task waiting for the answer was cancelled; the stream was reset (`CANCEL`).
    case cancelled
    /// The connection picked for the request had closed or gone away before it could be sent
    /// (`HTTP2Transport` sends it once more, on a new connection).
    case notSent(String)

    var description: String {
        switch self {
        case .unsupportedURL(let url): "not an https base URL: \(url)"
        case .connectFailed(let error): "could not connect: \(error)"
        case .notHTTP2(let negotiated): "the server does not speak HTTP/2 (ALPN: \(negotiated ?? "none"))"
        case .connectionClosed(let error): "the connection closed" + (error.map { ": \($0)" } ?? "")
        case .goingAway(let code): "the server is going away (GOAWAY \(code))"
        case .streamIDsUsedUp: "the connection used up its stream IDs"
        case .streamReset(let code): "the server reset the stream (RST_STREAM \(code))"
        case .timedOut: "no answer in time"
        case .responseTooLarge(let limit): "the answer is longer than \(limit) bytes"
        case .badResponse(let what): "a bad answer: \(what)"
        case .shutDown: "the client is shut down"
        case .cancelled: "cancelled"
        case .notSent(let why): "not sent: \(why)"
        }
    }
}
