import CrashPoints
public import Foundation
import Postgres
import Reconciliation

/// `clawback prune`: the tail window's maintenance. Drops whole grant partitions older than retention
/// (the grant path refuses purchases that old, so forgetting them opens no replay hole), never one a run
/// that has not finished still needs; and deletes runs, checks and acknowledged ledger entries older than
/// the record retention, with the stores' own records (`StoreRecords`) as old. Resumable: a partition detached by an interrupted prune is dropped by the next.
public struct GrantPruner: Sendable {
    public enum Action: Sendable, Equatable {
        /// Older than retention: detached, then dropped (or, in a dry run, would be).
        case drop
        /// Left detached (or pending detach) by an interrupted prune: dropped now.
        case finishDrop
        case keepWithinRetention
        /// Older than retention, but a run that has not finished covers it: kept until it is.
        case keepForRuns([Int64])
        /// Detached, yet not older than retention: someone else detached it; left alone.
        case keepDetachedWithinRetention
    }

    public struct PartitionOutcome: Sendable, Equatable {
        public var partition: GrantPartitions.Partition
        public var action: Action
        /// Rows that went (or would go) with a dropped partition.
        public var rows: Int?
    }

    public struct Outcome: Sendable, Equatable {
        public var dryRun: Bool
        /// Partitions ending on or before this are older than retention.
        public var grantCutoff: Date
        public var recordCutoff: Date
        public var partitions: [PartitionOutcome] = []
        public var partitionsCreated = 0
        public var ledgerEntries = 0
        public var runs = 0
        public var checks = 0
        /// The stores' own records last touched before the record cutoff, in the order they were given.
        public var storeRecords: [StoreRecords.Pruned] = []
        public var defaultPartitionRows = 0

        public var dropped: [PartitionOutcome] { partitions.filter { $0.action == .drop || $0.action == .finishDrop } }
    }

    public enum PruneError: Error, Sendable, CustomStringConvertible {
        case busy(LockHolder?)
        /// Other transactions kept the grants table locked past every short lock timeout.
        case grantsTableBusy(ShortLock.Busy)
        case database(DatabaseError)
        /// A failure that is not the database's (a bug).
        case unexpected(String)

        /// `error` as a prune's failure: the database's, classified (a transaction's whose rollback failed too
        /// included, as a dropped session's), or unexpected.
        public init(_ error: any Error) { self = DatabaseError(error).map { .database($0) } ?? .unexpected("\(error)") }

        public var description: String {
            switch self {
            case .busy(let holder):
                "another prune is running" + (holder.map { " (PostgreSQL session pid \($0.pid), \($0.applicationName))" } ?? "")
            case .grantsTableBusy(let busy): "\(busy)"
            case .database(let error): "\(error)"
            case .unexpected(let what): what
            }
        }
    }

    public static let lockKey = LockKey(name: "clawback.prune")

    public var recordRetentionYears: Int
    public var dryRun: Bool
    /// The stores' own records pruned with the others (each store's driver names its own).
    public var storeRecords: [StoreRecords]
    /// How long creating or detaching a partition may wait for the grants table's lock.
    public var lock = ShortLock()
    /// Replaces the database's clock (tests simulate months passing); nil: now().
    public var asOf: Date?

    public init(recordRetentionYears: Int = 7, dryRun: Bool = false, storeRecords: [StoreRecords] = [], asOf: Date? = nil) {
        self.recordRetentionYears = recordRetentionYears
        self.dryRun = dryRun
        self.storeRecords = storeRecords
        self.asOf = asOf
    }

    /// Prunes. The settings (retention) must already be applied; partitions ahead are created too, unless
    /// this is a dry run, which changes nothing at all.
    public func prune(on connection: DatabaseConnection) throws(PruneError) -> Outcome {
        let result: AdvisoryLockOutcome<Outcome>
        do {
            result = try connection.withAdvisoryLock(Self.lockKey) { try pruneHoldingLock(on: connection) }
        } catch let error as PruneError {
            throw error
        } catch let error as ShortLock.Busy {
            throw .grantsTableBusy(error)
        } catch {
            throw PruneError(error)
        }
        switch result {
        case .acquired(let outcome): return outcome
        case .busy: throw .busy(try? connection.lockHolder(Self.lockKey))
        }
    }

    private func pruneHoldingLock(on connection: DatabaseConnection) throws -> Outcome {
        let cutoffs = try connection.query(
            """
            SELECT coalesce(\(asOf)::timestamptz, now()) - retention,
                   coalesce(\(asOf)::timestamptz, now()) - make_interval(years => \(recordRetentionYears))
            FROM clawback.settings
            """
        ).first
        var outcome = Outcome(
            dryRun: dryRun, grantCutoff: try cutoffs?.decode(Date.self, at: 0) ?? Date(),
            recordCutoff: try cutoffs?.decode(Date.self, at: 1) ?? Date())
        if !dryRun { outcome.partitionsCreated = try GrantPartitions.ensureAhead(on: connection, asOf: asOf, lock: lock) }

        for partition in try GrantPartitions.list(on: connection) {
            let action = try decide(partition, cutoff: outcome.grantCutoff, on: connection)
            var entry = PartitionOutcome(partition: partition, action: action)
            if action == .drop || action == .finishDrop {
                entry.rows = try connection.query("SELECT count(*) FROM clawback.\(identifier: partition.name)").first?.decode(Int.self, at: 0)
                if !dryRun { try drop(partition, on: connection) }
            }
            outcome.partitions.append(entry)
        }
        try pruneRecords(before: outcome.recordCutoff, into: &outcome, on: connection)
        outcome.defaultPartitionRows = try GrantPartitions.defaultPartitionRows(on: connection)
        return outcome
    }

