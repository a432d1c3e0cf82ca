import Foundation

/// One commit of a store, as its changelog keeps it: the mutations the handlers decided and the
/// partitions' offsets, in the order the commit wrote them (docs/ARCHITECTURE.md#changelog-and-restore).
/// A store that starts empty and writes the entries of a changelog one after the other, in
/// sequence order, holds what the store that committed them held.
public struct ChangelogEntry: Sendable, Equatable {
    public var mutations: [Mutation]
    public var offsets: [OffsetUpdate]

    public init(mutations: [Mutation], offsets: [OffsetUpdate]) {
        self.mutations = mutations
        self.offsets = offsets
    }
}
