public import Foundation
import Postgres
public import Reconciliation

/// What a run covers and how: its identity for locking and resuming.
public struct RunScope: Sendable, Equatable {
    public var selection: GrantSelection
    public var strategy: RunStrategy
    public var dryRun: Bool

    /// The selection reads the strategy's store, whatever it was built with: a run asks one store.
    public init(selection: GrantSelection, strategy: RunStrategy, dryRun: Bool) {
        self.selection = selection
        self.selection.store = strategy.store
        self.strategy = strategy
        self.dryRun = dryRun
    }

    /// A canonical text: two invocations over the same bundles, window, narrowing, shard and strategy get
    /// the same key, whatever order the flags came in.
    public var key: String {
        let selection = self.selection
        return [
            "window=\(selection.window.start.timeIntervalSince1970)..\(selection.window.end.timeIntervalSince1970)",
            "bundles=\(selection.bundleIDs.joined(separator: ","))", "player=\(selection.playerID ?? "")",
            "transaction=\(selection.transactionID ?? "")", "shard=\(selection.shardIndex)/\(selection.shardCount)",
            "strategy=\(strategy.rawValue)", "dry=\(dryRun ? 1 : 0)",
        ].joined(separator: "|")
    }

    /// The advisory lock that makes runs over this scope single-flight.
    public var lockKey: LockKey { LockKey(name: "clawback.run:" + key) }
}

/// One row of `clawback.runs`.
public struct RunRecord: Sendable, Equatable {
    public var runID: Int64
    public var scopeKey: String
    public var windowStart: Date
    public var windowEnd: Date
    public var bundleIDs: [String]
    public var shardIndex: Int
    public var shardCount: Int
    public var strategy: RunStrategy
    public var dryRun: Bool
    public var triggeredBy: String
    public var host: String
    public var status: RunStatus
    public var startedAt: Date
    public var heartbeatAt: Date
    public var finishedAt: Date?
    public var attempts: Int
    /// JSON text of the counters.
    public var counters: String
    public var error: String?
    /// When its reports were written (and its prune done) after it succeeded; nil while that is pending.
    public var finalizedAt: Date?
    /// Narrowing of an ad-hoc run (nil: the whole selection).
    public var playerID: String?
    public var transactionID: String?
}

/// Who started a run, for the runs table and the lock message.
public struct RunOrigin: Sendable, Equatable {
    public var triggeredBy: String
    public var host: String
    public var arguments: [String]

    public init(triggeredBy: String, host: String, arguments: [String]) {
        self.triggeredBy = triggeredBy
        self.host = host
        self.arguments = arguments
    }
}

/// Reads and writes `clawback.runs`.
public enum RunStore {
    static let columns = """
        run_id, scope_key, window_start, window_end, bundle_ids, shard_index, shard_count, strategy, dry_run, triggered_by,
        host, status, started_at, heartbeat_at, finished_at, attempts, counters::text, error, finalized_at, player_id, transaction_id
        """

    /// The latest run of this scope if it is not done: killed, interrupted, failed, left with unverified
    /// grants, or succeeded without its reports (the process died after the commit). The next invocation
    /// continues it.
    public static func resumable(_ scope: RunScope, on connection: DatabaseConnection) throws -> RunRecord? {
        guard
            let latest = try connection.query(
                "SELECT \(unescaped: columns) FROM clawback.runs WHERE scope_key = \(scope.key) ORDER BY run_id DESC LIMIT 1"
            ).first.map(record)
        else { return nil }
        return latest.status == .succeeded && latest.finalizedAt != nil ? nil : latest
    }

