import HTTPTypes

/// A limit as the `RateLimit-Policy` and `RateLimit` fields name it (the IETF httpapi draft
/// "RateLimit header fields for HTTP"), written on every `2xx` and `429` a limit applied to.
///
/// Each limit is a token bucket: its quota (`q`) is the bucket's burst, its window (`w`) the whole
/// seconds an empty bucket takes to fill again. `RateLimit` says what is left (`r`, whole requests)
/// and in how many whole seconds the bucket is full again (`t`); on a `429`, `r` is 0 and `t` the
/// `Retry-After`. A request that several limits applied to carries one member per limit.
public struct RateLimitPolicy: Sendable {
    /// `source` (per source address), `app` (per app and token scope) or
    /// `admin-authentication` (failed admin authentications per source address).
    let name: String
    let quota: Int
    let window: Int

    init(name: String, perSecond: Double, burst: Double) {
        self.name = name
        quota = Int(burst)
        window = max(1, Int((burst / perSecond).rounded(.up)))
    }

    /// Adds this policy and what is left of it to `fields`.
    func write(remaining: Int, resetSeconds: Int, to fields: inout HTTPFields) {
        fields.append(HTTPField(name: .rateLimitPolicy, value: "\"\(name)\";q=\(quota);w=\(window)"))
        fields.append(HTTPField(name: .rateLimit, value: "\"\(name)\";r=\(remaining);t=\(resetSeconds)"))
    }
}

extension HTTPField.Name {
    static let rateLimitPolicy = Self("RateLimit-Policy")!
    static let rateLimit = Self("RateLimit")!
}
