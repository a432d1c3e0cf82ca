/// What a mock push server was told to answer for each device or registration token, instead of
/// its usual success: one behaviour for every request to the token, or one for its next N
/// requests only (after which the token succeeds again); and for tokens without a script of
/// their own, what a rule chooses from the token itself (tokens no test can list in advance,
/// such as every token with a given prefix).
///
/// A value; the servers keep it under their lock, so a test may change it at any time.
struct ScriptBook<Behaviour: Sendable>: Sendable {
    private enum Script {
        case always(Behaviour)
        case next(Behaviour, remaining: Int)
    }

    /// Chooses the behaviour for a token from the token; nil for success.
    typealias Rule = @Sendable (String) -> Behaviour?

    private var scripts: [String: Script] = [:]
    private var rule: Rule?

    /// Answers every later request to `token` with `behaviour`; nil restores success.
    mutating func set(_ behaviour: Behaviour?, for token: String) {
        scripts[token] = behaviour.map { .always($0) }
    }

    /// Answers the next `count` requests to `token` with `behaviour`, the ones after with success.
    mutating func set(_ behaviour: Behaviour, forNext count: Int, requestsTo token: String) {
        scripts[token] = count > 0 ? .next(behaviour, remaining: count) : nil
    }

    /// Answers requests to tokens without a script of their own with what `rule` returns for
    /// the token; nil removes the rule.
    mutating func setRule(_ rule: Rule?) {
        self.rule = rule
    }

    /// The behaviour for a request to `token` that has just arrived, counted against a
    /// limited script; nil for success.
    mutating func behaviour(forRequestTo token: String) -> Behaviour? {
        switch scripts[token] {
        case nil:
            return rule?(token)
        case .always(let behaviour):
            return behaviour
        case .next(let behaviour, let remaining):
            scripts[token] = remaining > 1 ? .next(behaviour, remaining: remaining - 1) : nil
            return behaviour
        }
    }

    /// Forgets every script and the rule.
    mutating func removeAll() {
        scripts = [:]
        rule = nil
    }
}
