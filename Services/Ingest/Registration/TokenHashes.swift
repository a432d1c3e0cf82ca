import Contracts

/// The hashes of the API tokens a request's registrations or cleanups carry, one per element:
/// a batch nearly always carries one token a hundred times, hashed once.
struct TokenHashes {
    private var last: (token: String, hash: String)?

    mutating func hash(_ token: String) -> String {
        if let last, last.token == token { return last.hash }
        let hash = ApiTokens.hash(token)
        last = (token, hash)
        return hash
    }
}
