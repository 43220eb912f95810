public import Logging
public import Reconciliation

extension RunStrategy {
    /// The gateway that asks Apple this way.
    public func gateway(apps: AppleApps, auditShare: Double, auditSalt: String, logger: Logger) -> any AppleGateway {
        switch self {
        case .transactionInfo: TransactionInfoGateway(apps: apps)
        case .notifications: NotificationFeedGateway(apps: apps, auditShare: auditShare, auditSalt: auditSalt, logger: logger)
        case .customerHistory: CustomerHistoryGateway(apps: apps)
        case .receipt: ReceiptGateway(apps: apps)
        case .notifiedRefunds: NotifiedRefundsGateway(apps: apps, logger: logger)
        }
    }
}
