import NIOCore

/// A push request's answer: the final `:status`, `retry-after` and the body (nil when empty).
struct HTTP2Response: Sendable, Equatable {
    var status: Int
    var retryAfter: String?
    var body: ByteBuffer?
}
