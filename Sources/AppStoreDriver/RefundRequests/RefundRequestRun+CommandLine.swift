public import Job

extension RefundRequestRun.Request {
    /// The request `clawback refund-requests answer` builds: the database of its context, and where to write
    /// the metrics (nil: the configuration's).
    public init(metricsFile: String?, context: CommandContext) {
        self.init(database: context.databaseConfiguration, metricsFile: metricsFile)
    }
}
