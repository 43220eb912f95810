public import Logging
public import Reconciliation

extension RunStrategy {
    /// The gateway that asks the store this way (`google` only for `google-orders`, which asks Google).
    public func gateway(apps: AppleApps, google: GooglePlayApps = GooglePlayApps(orders: [:]), auditShare: Double, auditSalt: String, logger: Logger)
        -> any StoreGateway
    {
        switch self {
        case .googleOrders: GoogleOrdersGateway(apps: google)
        case .transactionInfo: TransactionInfoGateway(apps: apps)
        case .notifications: NotificationFeedGateway(apps: apps, auditShare: auditShare, auditSalt: auditSalt, logger: logger)
        case .customerHistory: CustomerHistoryGateway(apps: apps)
        case .receipt: ReceiptGateway(apps: apps)
        case .notifiedRefunds: NotifiedRefundsGateway(apps: apps, logger: logger)
        }
    }
}
