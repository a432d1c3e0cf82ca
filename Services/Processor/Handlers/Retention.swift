/// How long the rows a client token can make are kept, in command times of their app part
/// (docs/ARCHITECTURE.md#bounded-growth): registration statuses and acks. A row goes in the first
/// batch that ends with its app part's clock past its time plus this.
package struct Retention: Sendable, Equatable {
    package var registrationStatuses: Duration
    package var acks: Duration

    package init(registrationStatuses: Duration = DecisionRules.default.registrationStatusTime,
                 acks: Duration = DecisionRules.default.ackTime) {
        self.registrationStatuses = registrationStatuses
        self.acks = acks
    }
}
