import Postgres

/// Tables of the clawback schema whose statistics no longer describe them: changed by more than a tenth of
/// their rows (and a thousand) since last analyzed. autovacuum analyzes them too, but only within its next
/// minute or so; a query planned before that sees the few rows the table had, and a plan that is right for a
/// few rows (an index scan of a whole run's entries per row, say) is quadratic for a hundred thousand.
enum StaleStatistics {
    /// Analyzes the tables named by `names` (a regular expression on their name in the clawback schema) that
    /// are stale, and returns them. A role that may not analyze one gets a warning from the server, not an error.
    static func refresh(tablesMatching names: String, on connection: DatabaseConnection) throws(PostgresError) -> [String] {
        let stale = try connection.query(
            """
            SELECT relname FROM pg_stat_user_tables
            WHERE schemaname = 'clawback' AND relname ~ \(names) AND n_mod_since_analyze > 1000 + n_live_tup / 10
            ORDER BY relname
            """
        ).rows.map { row throws(PostgresError) in try row.decode(String.self, at: 0) }
        for table in stale {
            try connection.execute("ANALYZE clawback.\(identifier: table)")
        }
        return stale
    }
}
