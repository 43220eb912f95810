import Postgres

/// The tail window's settings as the database keeps them in `clawback.settings`, where `record_grant`
/// (running inside the game's own transactions) reads them. Written from the configuration by `migrate`,
/// `run` and `prune`, so the SQL side and the job always agree.
public struct TailWindowSettings: Sendable, Equatable {
    public var acceptanceWindowDays: Int
    public var futureSkewSeconds: Int
    public var grantRetentionMonths: Int

    public init(acceptanceWindowDays: Int = 30, futureSkewSeconds: Int = 300, grantRetentionMonths: Int = 4) {
        self.acceptanceWindowDays = acceptanceWindowDays
        self.futureSkewSeconds = futureSkewSeconds
        self.grantRetentionMonths = grantRetentionMonths
    }

    /// Writes the settings; returns true when they changed.
    @discardableResult
    public func apply(on connection: DatabaseConnection) throws -> Bool {
        try connection.execute(
            """
            UPDATE clawback.settings
            SET acceptance_window = make_interval(days => \(acceptanceWindowDays)),
                future_skew = make_interval(secs => \(futureSkewSeconds)),
                retention = make_interval(months => \(grantRetentionMonths))
            WHERE (acceptance_window, future_skew, retention) IS DISTINCT FROM
                  (make_interval(days => \(acceptanceWindowDays)), make_interval(secs => \(futureSkewSeconds)),
                   make_interval(months => \(grantRetentionMonths)))
            """) > 0
    }

    /// Whether `clawback.settings` holds these values already.
    public func isApplied(on connection: DatabaseConnection) throws -> Bool {
        try connection.query(
            """
            SELECT acceptance_window = make_interval(days => \(acceptanceWindowDays))
               AND future_skew = make_interval(secs => \(futureSkewSeconds))
               AND retention = make_interval(months => \(grantRetentionMonths))
            FROM clawback.settings
            """
        ).first?.decode(Bool.self, at: 0) ?? false
    }
}
