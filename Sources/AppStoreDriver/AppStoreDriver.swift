public import HTTP
public import Job
public import Logging
public import Reconciliation
public import Storage

/// The App Store's driver: Apple's apps (their keys, the rate limiter, the verifier) behind one HTTP client,
/// and the gateway of each of its strategies.
public struct AppStoreDriver: StoreDriver {
    public init() {}

    public var storeDescription: StoreDescription { BuiltInStores.appStore }

    public func apps(in configuration: ClawbackConfiguration) -> [String] { configuration.apps.map(\.bundleID) }

    /// `apple` (the API) and `apps` (each app and its keys), the run section's `claw_back_unknown_to_apple`, and
    /// its refund-request feed's keys of `refund_requests`.
    public var configurationKeys: [String] { ["apple", "apps"] }
    public var sharedSectionKeys: [String: Set<String>] {
        ["run": ["claw_back_unknown_to_apple"], "refund_requests": ["lookback_hours", "overlap_minutes", "undelivered_after_hours", "metrics_file"]]
    }
    public func readSettings(_ file: ConfigurationSection) -> (any StoreSettings)? { AppStoreSettings.read(file) }

    /// CLAWBACK_APPLE_PRODUCTION_URL and CLAWBACK_APPLE_SANDBOX_URL (the simulator's for a rehearsal).
    public func applyEnvironment(_ environment: [String: String], to configuration: inout ClawbackConfiguration) {
        if let url = environment["CLAWBACK_APPLE_PRODUCTION_URL"] { configuration.apple.productionURL = url }
        if let url = environment["CLAWBACK_APPLE_SANDBOX_URL"] { configuration.apple.sandboxURL = url }
    }

    public func finalProblems(_ configuration: ClawbackConfiguration) -> [ConfigurationError] { configuration.appStore.finalProblems() }

    public func open(_ run: StoreRun, configuration: ClawbackConfiguration, logger: Logger) throws(StoreOpeningFailure) -> StoreConnection {
        let withoutAppleID = AppleJobStart.appsWithoutAppleID(configuration)
        if run.strategy == .notifications || run.strategy == .notifiedRefunds, !withoutAppleID.isEmpty {
            throw .configuration(
                .asked(
                    "--strategy \(run.strategy.rawValue) needs app_apple_id for \(withoutAppleID.joined(separator: ", ")): production notifications are verified against it"
                ))
        }
        let concurrency = run.concurrency ?? configuration.apple.concurrency
        let http: HTTPClient
        do {
            http = try AppleAppsFactory.httpClient(configuration, maxConcurrentRequests: max(concurrency, 8))
        } catch {
            throw .unavailable(Unavailable(cause: error))
        }
        let apps: AppleApps
        do {
            apps = try AppleAppsFactory.make(configuration, shardCount: run.selection.shardCount, http: http, logger: logger)
        } catch {
            http.shutdown()
            throw .configuration(.invalid(error))
        }
        let gateway = Self.gateway(run.strategy, apps: apps, auditShare: run.auditShare, auditSalt: run.auditSalt, logger: logger)
        return StoreConnection(gateway: gateway, defaultConcurrency: concurrency, clients: [http])
    }

    /// The gateway that asks the App Store the way `strategy` does (Get Transaction Info for any other).
    public static func gateway(_ strategy: RunStrategy, apps: AppleApps, auditShare: Double, auditSalt: String, logger: Logger) -> any StoreGateway {
        switch strategy {
        case .notifications: NotificationFeedGateway(apps: apps, auditShare: auditShare, auditSalt: auditSalt, logger: logger)
        case .customerHistory: CustomerHistoryGateway(apps: apps)
        case .receipt: ReceiptGateway(apps: apps)
        case .notifiedRefunds: NotifiedRefundsGateway(apps: apps, logger: logger)
        default:
            // Only the App Store's own strategies reach here (MonthlyRun takes the registered one); the rest
            // ask per transaction, the reference.
            TransactionInfoGateway(apps: apps)
        }
    }

    /// `run.claw_back_unknown_to_apple`: Apple documents 4040010 in every environment as proof.
    public func policy(_ configuration: ClawbackConfiguration) -> ReconciliationPolicy {
        ReconciliationPolicy(rounding: configuration.run.rounding, clawBackUnknown: configuration.clawBackUnknownToApple)
    }

    public func checkConfiguration(
        _ configuration: ClawbackConfiguration, http: HTTPClient, database: DatabaseConfiguration, logger: Logger
    ) async -> [ConfigurationCheck.Line] {
        await AppStoreConfigurationCheck.lines(configuration, logger: logger)
    }

    public func metricsSeries(of strategy: RunStrategy) -> MetricsFile.Series { strategy.isDaily ? .daily : .monthly }

    /// `run.metrics_file` is the monthly App Store run's; the daily run writes only the file it is given.
    public func defaultMetricsFile(of strategy: RunStrategy, configuration: ClawbackConfiguration) -> String? {
        strategy.isDaily ? nil : configuration.run.metricsFile
    }
}

extension MetricsFile.Series {
    /// `clawback run`, the monthly App Store run: `clawback_…`, its request series also under their 1.x names.
    public static let monthly = MetricsFile.Series(
        prefix: "clawback_", source: "run", api: "App Store Server API",
        deprecatedRequestNames: .init(requests: "apple_requests", rateLimited: "apple_rate_limited"))
    /// `clawback run --daily`: `clawback_daily_…`.
    public static let daily = MetricsFile.Series(
        prefix: "clawback_daily_", source: "daily_run", api: "App Store Server API",
        deprecatedRequestNames: .init(requests: "apple_requests", rateLimited: "apple_rate_limited"))
}
