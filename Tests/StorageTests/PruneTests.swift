import Foundation
import Locking
import Postgres
import Storage
import TestSupport
import Testing

/// The tail window: partitions older than retention go, nothing a run or the grant path still needs does.
@Suite("Pruning the tail window")
struct PruneTests {
    static var utc: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        return calendar
    }

    static func monthStart(_ date: Date, plus months: Int = 0) -> Date {
        guard let start = utc.dateInterval(of: .month, for: date)?.start, let moved = utc.date(byAdding: .month, value: months, to: start)
        else { preconditionFailure("the Gregorian calendar has months") }
        return moved
    }

    func withMigratedDatabase(_ body: (PostgresConnection) throws -> Void) throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            try body(connection)
        }
    }

    /// Writes grants straight into the table, as an import does (record_grant would refuse old purchases).
    func insertGrants(_ connection: PostgresConnection, month: Date, count: Int, prefix: String) throws {
        try connection.query("SELECT clawback.ensure_grant_partitions(\(month), \(Self.monthStart(month, plus: 1)))")
        for index in 0..<count {
            let purchased = month.addingTimeInterval(Double(index % 13) * 86_400 + 3600)
            try connection.execute(
                """
                INSERT INTO clawback.grants (transaction_id, original_transaction_id, bundle_id, product_id, environment, player_id,
                    units_granted, purchased_at)
                VALUES (\("\(prefix)-\(index)"), \("\(prefix)-\(index)"), 'com.studio.game', 'gems_600', 'Production', 'p', 600, \(purchased))
                """)
        }
    }

    func count(_ connection: PostgresConnection, _ table: String = "clawback.grants") throws -> Int {
        try connection.query("SELECT count(*) FROM \(unescaped: table)").first?.decode(Int.self, at: 0) ?? -1
    }

    @Test("partitions created from eight sessions at once (shards starting together): every call succeeds, each month is created once")
    func concurrentPartitionCreation() throws {
        try TestPostgres.withScratchDatabase { database in
            let setup = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: setup.storage)
            let ahead = Self.monthStart(Date(), plus: 14)
            /// One connection per worker, each touched by its worker only.
            struct Sessions: @unchecked Sendable { let all: [PostgresConnection] }
            let connections = Sessions(all: try (0..<8).map { _ in try TestPostgres.connect(database: database) })
            let created = Locked<[Int]>([])
            let failures = Locked<[String]>([])
            DispatchQueue.concurrentPerform(iterations: connections.all.count) { index in
                do {
                    let count = try connections.all[index].withTransaction { connection in
                        try connection.query(
                            "SELECT clawback.ensure_grant_partitions(\(ahead), \(Self.monthStart(ahead, plus: 6)))"
                        ).first?.decode(Int.self, at: 0) ?? -1
                    }
                    created.withLock { $0.append(count) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 } == [])
            #expect(created.withLock { $0.reduce(0, +) } == 6, "six months created once between them: \(created.withLock { $0 })")
        }
    }

    @Test("twelve simulated months: each month's prune keeps only the retained partitions, so the table stays bounded")
    func twelveMonths() throws {
        try withMigratedDatabase { connection in
            let first = Self.monthStart(Date(), plus: -13)
            for step in 0..<12 {
                let month = Self.monthStart(first, plus: step)
                let asOf = month.addingTimeInterval(14 * 86_400)  // mid-month: the grant path has written two weeks
                try insertGrants(connection, month: month, count: 40, prefix: "m\(step)")
                let outcome = try GrantPruner(asOf: asOf).prune(on: connection.storage)
                let retentionStart = Self.utc.date(byAdding: .month, value: -4, to: asOf)!
                let partitions = try GrantPartitions.list(on: connection.storage)
                #expect(partitions.allSatisfy { $0.end > retentionStart }, "month \(step): \(partitions.map(\.name))")
                #expect(partitions.contains { $0.start <= retentionStart && $0.end > retentionStart }, "the month retention starts in is kept")
                // Bounded: at most the retention's four months plus this one hold grants.
                #expect(try count(connection) == 40 * min(step + 1, 5))
                if step >= 5 { #expect(outcome.dropped.count == 1 && outcome.dropped.first?.rows == 40) }
            }
            #expect(try count(connection, "clawback.grants_default") == 0)
        }
    }

    @Test("a partition an unfinished run covers is kept until the run finishes")
    func keepsUnfinishedRunWindow() throws {
        try withMigratedDatabase { connection in
            let old = Self.monthStart(Date(), plus: -8)
            try insertGrants(connection, month: old, count: 5, prefix: "old")
            try insertGrants(connection, month: Self.monthStart(old, plus: 1), count: 5, prefix: "older+1")
            let run = try connection.query(
                """
                INSERT INTO clawback.runs (scope_key, window_start, window_end, strategy, triggered_by, host, status)
                VALUES ('k', \(Self.monthStart(old, plus: 1)), \(Self.monthStart(old, plus: 2)), 'transaction-info', 't', 'h', 'interrupted')
                RETURNING run_id
                """
            ).first!.decode(Int64.self, at: 0)
            let outcome = try GrantPruner().prune(on: connection.storage)
            let kept = outcome.partitions.first { $0.partition.start == Self.monthStart(old, plus: 1) }
            #expect(kept?.action == .keepForRuns([run]))
            #expect(outcome.dropped.map(\.partition.start) == [old])
            // A daily run left unfinished holds nothing back: no daily run resumes a window it no longer lists.
            for strategy in ["notified-refunds", "google-voided-orders"] {
                try connection.execute(
                    """
                    INSERT INTO clawback.runs (scope_key, window_start, window_end, strategy, triggered_by, host, status)
                    VALUES (\("daily-" + strategy), \(Self.monthStart(old, plus: 1)), \(Self.monthStart(old, plus: 2)), \(strategy), 't', 'h',
                        'incomplete')
                    """)
            }
            #expect(
                try GrantPruner(dryRun: true).prune(on: connection.storage).partitions.first { $0.partition.start == Self.monthStart(old, plus: 1) }?
                    .action == .keepForRuns([run]))
            #expect(try count(connection) == 5)

            try connection.execute("UPDATE clawback.runs SET status = 'succeeded' WHERE run_id = \(run)")
            let later = try GrantPruner().prune(on: connection.storage)
            #expect(later.dropped.map(\.partition.start) == [Self.monthStart(old, plus: 1)])
            #expect(try count(connection) == 0)
        }
    }

    @Test("a dry run reports what would go and changes nothing")
    func dryRun() throws {
        try withMigratedDatabase { connection in
            try insertGrants(connection, month: Self.monthStart(Date(), plus: -7), count: 7, prefix: "a")
            try insertGrants(connection, month: Self.monthStart(Date(), plus: -6), count: 3, prefix: "b")
            let before = try GrantPartitions.list(on: connection.storage)
            let outcome = try GrantPruner(dryRun: true).prune(on: connection.storage)
            #expect(outcome.dropped.map { $0.rows ?? 0 } == [7, 3])
            #expect(outcome.partitionsCreated == 0)
            #expect(try GrantPartitions.list(on: connection.storage) == before)
            #expect(try count(connection) == 10)
        }
    }

    @Test("a prune interrupted between detach and drop is finished by the next one")
    func resumesInterruptedPrune() throws {
        try withMigratedDatabase { connection in
            let month = Self.monthStart(Date(), plus: -9)
            try insertGrants(connection, month: month, count: 4, prefix: "x")
            let name = try #require(try GrantPartitions.list(on: connection.storage).first { $0.start == month }?.name)
            // What a prune killed after its DETACH committed leaves behind.
            try connection.execute("ALTER TABLE clawback.grants DETACH PARTITION clawback.\(identifier: name)")
            #expect(try GrantPartitions.list(on: connection.storage).first { $0.name == name }?.state == .detached)
            #expect(try count(connection) == 0)  // no longer part of the grants table

            let outcome = try GrantPruner().prune(on: connection.storage)
            let entry = try #require(outcome.partitions.first { $0.partition.name == name })
            #expect(entry.action == .finishDrop)
            #expect(entry.rows == 4)
            #expect(try connection.query("SELECT to_regclass(\("clawback." + name))::text").first?.decode(String?.self, at: 0) == nil)
        }
    }

    @Test("the replay hole is closed: a transaction whose partition was dropped is refused by record_grant")
    func replayHoleClosed() throws {
        try withMigratedDatabase { connection in
            let month = Self.monthStart(Date(), plus: -6)
            try insertGrants(connection, month: month, count: 1, prefix: "replayed")
            let purchased = try connection.query("SELECT purchased_at FROM clawback.grants WHERE transaction_id = 'replayed-0'").first!
                .decode(Date.self, at: 0)
            #expect(try GrantPruner().prune(on: connection.storage).dropped.count == 1)
            #expect(try count(connection) == 0)
            // The game is asked to grant the same purchase again: the grants table has forgotten it, but the
            // acceptance window refuses a purchase this old.
            #expect {
                try connection.query(
                    """
                    SELECT clawback.record_grant('replayed-0', 'replayed-0', 'com.studio.game', 'gems_600', 'Production', 'p', 600,
                                                 \(purchased))
                    """)
            } throws: { error in
                (error as? PostgresError)?.sqlState == "CB001"
            }
            #expect(try count(connection) == 0)
        }
    }

    @Test("records older than their retention go; unacknowledged entries, and what a kept entry needs, stay")
    func recordRetention() throws {
        try withMigratedDatabase { connection in
            let eightYearsAgo = Date().addingTimeInterval(-8 * 365.25 * 86_400)
            func run(_ heartbeat: Date) throws -> Int64 {
                try connection.query(
                    """
                    INSERT INTO clawback.runs (scope_key, window_start, window_end, strategy, triggered_by, host, status, started_at, heartbeat_at)
                    VALUES ('k', \(heartbeat), \(heartbeat.addingTimeInterval(86_400)), 'transaction-info', 't', 'h', 'succeeded',
                            \(heartbeat), \(heartbeat))
                    RETURNING run_id
                    """
                ).first!.decode(Int64.self, at: 0)
            }
            /// An entry as the job writes it; `applied`: acknowledged by the game when it was written (as the
            /// acknowledge function leaves it: an acknowledgement, and out of the queue).
            func entry(_ id: String, run: Int64, created: Date, applied: Bool, kind: String = "clawback", reverses: Int64? = nil) throws -> Int64 {
                let entryID = try connection.query(
                    """
                    INSERT INTO clawback.ledger (transaction_id, kind, idempotency_key, reverses_entry_id, units, run_id, original_transaction_id,
                        bundle_id, environment, player_id, product_id, quantity, units_granted, purchased_at, created_at)
                    VALUES (\(id), \(kind), \(kind + ":" + id), \(reverses), 1, \(run), \(id), 'b', 'Production', 'p', 'gems', 1, 1, \(created),
                            \(created))
                    RETURNING entry_id
                    """
                ).first!.decode(Int64.self, at: 0)
                if applied {
                    try connection.execute(
                        """
                        WITH done AS (DELETE FROM clawback.ledger_queue WHERE entry_id = \(entryID) RETURNING entry_id)
                        INSERT INTO clawback.ledger_acknowledgements (entry_id, outcome, units_applied, acknowledged_by, acknowledged_at)
                        SELECT entry_id, 'applied', 1, 'game-1', \(created) FROM done
                        """)
                }
                return entryID
            }
            let oldRun = try run(eightYearsAgo)
            let oldRunKept = try run(eightYearsAgo)
            let recentRun = try run(Date())
            try connection.execute(
                """
                INSERT INTO clawback.checks (run_id, transaction_id, original_transaction_id, bundle_id, environment, player_id, product_id,
                    quantity, units_granted, purchased_at, verdict, action)
                VALUES (\(oldRun), 'gone', 'gone', 'b', 'Production', 'p', 'gems', 1, 1, \(eightYearsAgo), 'refunded', 'clawback_created')
                """)
            _ = try entry("gone", run: oldRun, created: eightYearsAgo, applied: true)
            _ = try entry("unapplied", run: oldRunKept, created: eightYearsAgo, applied: false)
            let reversed = try entry("reversed-later", run: oldRun, created: eightYearsAgo, applied: true)
            _ = try entry("reversed-later", run: recentRun, created: Date(), applied: true, kind: "reversal", reverses: reversed)

            // The Google Play sweep's voids: the old one goes with the old records, a recent one stays.
            for (token, voided) in [("old-void", eightYearsAgo), ("recent-void", Date() - 86_400)] {
                try connection.execute(
                    """
                    INSERT INTO clawback.google_voided_purchases (package_name, purchase_token, voided_at)
                    VALUES ('com.studio.game', \(token), \(voided))
                    """)
            }

            // Stripe's disputes and early fraud warnings: an old one settled goes; one still being answered, one
            // whose outcome came recently and recent ones stay.
            for (id, state, seen, outcomeRead) in [
                ("dp_old", "submitted", eightYearsAgo, eightYearsAgo), ("dp_answering", "stored", eightYearsAgo, nil),
                ("dp_decided_lately", "left", eightYearsAgo, Date() - 86_400), ("dp_recent", "observed", Date() - 86_400, nil),
            ] {
                try connection.execute(
                    """
                    INSERT INTO clawback.stripe_disputes (
                        dispute_id, shop, stripe_status, amount_minor, currency, state, why, evidence, stage, seen_at, disputed_at,
                        outcome, outcome_read_at)
                    VALUES (\(id), 'web.shop', 'lost', 100, 'eur', \(state), 'w', '[["evidence[product_description]", "x"]]'::jsonb,
                        'chargeback', \(seen), \(seen), \(outcomeRead.map { _ in "lost" }), \(outcomeRead))
                    """)
            }
            for (id, warned) in [("issfr_old", eightYearsAgo), ("issfr_recent", Date() - 86_400)] {
                try connection.execute(
                    """
                    INSERT INTO clawback.stripe_fraud_warnings (warning_id, shop, payment_intent, fraud_type, actionable, warned_at, seen_at)
                    VALUES (\(id), 'web.shop', 'pi_1', 'misc', false, \(warned), \(warned))
                    """)
            }
            let stores = [GoogleVoidStore.records, StripeDisputeStore.records, StripeFraudWarningStore.records]
            let preview = try GrantPruner(dryRun: true, storeRecords: stores).prune(on: connection.storage)
            #expect(preview.ledgerEntries == 1 && preview.runs == 0)
            #expect(preview.storeRecords.map(\.rows) == [1, 1, 1], "\(preview.storeRecords)")
            #expect(try count(connection, "clawback.stripe_disputes") == 4, "a dry run deletes nothing")

            let outcome = try GrantPruner(storeRecords: stores).prune(on: connection.storage)
            #expect(
                outcome.storeRecords == [
                    .init(label: "Google Play voids", rows: 1), .init(label: "Stripe disputes", rows: 1),
                    .init(label: "Stripe early fraud warnings", rows: 1),
                ])
            #expect(
                try connection.query("SELECT purchase_token FROM clawback.google_voided_purchases").rows.map { try $0.decode(String.self, at: 0) }
                    == ["recent-void"])
            #expect(
                try connection.query("SELECT dispute_id FROM clawback.stripe_disputes ORDER BY dispute_id").rows.map {
                    try $0.decode(String.self, at: 0)
                } == ["dp_answering", "dp_decided_lately", "dp_recent"])
            #expect(
                try connection.query("SELECT warning_id FROM clawback.stripe_fraud_warnings").rows.map { try $0.decode(String.self, at: 0) }
                    == ["issfr_recent"])
            #expect(outcome.ledgerEntries == 1)  // "gone"; the unapplied one and the one a recent reversal points at stay
            #expect(outcome.runs == 0)  // oldRun still owns the reversed entry; oldRunKept its unapplied one
            let left = try connection.query("SELECT transaction_id FROM clawback.ledger ORDER BY entry_id").rows.map {
                try $0.decode(String.self, at: 0)
            }
            #expect(left == ["unapplied", "reversed-later", "reversed-later"])

            // Once the game acknowledges it, the old entry goes, and its run (with its checks) with it.
            _ = try connection.query(
                "SELECT clawback.acknowledge_clawback(entry_id, 'game-1', 'applied') FROM clawback.ledger WHERE transaction_id = 'unapplied'")
            let next = try GrantPruner().prune(on: connection.storage)
            #expect(next.ledgerEntries == 1 && next.runs == 1)
            #expect(try count(connection, "clawback.runs") == 2)
        }
    }

    @Test("one prune at a time; a grants table held busy is a clear, retryable error that drops nothing")
    func lockingAndBusyTable() throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            try insertGrants(connection, month: Self.monthStart(Date(), plus: -7), count: 2, prefix: "busy")

            let other = try TestPostgres.connect(database: database)
            try other.execute("SELECT pg_advisory_lock(\(GrantPruner.lockKey.value))")
            #expect {
                try GrantPruner().prune(on: connection.storage)
            } throws: { error in
                guard case .busy(let holder)? = error as? GrantPruner.PruneError else { return false }
                return holder != nil
            }
            try other.execute("SELECT pg_advisory_unlock(\(GrantPruner.lockKey.value))")

            // A long transaction reading grants holds a lock DETACH must wait for (partitions ahead exist
            // already, so only the detach needs the lock).
            try GrantPartitions.ensureAhead(on: connection.storage)
            try other.execute("BEGIN")
            try other.execute("SELECT count(*) FROM clawback.grants")
            var pruner = GrantPruner()
            pruner.lock = ShortLock(timeoutMilliseconds: 100, attempts: 2)
            #expect {
                try pruner.prune(on: connection.storage)
            } throws: { error in
                "\(error)".contains("detaching grants_") && "\(error)".contains("stayed locked by other transactions through 2 attempts")
            }
            try other.execute("ROLLBACK")
            #expect(try count(connection) == 2)
            #expect(try pruner.prune(on: connection.storage).dropped.count == 1)
        }
    }
}
