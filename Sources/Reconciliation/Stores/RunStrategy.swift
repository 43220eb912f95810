/// How a run asks its store: stored as the runs table's `strategy`. Each store's driver declares its
/// strategies in its `StoreDescription`; each strategy's answers are held to what its store's complete
/// per-purchase statement concludes (the Job module's `StoreGateway`), and docs/architecture.md's strategy
/// table says what each concludes and what it leaves unverified.
///
/// A strategy carries what the shared runs need to know of it (its store, whether it is a daily run,
/// whether it audits a refund feed); two strategies are the same when their names are.
public struct RunStrategy: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    /// The store whose grants this strategy reads.
    public let store: Store
    /// A daily run: it checks only the purchases its store's refund feed names since its last success, never
    /// the whole window, and never prunes.
    public let isDaily: Bool
    /// It audits a refund feed with a sample of per-purchase requests (the run's `notifications_missed` and
    /// `notifications_rejected` figures are its).
    public let auditsFeed: Bool

    /// A strategy as its store's driver declares it.
    public init(identifier: String, store: Store, isDaily: Bool = false, auditsFeed: Bool = false) {
        self.rawValue = identifier
        self.store = store
        self.isDaily = isDaily
        self.auditsFeed = auditsFeed
    }

    /// A registered strategy; nil for a name no driver registered.
    public init?(rawValue: String) {
        guard let strategy = StoreCatalog.strategies.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = strategy
    }

    /// The strategy a command-line value (or a stored run) names: a registered strategy, or one of its
    /// store's former names (`refund-history`, `customer-history`'s before it read whole customer histories).
    public init?(argument: String) {
        if let strategy = RunStrategy(rawValue: argument) {
            self = strategy
        } else if let strategy = StoreCatalog.descriptions.lazy.compactMap({ $0.formerNames[argument] }).first {
            self = strategy
        } else {
            return nil
        }
    }

    /// The daily run of the store this strategy asks (nil: the store has none).
    public var daily: RunStrategy? { StoreCatalog.description(of: store)?.dailyStrategy }

    public var description: String { rawValue }

    public static func == (lhs: RunStrategy, rhs: RunStrategy) -> Bool { lhs.rawValue == rhs.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}
