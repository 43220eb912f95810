import GooglePlay
public import HTTP
public import Job
public import Logging
public import Reconciliation
public import Storage

/// Google Play's driver: each configured app's Orders API client (its service account's tokens) on an HTTP
/// client of Google's own timeout, and the gateway of each of its strategies. It reads no App Store key.
public struct GooglePlayDriver: StoreDriver {
    public init() {}

    public var storeDescription: StoreDescription { BuiltInStores.googlePlay }
    public var recordsKept: [StoreRecords] { [GoogleVoidStore.records] }

    public func apps(in configuration: ClawbackConfiguration) -> [String] { configuration.googleApps.map(\.packageName) }

    /// `google` (the API, the notifications' subscription) and `google_apps` (each app and its service account).
    public var configurationKeys: [String] { ["google", "google_apps"] }
    public func readSettings(_ file: ConfigurationSection) -> (any StoreSettings)? { GooglePlaySettings.read(file) }

    /// CLAWBACK_GOOGLE_API_URL and CLAWBACK_GOOGLE_TOKEN_URL (the simulator's for a rehearsal).
    public func applyEnvironment(_ environment: [String: String], to configuration: inout ClawbackConfiguration) {
        if let url = environment["CLAWBACK_GOOGLE_API_URL"] { configuration.google.apiURL = url }
        if let url = environment["CLAWBACK_GOOGLE_TOKEN_URL"] { configuration.google.tokenURL = url }
    }

    public func finalProblems(_ configuration: ClawbackConfiguration) -> [ConfigurationError] { configuration.googlePlay.finalProblems() }

    public func open(_ run: StoreRun, configuration: ClawbackConfiguration, logger: Logger) throws(StoreOpeningFailure) -> StoreConnection {
        guard !configuration.googleApps.isEmpty else {
            throw .configuration(.asked("--strategy \(run.strategy.rawValue) needs a Google Play app: add one under google_apps"))
        }
        // A daily run's share is Google's budget (`dailyRunShare`): anything else is refused, never a silent budget of its own.
        if let share = run.share, !(share is CallAllowance) {
            throw .misuse("Google Play's daily run was handed \(type(of: share)) as its Orders API budget")
        }
        let http: HTTPClient
        do {
            http = try HTTPClients.start(for: "Google Play", timeout: configuration.google.timeout)
        } catch {
            throw .unavailable(Unavailable(cause: error))
        }
        let apps: GooglePlayApps
        do {
            apps = try GooglePlayAppsFactory.orders(configuration, http: http, allowance: run.share as? CallAllowance)
        } catch {
            http.shutdown()
            throw .configuration(.invalid(error))
        }
        // Google's grants wait in batches of a thousand, not on requests in flight (`GoogleOrdersGateway`).
        let gateway: any StoreGateway =
            run.strategy == .googleVoidedOrders ? GoogleVoidedOrdersGateway(apps: apps, logger: logger) : GoogleOrdersGateway(apps: apps)
        return StoreConnection(gateway: gateway, defaultConcurrency: GoogleOrdersGateway.grantsInFlight, clients: [http])
    }

    /// The passes of one daily run spend one Orders API budget, not one each.
    public func dailyRunShare(_ configuration: ClawbackConfiguration) -> (any Sendable)? { GooglePlayAppsFactory.callAllowance(configuration) }

    /// `google.refund_without_revoke` and `google.amount_refunds`.
    public func policy(_ configuration: ClawbackConfiguration) -> ReconciliationPolicy {
        ReconciliationPolicy(
            rounding: configuration.run.rounding, refundsKeepingAccess: configuration.google.refundWithoutRevoke,
            amountRefunds: configuration.google.amountRefunds)
    }

    public func checkConfiguration(
        _ configuration: ClawbackConfiguration, http: HTTPClient, database: DatabaseConfiguration, logger: Logger
    ) async -> [ConfigurationCheck.Line] {
        await GooglePlayConfigurationCheck.lines(configuration, http: http, database: database, logger: logger)
    }

    public func metricsSeries(of strategy: RunStrategy) -> MetricsFile.Series { strategy.isDaily ? .googlePlayDaily : .googlePlay }
}

extension MetricsFile.Series {
    /// `clawback run --strategy google-orders`, the monthly Google Play run: `clawback_google_…`.
    public static let googlePlay = MetricsFile.Series(prefix: "clawback_google_", source: "google_run", api: "Google Play Developer API")
    /// `clawback run --daily --strategy google-orders`, Google Play's daily run: `clawback_google_daily_…`.
    public static let googlePlayDaily = MetricsFile.Series(
        prefix: "clawback_google_daily_", source: "google_daily_run", api: "Google Play Developer API")
}
