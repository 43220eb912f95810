import HTTP
public import Logging
public import Reconciliation
import Storage

/// The App Store side of a run: Apple's apps (their keys, the rate limiter, the verifier) behind one HTTP
/// client, and the gateway of the run's strategy.
enum AppleStoreConnection {
    static func open(
        _ configuration: ClawbackConfiguration, request: MonthlyRun.Request, auditSalt: String, logger: Logger
    ) throws(MonthlyRun.Failure) -> StoreConnection {
        let withoutAppleID = AppleJobStart.appsWithoutAppleID(configuration)
        if request.strategy == .notifications || request.strategy == .notifiedRefunds, !withoutAppleID.isEmpty {
            throw .configuration(
                "--strategy \(request.strategy.rawValue) needs app_apple_id for \(withoutAppleID.joined(separator: ", ")): production notifications are verified against it"
            )
        }
        let concurrency = request.concurrency ?? configuration.apple.concurrency
        let http: HTTPClient
        do {
            http = try AppleAppsFactory.httpClient(configuration, maxConcurrentRequests: max(concurrency, 8))
        } catch {
            throw .unavailable("cannot start the HTTP client: \(error)")
        }
        let apps: AppleApps
        do {
            apps = try AppleAppsFactory.make(configuration, shardCount: request.selection.shardCount, http: http, logger: logger)
        } catch {
            http.shutdown()
            throw .configuration("\(error)")
        }
        let gateway = request.strategy.appStoreGateway(apps: apps, auditShare: request.auditShare, auditSalt: auditSalt, logger: logger)
        return StoreConnection(gateway: gateway, defaultConcurrency: concurrency, clients: [http])
    }
}

extension RunStrategy {
    /// The gateway that asks the App Store this way. Only the App Store's strategies have one here
    /// (`AppleStoreConnection` opens no other); `google-orders` is Google Play's (`GooglePlayStoreConnection`).
    public func appStoreGateway(apps: AppleApps, auditShare: Double, auditSalt: String, logger: Logger) -> any StoreGateway {
        switch self {
        case .transactionInfo: TransactionInfoGateway(apps: apps)
        case .notifications: NotificationFeedGateway(apps: apps, auditShare: auditShare, auditSalt: auditSalt, logger: logger)
        case .customerHistory: CustomerHistoryGateway(apps: apps)
        case .receipt: ReceiptGateway(apps: apps)
        case .notifiedRefunds: NotifiedRefundsGateway(apps: apps, logger: logger)
        case .googleOrders, .googleVoidedOrders: preconditionFailure("\(rawValue) asks Google Play: GooglePlayStoreConnection opens it")
        }
    }
}
