import Foundation
public import HTTP
public import Job
public import Logging
public import Reconciliation
public import Reports
public import Storage
import Stripe

/// Stripe's driver: the web shops of `stripe.shops`, a client over the restricted key, and the payments
/// gateway. Registered once, by the executable; nothing of the shared runs names it.
public struct StripeDriver: StoreDriver {
    public init() {}

    public var storeDescription: StoreDescription { StripeStore.description }
    public var recordsKept: [StoreRecords] { [StripeDisputeStore.records, StripeFraudWarningStore.records] }

    public var configurationKeys: [String] { ["stripe"] }

    public func readSettings(_ file: ConfigurationSection) -> (any StoreSettings)? { StripeSettings.read(file.section("stripe")) }

    /// The restricted key travels only over TLS, unless to the simulator on this machine.
    public func finalProblems(_ configuration: ClawbackConfiguration) -> [ConfigurationError] {
        Self.settings(configuration).flatMap { ClawbackConfiguration.transportProblem(field: "stripe.api_url", $0.apiURL) }.map { [$0] } ?? []
    }

    static func settings(_ configuration: ClawbackConfiguration) -> StripeSettings? {
        configuration.settings(of: StripeStore.store) as? StripeSettings
    }

    public func apps(in configuration: ClawbackConfiguration) -> [String] { Self.settings(configuration)?.shops ?? [] }

    /// The web shop's disputes and early fraud warnings, in every report of a studio with a web shop.
    public func reportTables(_ configuration: ClawbackConfiguration) -> [StoreReportTable] {
        Self.settings(configuration) == nil ? [] : [StripeDisputeReport.table, StripeFraudWarningReport.table]
    }

    public func open(_ run: StoreRun, configuration: ClawbackConfiguration, logger: Logger) throws(StoreOpeningFailure) -> StoreConnection {
        guard let settings = Self.settings(configuration), let keyFile = settings.apiKeyFile else {
            throw .configuration(.asked("--strategy \(run.strategy.rawValue) needs Stripe: add a stripe section with api_key_file"))
        }
        guard !settings.shops.isEmpty else { throw .configuration(.asked("--strategy \(run.strategy.rawValue) needs a web shop under stripe.shops")) }
        let key: String
        do {
            key = try SecretFile.text(keyFile, field: "stripe.api_key_file").trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            throw .configuration(.invalid(error))
        }
        let http: HTTPClient
        do {
            http = try HTTPClients.start(for: "Stripe", timeout: .milliseconds(Int64(settings.timeoutSeconds * 1000)), maxConcurrentRequests: 8)
        } catch {
            throw .unavailable(Unavailable(cause: error))
        }
        let client = StripeClient(key: key, baseURL: settings.apiURL, http: http, requestsPerSecond: settings.requestsPerSecond)
        let warnings = settings.earlyFraudWarnings == .review
        let gateway: any StoreGateway =
            run.strategy == StripeStore.events
            ? StripeEventsGateway(client: client, shops: settings.shops, reviewWarnings: warnings, logger: logger)
            : StripePaymentsGateway(client: client, shops: Set(settings.shops), reviewWarnings: warnings)
        return StoreConnection(gateway: gateway, defaultConcurrency: 4, clients: [http])
    }

    public func checkConfiguration(
        _ configuration: ClawbackConfiguration, http: HTTPClient, database: DatabaseConfiguration, logger: Logger
    ) async -> [ConfigurationCheck.Line] {
        guard let settings = Self.settings(configuration) else { return [] }
        return await StripeConfigurationCheck.lines(settings, http: http)
    }

    public func metricsSeries(of strategy: RunStrategy) -> MetricsFile.Series {
        strategy.isDaily
            ? MetricsFile.Series(prefix: "clawback_stripe_daily_", source: "stripe_daily_run", api: "Stripe API")
            : MetricsFile.Series(prefix: "clawback_stripe_", source: "stripe_run", api: "Stripe API")
    }
}
