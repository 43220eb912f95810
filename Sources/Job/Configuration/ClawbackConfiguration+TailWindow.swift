public import Storage

extension ClawbackConfiguration {
    /// The settings `clawback.record_grant` and pruning read from the database, from this configuration.
    public var tailWindowSettings: TailWindowSettings {
        TailWindowSettings(
            acceptanceWindowDays: tailWindow.acceptanceWindowDays, futureSkewSeconds: tailWindow.futureSkewSeconds,
            grantRetentionMonths: tailWindow.grantRetention(windowMonths: run.windowMonths))
    }
}
