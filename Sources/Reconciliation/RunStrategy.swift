/// How a run asks its store (the App Store, or Google Play for `google-orders`): stored as the runs table's `strategy`.
/// Each strategy's answers are held to what its store's complete per-purchase statement concludes (the Job module's
/// `StoreGateway`); docs/architecture.md's strategy table says what each concludes and what it leaves unverified.
public enum RunStrategy: String, Sendable, CaseIterable {
    /// Get Transaction Info per grant: complete, the reference; Apple-rate-limited (50/s per app).
    case transactionInfo = "transaction-info"
    /// The app's refund feed (Get Notification History), with per-transaction fallbacks where the feed
    /// cannot cover a grant: Apple calls scale with refunds.
    case notifications
    /// Get Transaction History per Apple account: calls scale with accounts and their purchases / 20.
    case customerHistory = "customer-history"
    /// Legacy verifyReceipt for grants that kept a StoreKit 1 receipt, Get Transaction Info for the others.
    case receipt
    /// The daily run (`clawback run --daily`): only the purchases the app's refund feed names since the last
    /// such run of the window that succeeded, each asked with Get Transaction Info. It
    /// concludes nothing about the other grants (the monthly run checks every one), so it needs no audit.
    case notifiedRefunds = "notified-refunds"
    /// Google Play's grants (the only strategy that reads them): each order's statement from Google's
    /// Orders API (`orders.batchget`, 1,000 orders a call), with the voided purchases the sweep kept for
    /// a chargeback's or fraud's reason and a quantity-based partial refund's units.
    case googleOrders = "google-orders"
    /// Google Play's daily run (`clawback run --daily --strategy google-orders`): only the purchases whose voids
    /// the sweep kept since the last such run of the window that succeeded, each order asked as `googleOrders`
    /// asks it. It concludes nothing about the other grants (the monthly run checks every one).
    case googleVoidedOrders = "google-voided-orders"

    /// The store whose grants this strategy reads.
    public var store: Store {
        switch self {
        case .googleOrders, .googleVoidedOrders: .googlePlay
        case .transactionInfo, .notifications, .customerHistory, .receipt, .notifiedRefunds: .appStore
        }
    }

    /// A daily run: it checks only the purchases its store's refund feed names since its last success, never
    /// the whole window, and never prunes.
    public var isDaily: Bool { self == .notifiedRefunds || self == .googleVoidedOrders }

    /// The daily run of the store this strategy asks.
    public var daily: RunStrategy { store == .googlePlay ? .googleVoidedOrders : .notifiedRefunds }

    /// The strategy a command-line value names. `refund-history`, this strategy's name before it read
    /// whole customer histories, still names `customer-history`.
    public init?(argument: String) {
        if argument == "refund-history" {
            self = .customerHistory
        } else {
            self.init(rawValue: argument)
        }
    }
}
