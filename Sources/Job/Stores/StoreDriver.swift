public import HTTP
public import Logging
public import Reconciliation
public import Reports
public import Storage

/// One store, as the shared runs ask it: its description (identity, words, strategies: `StoreDescription`),
/// the apps its configuration names, what a run of one of its strategies opens, and its metrics' names. The
/// monthly and daily runs, the metrics file, the summaries and the reports go through this and the
/// `StoreCatalog`; none of them names a store. Each store's driver is registered once (`StoreDrivers`); a
/// new store is its driver, its gateways and a migration adding its `clawback.store` value
/// (docs/architecture.md, "Adding a store").
public protocol StoreDriver: Sendable {
    /// Registered in the `StoreCatalog` with the driver.
    var storeDescription: StoreDescription { get }

    /// The configuration file's top-level keys of this store's own sections (`stripe`; the App Store's `apple`
    /// and `apps`), known to the file once the driver is registered.
    var configurationKeys: [String] { get }

    /// Keys of shared sections this store reads, by section (the App Store's `run.claw_back_unknown_to_apple`
    /// and its refund-request feed's `refund_requests.lookback_hours`, …).
    var sharedSectionKeys: [String: Set<String>] { get }

    /// Reads this store's settings from its sections of the file (`file.section(key)`, `file.list(key)`; an
    /// absent section included: its defaults); each problem goes to `problem`, reported with the file's
    /// others. The value is what `ClawbackConfiguration.settings(of:)` returns for the store.
    func readSettings(_ file: ConfigurationSection) -> (any StoreSettings)?

    /// Environment variables that override this store's settings after the file (its API's URLs for a
    /// rehearsal against the simulator).
    func applyEnvironment(_ environment: [String: String], to configuration: inout ClawbackConfiguration)

    /// What only the final configuration (file and environment together) shows wrong with this store's
    /// settings: an endpoint that would carry a credential in clear text
    /// (`ClawbackConfiguration.transportProblem`).
    func finalProblems(_ configuration: ClawbackConfiguration) -> [ConfigurationError]

    /// The apps a run of this store may be narrowed to (`--bundle`): bundle ids, package names.
    func apps(in configuration: ClawbackConfiguration) -> [String]

    /// What a run of `run.strategy` asks with: its clients, and the strategy's gateway. Reads only this
    /// store's settings and keys (a run's pods mount only its store's secrets).
    func open(_ run: StoreRun, configuration: ClawbackConfiguration, logger: Logger) throws(StoreOpeningFailure) -> StoreConnection

    /// What the passes of one daily run share (Google Play's Orders API budget), made once per daily run;
    /// handed to each pass's `open` as `StoreRun.share`.
    func dailyRunShare(_ configuration: ClawbackConfiguration) -> (any Sendable)?

    /// What the studio chose for this store's purchases where the store leaves a choice (claw back a
    /// purchase it conclusively does not know; a refund that kept access; a refund by amount), with the run's
    /// `rounding`.
    func policy(_ configuration: ClawbackConfiguration) -> ReconciliationPolicy

    /// `clawback config check`'s lines of this store: its keys readable and safe, and each call its jobs
    /// make allowed, changing nothing (`http`: the check's own client, short timeouts; `database`: what it
    /// may read of its store's own state, such as the last notification received).
    func checkConfiguration(
        _ configuration: ClawbackConfiguration, http: HTTPClient, database: DatabaseConfiguration, logger: Logger
    ) async -> [ConfigurationCheck.Line]

    /// The names of a run's metrics series: each store's and each run kind's apart (one textfile directory).
    func metricsSeries(of strategy: RunStrategy) -> MetricsFile.Series

    /// The metrics file a run of `strategy` writes when the command names none (nil: none).
    func defaultMetricsFile(of strategy: RunStrategy, configuration: ClawbackConfiguration) -> String?

    /// The store's own parts of finance's report (its answers to the store's refund questions), written
    /// beside the shared files by every report, whichever store's runs it covers, when `configuration` has
    /// the store.
    func reportTables(_ configuration: ClawbackConfiguration) -> [StoreReportTable]

    /// The store's own records kept for finance (its tables), pruned with the runs and the ledger once older
    /// than `tail_window.record_retention_years`, whether or not the configuration has the store.
    var recordsKept: [StoreRecords] { get }
}

extension StoreDriver {
    public func checkConfiguration(
        _ configuration: ClawbackConfiguration, http: HTTPClient, database: DatabaseConfiguration, logger: Logger
    ) async -> [ConfigurationCheck.Line] { [] }

    public var configurationKeys: [String] { [] }
    public var sharedSectionKeys: [String: Set<String>] { [:] }
    public func readSettings(_ file: ConfigurationSection) -> (any StoreSettings)? { nil }
    public func applyEnvironment(_ environment: [String: String], to configuration: inout ClawbackConfiguration) {}
    public func finalProblems(_ configuration: ClawbackConfiguration) -> [ConfigurationError] { [] }

    public func policy(_ configuration: ClawbackConfiguration) -> ReconciliationPolicy {
        ReconciliationPolicy(rounding: configuration.run.rounding)
    }

    public func dailyRunShare(_ configuration: ClawbackConfiguration) -> (any Sendable)? { nil }
    public var recordsKept: [StoreRecords] { [] }
    public func defaultMetricsFile(of strategy: RunStrategy, configuration: ClawbackConfiguration) -> String? { nil }
    public func reportTables(_ configuration: ClawbackConfiguration) -> [StoreReportTable] { [] }
}

/// A run as its store's driver opens it.
public struct StoreRun: Sendable {
    public var strategy: RunStrategy
    public var selection: GrantSelection
    /// Verifications in flight asked on the command line (nil: the store's own default).
    public var concurrency: Int?
    /// A strategy auditing a refund feed: the share of grants re-verified per transaction, 0 to 1.
    public var auditShare: Double
    /// Salts the audit sample's choice, so each scope samples its own grants (the run scope's key).
    public var auditSalt: String
    /// What the daily run's passes share (`StoreDriver.dailyRunShare`); nil outside a daily run.
    public var share: (any Sendable)?
}

/// Why a store could not be opened for a run, before anything ran.
public enum StoreOpeningFailure: Error, Sendable, CustomStringConvertible {
    /// The configuration or the command asks for something this store cannot do (exit 78).
    case configuration(ConfigurationProblem)
    /// Something the store needs could not start (exit 69).
    case unavailable(Unavailable)
    /// The driver was handed what it cannot use: a bug in clawback, reported as one (exit 70).
    case misuse(String)

    public var description: String {
        switch self {
        case .configuration(let problem): "\(problem)"
        case .unavailable(let reason): "\(reason)"
        case .misuse(let text): "internal error: \(text)"
        }
    }
}

/// The store side of a run: the gateway its strategy asks with, the requests it keeps in flight by default,
/// and the HTTP clients it owns (shut down by `close()`). A run opens only the store it checks, and reads
/// only that store's keys.
public struct StoreConnection: Sendable {
    let gateway: any StoreGateway
    let defaultConcurrency: Int
    let clients: [HTTPClient]

    public init(gateway: any StoreGateway, defaultConcurrency: Int, clients: [HTTPClient] = []) {
        self.gateway = gateway
        self.defaultConcurrency = defaultConcurrency
        self.clients = clients
    }

    func close() { for client in clients { client.shutdown() } }
}
