public import Reconciliation

/// Stripe, the web shop's payments, as a store: its identity (`clawback.store` value `stripe`, migration
/// 0021), its strategy, its words and its import rules. A Stripe grant's transaction id is its PaymentIntent's
/// id (`pi_…`), its bundle id the web shop's name in `stripe.shops`.
public enum StripeStore {
    public static let store = Store(identifier: "stripe")

    /// The monthly re-check: the window's charges, and the refunds and disputes made since its start, listed
    /// 100 a page (a few hundred calls for a month, not one per grant); a payment the lists do not hold is
    /// asked alone.
    public static let payments = RunStrategy(identifier: "stripe-payments", store: store)

    /// The daily run: the payments Stripe's events of the last days name, each asked alone.
    public static let events = RunStrategy(identifier: "stripe-events", store: store, isDaily: true)

    public static let description = StoreDescription(
        store: store, company: "Stripe", displayName: "Stripe (web shop)", strategies: [payments, events],
        report: .init(
            requestsKey: "stripe", rateLimitedNote: "429 answers",
            coverage: .init(
                key: "stripe_events_not_covered", coveredNote: "Stripe's events cover every daily run's span",
                uncoveredNote: "refunds and disputes older than Stripe's 30 days of events are the monthly re-check's: ")),
        // record_stripe_grant's rule (migration 0023, CB005), so a file and the grant path agree.
        importRules: .init(ownFields: [], originalIsTransactionID: true, transactionIDPattern: ("^pi_[A-Za-z0-9_]+$", "a PaymentIntent id (pi_…)")))
}
