/// The stores clawback ships with, registered in the `StoreCatalog` from the start: their identities (the
/// `clawback.store` values), their strategies (the runs table's `strategy` values) and their descriptions.
/// The one place of the core that names them, beside the stored verdicts finance reads (`Verdict`); each
/// store's protocol and gateways are its own (`AppStore`, `GooglePlay`, and their folders in `Job`).
public enum BuiltInStores {
    static let descriptions = [appStore, googlePlay]
    /// The store of a grant written before stores had a column.
    static let legacyDefault = Store.appStore

    public static let appStore = StoreDescription(
        store: .appStore, company: "Apple", displayName: "App Store",
        strategies: [.transactionInfo, .notifications, .customerHistory, .receipt, .notifiedRefunds],
        formerNames: ["refund-history": .customerHistory], unknownVerdict: .unknownToApple, ownVerdicts: [.noRefundReported],
        report: .init(
            requestsKey: "apple", requestsWithoutRuns: true, rateLimitedNote: "429 answers",
            verdictNotes: [
                .unknownToApple: "Apple does not know the transaction: review (suspected forged grant)",
                .noRefundReported: "the refund feed covering it reports no refund (Apple did not confirm the purchase)",
            ]),
        importRules: .init(ownFields: ["app_account_token", "storefront", "receipt"]))

    public static let googlePlay = StoreDescription(
        store: .googlePlay, company: "Google", displayName: "Google Play", strategies: [.googleOrders, .googleVoidedOrders],
        unknownVerdict: .unknownToGoogle,
        report: .init(
            requestsKey: "google_play", rateLimitedNote: "quota refusals (429, rate-limit 403)",
            verdictNotes: [.unknownToGoogle: "Google's Orders API does not know the order: review"],
            coverage: .init(
                key: "google_voids_not_covered", coveredNote: "the voids the sweep kept cover every app's window",
                uncoveredNote: "chargeback and fraud reasons and quantity refunds' exact units may be missing: ")),
        importRules: .init(ownFields: ["obfuscated_account_id"], originalIsTransactionID: true))
}

extension Store {
    // swift-format-ignore: DontRepeatTypeInStaticProperties
    // The store's name, stored since 1.0 as `app_store`.
    public static let appStore = Store(identifier: "app_store")
    public static let googlePlay = Store(identifier: "google_play")
}

extension RunStrategy {
    /// Get Transaction Info per grant: complete, the reference; Apple-rate-limited (50/s per app).
    public static let transactionInfo = RunStrategy(identifier: "transaction-info", store: .appStore)
    /// The app's refund feed (Get Notification History), with per-transaction fallbacks where the feed
    /// cannot cover a grant: Apple calls scale with refunds.
    public static let notifications = RunStrategy(identifier: "notifications", store: .appStore, auditsFeed: true)
    /// Get Transaction History per Apple account: calls scale with accounts and their purchases / 20.
    public static let customerHistory = RunStrategy(identifier: "customer-history", store: .appStore)
    /// Legacy verifyReceipt for grants that kept a StoreKit 1 receipt, Get Transaction Info for the others.
    public static let receipt = RunStrategy(identifier: "receipt", store: .appStore)
    /// The daily run (`clawback run --daily`): only the purchases the app's refund feed names since the last
    /// such run of the window that succeeded, each asked with Get Transaction Info. It concludes nothing
    /// about the other grants (the monthly run checks every one), so it needs no audit.
    public static let notifiedRefunds = RunStrategy(identifier: "notified-refunds", store: .appStore, isDaily: true)
    /// Google Play's grants: each order's statement from Google's Orders API (`orders.batchget`, 1,000 orders
    /// a call), with the voided purchases the sweep kept for a chargeback's or fraud's reason and a
    /// quantity-based partial refund's units.
    public static let googleOrders = RunStrategy(identifier: "google-orders", store: .googlePlay)
    /// Google Play's daily run (`clawback run --daily --strategy google-orders`): only the purchases whose voids
    /// the sweep kept since the last such run of the window that succeeded, each order asked as `googleOrders`
    /// asks it. It concludes nothing about the other grants (the monthly run checks every one).
    public static let googleVoidedOrders = RunStrategy(identifier: "google-voided-orders", store: .googlePlay, isDaily: true)
}
