public import Foundation
import Postgres

/// The monthly partitions of `clawback.grants`.
public enum GrantPartitions {
    /// A monthly partition, attached or left detached by an interrupted prune.
    public struct Partition: Sendable, Equatable {
        public enum State: String, Sendable {
            case attached
            /// `DETACH ... CONCURRENTLY` was interrupted: it needs FINALIZE before it can be dropped.
            case detachPending = "detach pending"
            /// Detached by a prune that stopped before dropping it.
            case detached
        }

        public var name: String
        /// [start, end): the purchase dates it holds.
        public var start: Date
        public var end: Date
        public var state: State
        public var bytes: Int64
    }

    /// Makes sure partitions exist from the start of retention up to and including two months ahead, so
    /// the grant path never writes into the default partition. Returns how many were created. Creating a
    /// partition locks the grants table, so this waits only briefly for it (see `ShortLock`).
    /// `asOf` replaces the database's clock (tests simulate months passing).
    @discardableResult
    public static func ensureAhead(on connection: DatabaseConnection, asOf: Date? = nil, lock: ShortLock = ShortLock()) throws -> Int {
        try lock.run("creating grant partitions", on: connection) { connection in
            try connection.query(
                """
                SELECT clawback.ensure_grant_partitions(
                    coalesce(\(asOf)::timestamptz, now()) - (SELECT retention FROM clawback.settings),
                    date_trunc('month', coalesce(\(asOf)::timestamptz, now()) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '3 months')
                """
            ).first?.decode(Int.self, at: 0) ?? 0
        }
    }

    /// Rows in the default partition: grants whose month has no partition (imported from long ago, or
    /// written when partitions were not created ahead). Should be 0; reported as a warning and a metric.
    public static func defaultPartitionRows(on connection: DatabaseConnection) throws -> Int {
        try connection.query("SELECT count(*) FROM clawback.grants_default").first?.decode(Int.self, at: 0) ?? 0
    }

    /// Analyzes the grant partitions that changed by more than a tenth (and a thousand rows) since their
    /// statistics were last gathered, as autovacuum would, only sooner: a run right after a bulk load
    /// otherwise finds a few rows estimated where there are a million, and PostgreSQL plans each page as
    /// "read and sort every grant after the cursor", which makes a run quadratic in its size. Returns the
    /// partitions analyzed. A role that may not analyze them gets a warning from the server, not an error.
    @discardableResult
    public static func refreshStaleStatistics(on connection: DatabaseConnection) throws -> [String] {
        try StaleStatistics.refresh(tablesMatching: "^grants_([0-9]{4}_(0[1-9]|1[0-2])|default)$", on: connection)
    }

    /// Whether the grants of `date`'s month (UTC) are kept: its partition is attached. Pruning drops whole
    /// months, so a purchase of a kept month without a grant was not granted.
    public static func holdsMonth(of date: Date, on connection: DatabaseConnection) throws -> Bool {
        try connection.query(
            """
            SELECT EXISTS (
                SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'clawback.grants'::regclass
                  AND c.relname = 'grants_' || to_char(\(date)::timestamptz AT TIME ZONE 'UTC', 'YYYY_MM'))
            """
        ).first?.decode(Bool.self, at: 0) ?? false
    }

    /// Every monthly partition (named grants_YYYY_MM by `ensure_grant_partitions`), oldest first, with
    /// those an interrupted prune left detached.
    public static func list(on connection: DatabaseConnection) throws -> [Partition] {
        try connection.query(
            """
            SELECT c.relname,
                make_timestamptz(substr(c.relname, 8, 4)::int, substr(c.relname, 13, 2)::int, 1, 0, 0, 0, 'UTC') AS start,
                make_timestamptz(substr(c.relname, 8, 4)::int, substr(c.relname, 13, 2)::int, 1, 0, 0, 0, 'UTC') + interval '1 month',
                CASE WHEN i.inhrelid IS NULL THEN 'detached' WHEN i.inhdetachpending THEN 'detach pending' ELSE 'attached' END,
                pg_total_relation_size(c.oid)
            FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'clawback'
            LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND i.inhparent = 'clawback.grants'::regclass
            WHERE c.relkind = 'r' AND c.relname ~ '^grants_[0-9]{4}_(0[1-9]|1[0-2])$'
            ORDER BY start
            """
        ).rows.map { row throws(PostgresError) in
            Partition(
                name: try row.decode(String.self, at: 0), start: try row.decode(Date.self, at: 1), end: try row.decode(Date.self, at: 2),
                state: try row.decode(Partition.State.self, at: 3), bytes: try row.decode(Int64.self, at: 4))
        }
    }
}
