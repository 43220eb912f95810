import HTTP
import Logging
import Reconciliation

/// The Google Play side of a run: each configured app's Orders API client (its service account's tokens) on
/// an HTTP client of Google's own timeout, and the gateway of the run's strategy. It reads no App Store key.
enum GooglePlayStoreConnection {
    static func open(_ configuration: ClawbackConfiguration, request: MonthlyRun.Request, logger: Logger) throws(MonthlyRun.Failure)
        -> StoreConnection
    {
        guard !configuration.googleApps.isEmpty else {
            throw .configuration("--strategy \(request.strategy.rawValue) needs a Google Play app: add one under google_apps")
        }
        let http: HTTPClient
        do {
            http = try HTTPClient(configuration: .init(timeout: configuration.google.timeout))
        } catch {
            throw .unavailable("cannot start the HTTP client: \(error)")
        }
        let apps: GooglePlayApps
        do {
            apps = try GooglePlayAppsFactory.orders(configuration, http: http, allowance: request.googleAllowance)
        } catch {
            http.shutdown()
            throw .configuration("\(error)")
        }
        // Google's grants wait in batches of a thousand, not on requests in flight (`GoogleOrdersGateway`).
        let gateway: any StoreGateway =
            request.strategy == .googleVoidedOrders ? GoogleVoidedOrdersGateway(apps: apps, logger: logger) : GoogleOrdersGateway(apps: apps)
        return StoreConnection(gateway: gateway, defaultConcurrency: GoogleOrdersGateway.grantsInFlight, clients: [http])
    }
}