    public static func create(_ scope: RunScope, origin: RunOrigin, on connection: DatabaseConnection) throws -> RunRecord {
        let selection = scope.selection
        let row = try connection.query(
            """
            INSERT INTO clawback.runs (scope_key, window_start, window_end, bundle_ids, player_id, transaction_id, shard_index,
                shard_count, strategy, dry_run, triggered_by, host, arguments)
            VALUES (\(scope.key), \(selection.window.start), \(selection.window.end), \(selection.bundleIDs)::text[],
                \(selection.playerID), \(selection.transactionID), \(selection.shardIndex), \(selection.shardCount), \(scope.strategy.rawValue),
                \(scope.dryRun), \(origin.triggeredBy), \(origin.host), \(origin.arguments)::text[])
            RETURNING \(unescaped: columns)
            """)
        guard let first = row.first else { throw PostgresError(.server, operation: "create run", message: "INSERT returned no row") }
        return try record(first)
    }

    /// Marks a run running again for another attempt.
    public static func resume(_ runID: Int64, on connection: DatabaseConnection) throws -> RunRecord {
        let row = try connection.query(
            """
            UPDATE clawback.runs SET status = 'running', attempts = attempts + 1, heartbeat_at = now(), finished_at = NULL, error = NULL
            WHERE run_id = \(runID) RETURNING \(unescaped: columns)
            """)
        guard let first = row.first else { throw PostgresError(.server, operation: "resume run", message: "no run \(runID)") }
        return try record(first)
    }

    public static func find(_ runID: Int64, on connection: DatabaseConnection) throws -> RunRecord? {
        try connection.query("SELECT \(unescaped: columns) FROM clawback.runs WHERE run_id = \(runID)").first.map(record)
    }

    public static func heartbeat(_ runID: Int64, counters: String, on connection: DatabaseConnection) throws {
        try connection.execute(
            "UPDATE clawback.runs SET heartbeat_at = now(), counters = \(counters)::jsonb WHERE run_id = \(runID)")
    }

    /// Ends the run's attempt with `status`, only while the scope lock of `fence` is still this run's, in the
    /// same transaction: a run that lost its lock (another may have resumed the scope and own this row now)
    /// writes nothing and gets `ScopeLockLost`, on its failure paths as on its success.
    public static func finish(
        _ runID: Int64, status: RunStatus, counters: RunCounters, error: String?, fence: LockFence, on connection: DatabaseConnection
    ) throws {
        try connection.withTransaction { connection in
            guard try connection.holds(fence) else { throw ScopeLockLost(runID: runID) }
            try connection.execute(
                """
                UPDATE clawback.runs SET status = \(status.rawValue), counters = \(counters.json)::jsonb, error = \(error), heartbeat_at = now(),
                    finished_at = now()
                WHERE run_id = \(runID)
                """)
        }
    }

    /// The run's reports are written (and its prune done): the next invocation starts a new run.
    public static func markFinalized(_ runID: Int64, on connection: DatabaseConnection) throws {
        try connection.execute("UPDATE clawback.runs SET finalized_at = now() WHERE run_id = \(runID) AND status = 'succeeded'")
    }

    public static func recent(limit: Int, on connection: DatabaseConnection) throws -> [RunRecord] {
        try connection.query("SELECT \(unescaped: columns) FROM clawback.runs ORDER BY run_id DESC LIMIT \(limit)").rows.map(record)
    }

    /// Verdict counts of a run, from its checks and check pages (the authority, whatever the in-memory
    /// counters said).
    public static func verdictCounts(_ runID: Int64, on connection: DatabaseConnection) throws -> [Verdict: Int] {
        var counts: [Verdict: Int] = [:]
        for row in try connection.query(
            """
            SELECT verdict, sum(n)::bigint FROM (
                SELECT verdict, count(*) AS n FROM clawback.checks WHERE run_id = \(runID) GROUP BY verdict
                UNION ALL
                SELECT verdict, sum(grants) FROM clawback.check_pages WHERE run_id = \(runID) GROUP BY verdict
            ) counted GROUP BY verdict
            """
        ).rows {
            counts[try row.decode(Verdict.self, at: 0)] = try row.decode(Int.self, at: 1)
        }
        return counts
    }

