import Foundation
import Postgres
import Reconciliation
import Storage
import TestSupport
import Testing

@Suite("Reading a run's grants")
struct GrantPagingTests {
    // swift-format-ignore: NeverUseForceTry
    static let window = try! ReconciliationWindow.month("2026-10")  // a valid constant month

    func withGrants(_ count: Int, _ body: (PostgresConnection) throws -> Void) throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            _ = try connection.query("SELECT clawback.ensure_grant_partitions(\(Self.window.start), \(Self.window.end))")
            try connection.execute(
                """
                INSERT INTO clawback.grants (transaction_id, original_transaction_id, bundle_id, product_id, environment, player_id,
                    units_granted, purchased_at)
                SELECT (3000000000000 + i)::text, (3000000000000 + i)::text, 'com.studio.game', 'gems_600', 'Production',
                       'player-' || (i % 97), 600,
                       timestamptz '2026-10-01 00:00:00Z' + i * interval '1 second'
                FROM generate_series(1, \(count)) AS i
                """)
            try body(connection)
        }
    }

    @Test("a page leaves out what the run already checked but moves past it; a page of checked grants is empty, not the end")
    func pagesSkipCheckedGrants() throws {
        try withGrants(30) { connection in
            let selection = GrantSelection(window: Self.window)
            let run = try RunStore.create(
                RunScope(selection: selection, strategy: .transactionInfo, dryRun: false),
                origin: RunOrigin(triggeredBy: "test", host: "localhost", arguments: []), on: connection.storage)
            // Grants 1-10 checked, 11 checked as unverified (asked again), the rest not checked.
            try connection.execute(
                """
                INSERT INTO clawback.checks (run_id, transaction_id, original_transaction_id, bundle_id, environment, player_id,
                    product_id, quantity, units_granted, purchased_at, verdict, action)
                SELECT \(run.runID), transaction_id, original_transaction_id, bundle_id, environment, player_id, product_id, quantity,
                    units_granted, purchased_at, CASE WHEN transaction_id = '3000000000011' THEN 'unverified' ELSE 'ok' END,
                    CASE WHEN transaction_id = '3000000000011' THEN 'retry_next_run' ELSE 'none' END
                FROM clawback.grants WHERE transaction_id <= '3000000000011'
                """)
            var pages: [[String]] = []
            var cursor: GrantCursor?
            while true {
                let page = try GrantStore.page(selection, after: cursor, excludingCheckedBy: run.runID, limit: 10, on: connection.storage)
                guard let next = page.next else {
                    #expect(page.grants.isEmpty)
                    break
                }
                pages.append(page.grants.map { String($0.transactionID.suffix(2)) })
                cursor = next
            }
            #expect(pages == [[], (11...20).map { String(format: "%02d", $0) }, (21...30).map { String(format: "%02d", $0) }])
            // Another run sees every grant.
            let everything = try GrantStore.page(selection, after: nil, excludingCheckedBy: run.runID + 1, limit: 100, on: connection.storage)
            #expect(everything.grants.count == 30)
        }
    }

    @Test("grants written in bulk get fresh planner statistics before a run reads them, once")
    func staleStatisticsAreRefreshed() throws {
        try withGrants(5_000) { connection in
            // Make the insert's counts visible to pg_stat_user_tables now rather than within a second.
            _ = try connection.query("SELECT pg_stat_force_next_flush()")
            let other = try TestPostgres.connect(database: try connection.query("SELECT current_database()").first?.decode(String.self, at: 0))
            let analyzed = try GrantPartitions.refreshStaleStatistics(on: other.storage)
            #expect(analyzed == ["grants_2026_10"])
            let estimate = try other.query("SELECT reltuples FROM pg_class WHERE oid = 'clawback.grants_2026_10'::regclass").first?
                .decode(Double.self, at: 0)
            #expect(estimate == 5_000)
            #expect(try GrantPartitions.refreshStaleStatistics(on: other.storage).isEmpty)
        }
    }

    @Test("an import leaves its partitions analyzed")
    func importAnalyzes() throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            let lines = (1...2_000).map { index in
                """
                {"transaction_id":"\(4_000_000_000_000 + index)","bundle_id":"com.studio.game","product_id":"gems_600",\
                "player_id":"p\(index % 13)","units_granted":600,"purchased_at":"2026-10-\(String(format: "%02d", 1 + index % 28))T08:00:00Z"}
                """
            }
            let outcome = try GrantImport.importData(
                Data(lines.joined(separator: "\n").utf8), format: .jsonl, skipInvalid: false, on: connection.storage)
            #expect(outcome.inserted == 2_000)
            let estimate = try connection.query("SELECT reltuples FROM pg_class WHERE oid = 'clawback.grants_2026_10'::regclass").first?
                .decode(Double.self, at: 0)
            #expect(estimate == 2_000)
        }
    }
}
