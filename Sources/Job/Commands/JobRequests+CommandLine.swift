public import Reconciliation
import Storage

extension MonthlyRun.Request {
    /// The request `clawback run` builds from its flags: what to check (the window, narrowed by bundles, a
    /// player, a transaction or a shard), how, and who started it from where (recorded with the run).
    public init(
        window: ReconciliationWindow, bundleIDs: [String], playerID: String?, transactionID: String?, shardIndex: Int, shardCount: Int,
        strategy: RunStrategy, dryRun: Bool, resumeRunID: Int64?, concurrency: Int?, batchSize: Int?, auditShare: Double, metricsFile: String?,
        reports: ReportChoices, triggeredBy: String, host: String, arguments: [String], context: CommandContext
    ) {
        self.init(
            selection: GrantSelection(
                window: window, bundleIDs: bundleIDs, playerID: playerID, transactionID: transactionID, shardIndex: shardIndex,
                shardCount: shardCount),
            strategy: strategy, dryRun: dryRun, resumeRunID: resumeRunID, concurrency: concurrency, batchSize: batchSize,
            auditShare: auditShare, metricsFile: metricsFile, reports: reports.options(context.configuration),
            origin: RunOrigin(triggeredBy: triggeredBy, host: host, arguments: arguments), database: context.databaseConfiguration)
    }
}