    /// When the latest run of `strategy` over the same window, apps and shard as `selection` that succeeded
    /// started (dry and narrowed runs aside): where the daily run reads the refund feed from. A run that
    /// failed or is incomplete does not count, so what it could not finish is read again; a run of another
    /// window (last month's daily runs, a staff run over one month) checked other grants, so the first daily
    /// run of a window reads the window's whole feed.
    public static func lastSucceededStart(
        of strategy: RunStrategy, like selection: GrantSelection, on connection: DatabaseConnection
    ) throws -> Date? {
        try connection.query(
            """
            SELECT max(started_at) FROM clawback.runs
            WHERE strategy = \(strategy.rawValue) AND status = 'succeeded' AND NOT dry_run
              AND window_start = \(selection.window.start) AND window_end = \(selection.window.end)
              AND bundle_ids = \(selection.bundleIDs)::text[] AND shard_index = \(selection.shardIndex)
              AND shard_count = \(selection.shardCount) AND player_id IS NULL AND transaction_id IS NULL
            """
        ).first?.decode(Date?.self, at: 0)
    }

    /// The purchases that `strategy`'s whole-window runs (no dry run, no player or transaction) of each of the
    /// `windows` windows before `before` left unverified, every time for the same reason: purchase →
    /// that reason. What asking again has not settled for so long is a person's to look at.
    public static func persistentlyUnverified(
        strategy: RunStrategy, windows: Int, before: Date, on connection: DatabaseConnection
    ) throws -> [String: String] {
        var found: [String: String] = [:]
        for row in try connection.query(
            """
            WITH recent_windows AS (
                SELECT window_start FROM clawback.runs
                WHERE strategy = \(strategy.rawValue) AND NOT dry_run AND player_id IS NULL AND transaction_id IS NULL
                  AND window_start < \(before)
                GROUP BY window_start ORDER BY window_start DESC LIMIT \(windows)
            ), recent AS (
                SELECT r.run_id, r.window_start FROM clawback.runs r JOIN recent_windows USING (window_start)
                WHERE r.strategy = \(strategy.rawValue) AND NOT r.dry_run AND r.player_id IS NULL AND r.transaction_id IS NULL
            )
            SELECT c.transaction_id, min(c.detail)
            FROM clawback.checks c JOIN recent ON recent.run_id = c.run_id
            WHERE c.verdict = 'unverified' AND c.detail IS NOT NULL
            GROUP BY c.transaction_id
            HAVING count(DISTINCT recent.window_start) = \(windows) AND count(DISTINCT c.detail) = 1
            """
        ).rows {
            found[try row.decode(String.self, at: 0)] = try row.decode(String.self, at: 1)
        }
        return found
    }

    /// Grants a run decided (a verified answer, or a review), in checks and check pages: what an earlier
    /// attempt already decided.
    public static func decidedChecks(_ runID: Int64, on connection: DatabaseConnection) throws -> Int {
        try connection.query(
            """
            SELECT (SELECT count(*) FROM clawback.checks WHERE run_id = \(runID) AND verdict <> 'unverified')
                 + (SELECT coalesce(sum(grants), 0) FROM clawback.check_pages WHERE run_id = \(runID))
            """
        ).first?.decode(Int.self, at: 0) ?? 0
    }

    /// Who holds a scope's lock, as a person reads it: "run 12 started by cron on host-a at …, last heartbeat …;
    /// database session pid 4711 from 10.0.0.5 (clawback)".
    public static func describeHolder(of scope: RunScope, on connection: DatabaseConnection) throws -> String {
        let holder = try connection.lockHolder(scope.lockKey)
        let run = try connection.query(
            """
            SELECT run_id, triggered_by, host, started_at, heartbeat_at FROM clawback.runs
            WHERE scope_key = \(scope.key) AND status = 'running' ORDER BY run_id DESC LIMIT 1
            """
        ).first
        var text = ""
        if let run {
            text =
                "run \(try run.decode(Int64.self, at: 0)) started by \(try run.decode(String.self, at: 1)) on "
                + "\(try run.decode(String.self, at: 2)) at \(PostgresTimestamp.format(try run.decode(Date.self, at: 3))), "
                + "last heartbeat \(PostgresTimestamp.format(try run.decode(Date.self, at: 4)))"
        }
        if let holder {
            text +=
                (text.isEmpty ? "" : "; ") + "database session pid \(holder.pid)"
                + (holder.clientAddress.map { " from \($0)" } ?? "") + " (\(holder.applicationName))"
        }
        return text.isEmpty ? "unknown holder" : text
    }

