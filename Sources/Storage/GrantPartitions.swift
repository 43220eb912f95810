public import Postgres

/// The monthly partitions of `clawback.grants`.
public enum GrantPartitions {
    /// Makes sure partitions exist from the start of retention up to and including two months ahead, so
    /// the grant path never writes into the default partition. Returns how many were created.
    @discardableResult
    public static func ensureAhead(on connection: PostgresConnection) throws(PostgresError) -> Int {
        try connection.query(
            """
            SELECT clawback.ensure_grant_partitions(
                now() - (SELECT retention FROM clawback.settings),
                date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '3 months')
            """
        ).first?.decode(Int.self, at: 0) ?? 0
    }
}