    private func decide(_ partition: GrantPartitions.Partition, cutoff: Date, on connection: DatabaseConnection) throws -> Action {
        guard partition.end <= cutoff else {
            return partition.state == .attached ? .keepWithinRetention : .keepDetachedWithinRetention
        }
        // A run that has not finished will be resumed over its window: its grants must still be there. Not a
        // daily run's: once its window leaves the daily list no daily run resumes it, and the monthly run, not
        // the daily one, is what covers a window (holding partitions for it would hold them for ever).
        let daily = StoreCatalog.strategies.filter(\.isDaily).map(\.rawValue)
        let runs = try connection.query(
            """
            SELECT run_id FROM clawback.runs
            WHERE status <> 'succeeded' AND window_start < \(partition.end) AND window_end > \(partition.start)
              AND strategy <> ALL(\(daily)::text[])
            ORDER BY run_id
            """
        ).rows.map { try $0.decode(Int64.self, at: 0) }
        if !runs.isEmpty { return .keepForRuns(runs) }
        return partition.state == .attached ? .drop : .finishDrop
    }

    /// Detach (a catalog change, under a short lock timeout so the grant path is never held up for long;
    /// see `ShortLock`), then drop. Two steps, each committed: an interruption between them leaves a detached
    /// table that the next prune drops.
    private func drop(_ partition: GrantPartitions.Partition, on connection: DatabaseConnection) throws {
        switch partition.state {
        case .detached: break
        case .attached, .detachPending:
            let finalize = partition.state == .detachPending ? " FINALIZE" : ""
            _ = try lock.run("detaching \(partition.name)", on: connection) { connection in
                try connection.execute("ALTER TABLE clawback.grants DETACH PARTITION clawback.\(identifier: partition.name)\(unescaped: finalize)")
            }
            CrashPoint.reached("prune.after-detach")
        }
        try connection.execute("DROP TABLE clawback.\(identifier: partition.name)")
        CrashPoint.reached("prune.after-drop")
    }

    /// Runs, their checks and acknowledged ledger entries older than the record retention. A transaction's
    /// entries go together or not at all: while any of them is unacknowledged (no acknowledgement) or younger (the game has not
    /// applied it; a reversal needs to know what its take-backs took), they all stay, and so does any run a
    /// kept entry belongs to.
    private func pruneRecords(before cutoff: Date, into outcome: inout Outcome, on connection: DatabaseConnection) throws {
        let ledgerFilter: PostgresQuery = """
            NOT EXISTS (SELECT 1 FROM clawback.ledger o WHERE o.transaction_id = l.transaction_id
                        AND NOT (o.created_at < \(cutoff)
                                 AND EXISTS (SELECT 1 FROM clawback.ledger_acknowledgements a WHERE a.entry_id = o.entry_id)))
            """
        let runFilter: PostgresQuery = """
            r.heartbeat_at < \(cutoff) AND r.status <> 'running'
            AND NOT EXISTS (SELECT 1 FROM clawback.ledger l WHERE l.run_id = r.run_id AND NOT (\(fragment: ledgerFilter)))
            """
        if dryRun {
            outcome.ledgerEntries =
                try connection.query("SELECT count(*) FROM clawback.ledger l WHERE \(fragment: ledgerFilter)").first?
                .decode(Int.self, at: 0) ?? 0
            let runs = try connection.query(
                """
                SELECT count(*), coalesce(sum(\(fragment: RunStore.checksOfRun)), 0)
                FROM clawback.runs r WHERE \(fragment: runFilter)
                """
            ).first
            outcome.runs = try runs?.decode(Int.self, at: 0) ?? 0
            outcome.checks = try runs?.decode(Int.self, at: 1) ?? 0
            for records in storeRecords {
                let rows = try connection.query("SELECT count(*) FROM \(unescaped: records.table) WHERE \(fragment: Self.filter(records, cutoff))")
                outcome.storeRecords.append(.init(label: records.label, rows: try rows.first?.decode(Int.self, at: 0) ?? 0))
            }
            return
        }
        try connection.withTransaction { connection in
            // The ledger's guard lets rows go only with this set, for this transaction only.
            try connection.execute("SET LOCAL clawback.ledger_retention_prune = 'on'")
            outcome.ledgerEntries = try connection.execute("DELETE FROM clawback.ledger l WHERE \(fragment: ledgerFilter)")
            outcome.checks = try connection.execute(
                "DELETE FROM clawback.checks c USING clawback.runs r WHERE c.run_id = r.run_id AND \(fragment: runFilter)")
            // A check page holds many grants' checks: counted as the checks it held.
            outcome.checks +=
                try connection.query(
                    """
                    WITH deleted AS (
                        DELETE FROM clawback.check_pages p USING clawback.runs r WHERE p.run_id = r.run_id AND \(fragment: runFilter)
                        RETURNING p.grants
                    )
                    SELECT coalesce(sum(grants), 0) FROM deleted
                    """
                ).first?.decode(Int.self, at: 0) ?? 0
            outcome.runs = try connection.execute("DELETE FROM clawback.runs r WHERE \(fragment: runFilter)")
            for records in storeRecords {
                let rows = try connection.execute("DELETE FROM \(unescaped: records.table) WHERE \(fragment: Self.filter(records, cutoff))")
                outcome.storeRecords.append(.init(label: records.label, rows: rows))
            }
        }
    }

    /// A store's records last touched before `cutoff` and not kept for work still to do.
    static func filter(_ records: StoreRecords, _ cutoff: Date) -> PostgresQuery {
        let kept: PostgresQuery = records.keepWhile.map { " AND NOT (\(unescaped: $0))" } ?? ""
        return "\(unescaped: records.lastTouched) < \(cutoff)\(fragment: kept)"
    }
}