    /// A run with the number of checks it holds (all attempts).
    public struct CheckedRun: Sendable {
        public var run: RunRecord
        public var checks: Int
    }

    /// How many checks the run `r` holds, in the checks table and its check pages.
    static let checksOfRun: PostgresQuery = """
        ((SELECT count(*) FROM clawback.checks c WHERE c.run_id = r.run_id)
         + (SELECT coalesce(sum(p.grants), 0) FROM clawback.check_pages p WHERE p.run_id = r.run_id))
        """

    /// One run, or every run of exactly `window` but dry runs, with their checks, in run order: what a report covers.
    public static func covered(run runID: Int64?, window: ReconciliationWindow?, on connection: DatabaseConnection) throws -> [CheckedRun] {
        let filter: PostgresQuery =
            if let runID { "run_id = \(runID)" } else if let window {
                "window_start = \(window.start) AND window_end = \(window.end) AND NOT dry_run"
            } else { "false" }
        return try connection.query(
            """
            SELECT \(unescaped: columns), \(fragment: checksOfRun)
            FROM clawback.runs r WHERE \(fragment: filter) ORDER BY run_id
            """
        ).rows.map { row in CheckedRun(run: try record(row), checks: try row.decode(Int.self, at: 21)) }
    }

    /// The figures a run stored, or an error naming the run when they cannot be read.
    public static func counters(of run: RunRecord) throws(CountersUnreadable) -> RunCounters {
        do {
            return try RunCounters.decode(json: run.counters)
        } catch {
            throw CountersUnreadable(runID: run.runID, reason: "\(error)")
        }
    }

    /// A run's stored figures are not JSON this version reads: bad data (a hand-edited row), not the database.
    public struct CountersUnreadable: Error, Sendable, CustomStringConvertible {
        public let runID: Int64
        public let reason: String
        public var description: String { "run \(runID)'s stored counters cannot be read: \(reason)" }
    }

    /// A stored strategy; runs recorded before migration 0004 under `refund-history` keep that name and read
    /// as `customer-history`, as the command line does.
    static func strategy(_ text: String) throws -> RunStrategy {
        guard let strategy = RunStrategy(argument: text) else {
            throw PostgresError(.decoding, operation: "decode", message: "column \"strategy\" holds an unknown strategy \(text)")
        }
        return strategy
    }

    static func status(_ text: String) throws -> RunStatus {
        guard let status = RunStatus(rawValue: text) else {
            throw PostgresError(.server, operation: "read run", message: "a run has the unknown status \(text)")
        }
        return status
    }

    static func record(_ row: PostgresRow) throws -> RunRecord {
        RunRecord(
            runID: try row.decode(Int64.self, at: 0), scopeKey: try row.decode(String.self, at: 1),
            windowStart: try row.decode(Date.self, at: 2), windowEnd: try row.decode(Date.self, at: 3),
            bundleIDs: try row.decode([String].self, at: 4), shardIndex: try row.decode(Int.self, at: 5),
            shardCount: try row.decode(Int.self, at: 6), strategy: try strategy(row.decode(String.self, at: 7)),
            dryRun: try row.decode(Bool.self, at: 8), triggeredBy: try row.decode(String.self, at: 9),
            host: try row.decode(String.self, at: 10), status: try status(row.decode(String.self, at: 11)),
            startedAt: try row.decode(Date.self, at: 12), heartbeatAt: try row.decode(Date.self, at: 13),
            finishedAt: try row.decode(Date?.self, at: 14), attempts: try row.decode(Int.self, at: 15),
            counters: try row.decode(String.self, at: 16), error: try row.decode(String?.self, at: 17),
            finalizedAt: try row.decode(Date?.self, at: 18), playerID: try row.decode(String?.self, at: 19),
            transactionID: try row.decode(String?.self, at: 20))
    }
}
