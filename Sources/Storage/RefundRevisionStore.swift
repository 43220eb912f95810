public import Postgres

/// The refund-history strategy's stored revisions, per (bundle, environment, customer).
public enum RefundRevisionStore {
    public static func revisions(bundleIDs: [String], on connection: PostgresConnection) throws -> [String: String] {
        var result: [String: String] = [:]
        for row in try connection.query(
            """
            SELECT bundle_id || '|' || environment || '|' || customer_key, revision FROM clawback.refund_history_revisions
            WHERE cardinality(\(bundleIDs)::text[]) = 0 OR bundle_id = ANY(\(bundleIDs)::text[])
            """
        ).rows {
            result[try row.decode(String.self, at: 0)] = try row.decode(String.self, at: 1)
        }
        return result
    }

    /// Saves revisions keyed `bundle|environment|customer`, in one transaction.
    public static func save(_ revisions: [String: String], on connection: PostgresConnection) throws {
        guard !revisions.isEmpty else { return }
        try connection.withTransaction { connection in
            for (key, revision) in revisions {
                let parts = key.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
                guard parts.count == 3 else { continue }
                try connection.execute(
                    """
                    INSERT INTO clawback.refund_history_revisions (bundle_id, environment, customer_key, revision)
                    VALUES (\(parts[0]), \(parts[1]), \(parts[2]), \(revision))
                    ON CONFLICT (bundle_id, environment, customer_key) DO UPDATE SET revision = EXCLUDED.revision, updated_at = now()
                    """)
            }
        }
    }
}
