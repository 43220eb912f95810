import Locking
public import Storage

/// The purchases a daily run's refunds name (Apple's refund feed, Google's kept voids), found by its
/// gateway's `prepare`: the run reads those grants only, each asked as the monthly run would ask it.
public final class NamedPurchases: Sendable {
    public init() {}

    private let named = Locked<[String]>([])

    public func set(_ ids: some Sequence<String>) {
        let sorted = ids.sorted()
        named.withLock { $0 = sorted }
    }

    /// `selection` narrowed to the named purchases (none named: no grant).
    public func narrowing(_ selection: GrantSelection) -> GrantSelection {
        var narrowed = selection
        narrowed.transactionIDs = named.withLock { $0 }
        return narrowed
    }
}
