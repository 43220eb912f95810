import Foundation
import Postgres
import Reconciliation
import Reports
import Storage
import TestSupport
import Testing

@Suite("Reports from the database")
struct ReportGeneratorTests {
    /// Ids a hostile or careless grant path could store; each must come back from the CSV unchanged.
    static let hostileIDs = [
        "id,with,commas", "say \"hi\"", "line\nbreak", "cr\rand\r\nlf", "=1+1", "+SUM(A1)", "-3", "@A1", "\tTab", "'apostrophe",
        "joueur-é-日本-🎮", "'; DROP TABLE clawback.ledger; --", "=HYPERLINK(\"http://evil\",\"x\")",
    ]

    @Test("round trip: a strict CSV parser gets back exactly the database values, hostile ids included")
    func roundTrip() throws {
        try ReportFixture.with { fixture in
            let run = try fixture.run(grantsInScope: 40, appleRequests: 40)
            let verdicts = [
                ("refunded", "clawback_created"), ("unknown_to_apple", "flagged_for_review"), ("mismatch", "flagged_for_review"),
                ("unverified", "retry_next_run"), ("revoked", "already_recorded"), ("refund_reversed", "reversal_created"),
            ]
            for (index, id) in Self.hostileIDs.enumerated() {
                let (verdict, action) = verdicts[index % verdicts.count]
                var check = ReportFixture.Check(
                    transactionID: "tx-\(index)-" + id, playerID: id, productID: "prod-" + id,
                    verdict: verdict, action: action)
                check.purchasedAt = Date(timeIntervalSince1970: 1_790_000_000 + Double(index) * 3600.5)
                check.detail = "detail for " + id
                if index % 3 == 0 {
                    check.revocationType = "REFUND_PRORATED"
                    check.revocationPercentage = 33333
                }
                if verdict == "refund_reversed" { check.ledgerUnits = -600 }
                if action == "already_recorded" || action == "retry_next_run" { check.ledgerUnits = nil }
                try fixture.check(check, run: run)
            }
            try fixture.check(.init(transactionID: "fine-1", verdict: "ok", action: "none", revocationDate: nil, ledgerUnits: nil), run: run)

            let files = try ReportGenerator.write(
                .run(run), options: .init(directory: fixture.directory.path), from: ReportStore(fixture.connection.storage))
            #expect(files.flaggedPurchases == Self.hostileIDs.count)
            let csv = try StrictCSV(try ReportFixture.bytes(files.detail))
            #expect(csv.header == DetailReport.columns)
            #expect(csv.rows.count == Self.hostileIDs.count)

            let expected = try fixture.connection.query(
                """
                SELECT c.transaction_id, c.original_transaction_id, c.player_id, c.product_id, c.verdict, c.action, c.units_clawed_back::text,
                    extract(epoch FROM c.purchased_at)::float8, extract(epoch FROM c.revocation_date)::float8, c.revocation_type,
                    round(c.apple_price_milli / 1000.0, 2)::text, c.detail,
                    coalesce((SELECT sum(units) FROM clawback.ledger e WHERE e.transaction_id = c.transaction_id), 0)::text
                FROM clawback.checks c WHERE c.verdict <> 'ok' ORDER BY c.purchased_at
                """
            ).rows
            let iso = ISO8601DateFormatter()
            iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let isoWhole = ISO8601DateFormatter()
            func epoch(_ text: String?) -> Double? {
                guard let text else { return nil }
                return (iso.date(from: text) ?? isoWhole.date(from: text))?.timeIntervalSince1970
            }
            for (row, database) in zip(csv.rows, expected) {
                func text(_ column: String) -> String? { row[column].map(FormulaGuard.restore) }
                #expect(text("transaction_id") == (try database.decode(String.self, at: 0)))
                #expect(text("original_transaction_id") == (try database.decode(String.self, at: 1)))
                #expect(text("player_id") == (try database.decode(String.self, at: 2)))
                #expect(text("product_id") == (try database.decode(String.self, at: 3)))
                #expect(text("verdict") == (try database.decode(String.self, at: 4)))
                #expect(text("action") == (try database.decode(String.self, at: 5)))
                #expect(row["units_clawed_back"] == (try database.decode(String.self, at: 6)))
                #expect(epoch(row["purchase_date"]) == (try database.decode(Double.self, at: 7)))
                #expect(epoch(row["revocation_date"]) == (try database.decode(Double?.self, at: 8)))
                #expect(text("revocation_type") == (try database.decode(String?.self, at: 9)))
                #expect(row["apple_price_informational"] == (try database.decode(String?.self, at: 10)))
                #expect(text("detail") == (try database.decode(String?.self, at: 11)))
                #expect(row["units_change"] == (try database.decode(String.self, at: 12)))
                #expect(row["run_id"] == String(run))
                #expect(row["window"] == "2026-08-01..2026-11-01")
            }
            // Numbers stay numbers: not quoted, not guarded.
            let detailText = String(decoding: try ReportFixture.bytes(files.detail), as: UTF8.self)
            #expect(detailText.contains(",-600,"))
            #expect(!detailText.contains("'-600"))
        }
    }

    @Test("the same run's report regenerated later is byte-identical; the Excel flavour differs only by the BOM")
    func regeneration() throws {
        try ReportFixture.with { fixture in
            let run = try fixture.run(grantsInScope: 3)
            try fixture.check(.init(transactionID: "a"), run: run)
            try fixture.check(.init(transactionID: "b", verdict: "unverified", action: "retry_next_run", ledgerUnits: nil), run: run)
            try fixture.check(.init(transactionID: "c", verdict: "ok", action: "none", revocationDate: nil, ledgerUnits: nil), run: run)
            let first = try ReportGenerator.write(
                .run(run), options: .init(directory: fixture.directory.path), from: ReportStore(fixture.connection.storage))
            let before = try first.all.map(ReportFixture.bytes)
            // The game acknowledges an entry meanwhile: the report as of the first one's time does not show it.
            try fixture.acknowledge(transaction: "a", outcome: "applied")
            // Later activity elsewhere in the database must not change this run's report.
            let other = try fixture.run()
            try fixture.check(.init(transactionID: "z"), run: other)
            let again = fixture.directory.appendingPathComponent("again").path
            let second = try ReportGenerator.write(
                .run(run), options: .init(directory: again, asOf: first.asOf), from: ReportStore(fixture.connection.storage))
            #expect(try second.all.map(ReportFixture.bytes) == before)
            let now = try ReportGenerator.write(
                .run(run), options: .init(directory: fixture.directory.appendingPathComponent("now").path),
                from: ReportStore(fixture.connection.storage))
            let detailNow = String(decoding: try ReportFixture.bytes(now.detail), as: UTF8.self)
            #expect(detailNow.contains(",applied,") && !String(decoding: before[0], as: UTF8.self).contains(",applied,"))
            #expect(second.all.map(ReportGenerator.fileName) == first.all.map(ReportGenerator.fileName))
            #expect(ReportGenerator.fileName(first.detail) == "clawback-2026-08-01..2026-11-01-run-\(run)-detail.csv")

            let excel = try ReportGenerator.write(
                .run(run),
                options: .init(directory: fixture.directory.appendingPathComponent("excel").path, byteOrderMark: true, asOf: first.asOf),
                from: ReportStore(fixture.connection.storage))
            #expect(try ReportFixture.bytes(excel.detail) == [0xEF, 0xBB, 0xBF] + before[0])
            _ = try StrictCSV(try ReportFixture.bytes(excel.summary), expectByteOrderMark: true)
        }
    }

    @Test("a window's report merges its shards and later reruns (latest check per purchase) and leaves out dry runs")
    func mergedWindow() throws {
        try ReportFixture.with { fixture in
            let shard0 = try fixture.run(shard: (0, 2), grantsInScope: 2)
            let shard1 = try fixture.run(shard: (1, 2), status: "incomplete", grantsInScope: 2)
            try fixture.check(.init(transactionID: "s0-refund"), run: shard0)
            try fixture.check(.init(transactionID: "s0-ok", verdict: "ok", action: "none", revocationDate: nil, ledgerUnits: nil), run: shard0)
            try fixture.check(.init(transactionID: "s1-refund", playerID: "p2", priceMilli: 120_000, currency: "JPY"), run: shard1)
            try fixture.check(
                .init(transactionID: "s1-pending", playerID: "p3", verdict: "unverified", action: "retry_next_run", ledgerUnits: nil), run: shard1)
            // Staff rerun player p3: Apple now answers; it supersedes the shard's unverified check.
            let rerun = try fixture.run(player: "p3")
            try fixture.check(
                .init(transactionID: "s1-pending", playerID: "p3", revocationType: "REFUND_PRORATED", revocationPercentage: 50000),
                run: rerun)
            let dry = try fixture.run(dryRun: true)
            try fixture.check(.init(transactionID: "dry-only", action: "none", ledgerUnits: nil), run: dry)
            // Another window's run is not part of it.
            let other = try fixture.run(start: ReportFixture.windowEnd, end: ReportFixture.windowEnd.addingTimeInterval(86_400 * 30))
            try fixture.check(.init(transactionID: "elsewhere"), run: other)

            let window = try ReconciliationWindow(start: ReportFixture.windowStart, end: ReportFixture.windowEnd)
            let files = try ReportGenerator.write(
                .window(window), options: .init(directory: fixture.directory.path), from: ReportStore(fixture.connection.storage))
            #expect(files.runIDs == [shard0, shard1, rerun])
            #expect(ReportGenerator.fileName(files.detail) == "clawback-2026-08-01..2026-11-01-runs-\(shard0)-\(rerun)-detail.csv")
            let detail = try StrictCSV(try ReportFixture.bytes(files.detail)).rows
            #expect(detail.map { $0["transaction_id"] ?? "" }.sorted() == ["s0-refund", "s1-pending", "s1-refund"])
            let pending = try #require(detail.first { $0["transaction_id"] == "s1-pending" })
            #expect(pending["verdict"] == "refunded")
            #expect(pending["run_id"] == String(rerun))
            #expect(pending["refunded_amount_informational"] == "5.00")  // half of 9.99 USD, 4.995 rounded half up

            let summary = try StrictCSV(try ReportFixture.bytes(files.summary)).rows
            func value(_ section: String, _ key: String, currency: String? = nil, _ column: String = "count") -> String? {
                summary.first { $0["section"] == section && $0["key"] == key && (currency == nil || $0["currency"] == currency) }?[column]
            }
            #expect(summary.filter { $0["section"] == "run" }.map { $0["key"] } == [String(shard0), String(shard1), String(rerun)])
            #expect(value("completeness", "grants_checked") == "4")
            #expect(value("completeness", "unverified") == "0")
            #expect(value("completeness", "runs_not_succeeded") == "1")
            #expect(value("verdict", "refunded") == "3")
            #expect(value("verdict", "ok") == "1")
            #expect(value("verdict", "unverified") == "0")
            #expect(value("verdict", "refunded", "units") == "1800")
            #expect(value("currency", "refunded", currency: "USD", "amount_informational") == "14.99")  // 9.99 + 5.00
            #expect(value("currency", "refunded", currency: "JPY", "amount_informational") == "120")
            #expect(value("product", "gems_600") == "3")
        }
    }

    @Test("each store's requests apart: Apple's under the names finance reads, Google Play's only where a run asked Google")
    func requestsPerStore() throws {
        try ReportFixture.with { fixture in
            let apple = try fixture.run(grantsInScope: 1, appleRequests: 40)
            try fixture.check(.init(transactionID: "a-refund"), run: apple)
            let window = try ReconciliationWindow(start: ReportFixture.windowStart, end: ReportFixture.windowEnd)
            func summary() throws -> [[String: String]] {
                let files = try ReportGenerator.write(
                    .window(window), options: .init(directory: fixture.directory.path), from: ReportStore(fixture.connection.storage))
                return try StrictCSV(try ReportFixture.bytes(files.summary)).rows
            }
            func value(_ rows: [[String: String]], _ key: String) -> String? {
                rows.first { $0["section"] == "completeness" && $0["key"] == key }?["count"]
            }
            let appleOnly = try summary()
            #expect(value(appleOnly, "apple_requests") == "40")
            #expect(value(appleOnly, "google_play_requests") == nil, "no Google run: no Google row")
            let google = try fixture.run(
                grantsInScope: 1, strategy: .googleOrders, counters: #"{"grantsInScope": 1, "storeRequests": 3, "storeRateLimited": 1}"#)
            try fixture.check(.init(transactionID: "g-refund"), run: google)
            let both = try summary()
            #expect(value(both, "apple_requests") == "40", "Google's calls are not Apple's")
            #expect(value(both, "google_play_requests") == "3" && value(both, "google_play_rate_limited") == "1")
            #expect(both.first { $0["key"] == "google_play_requests" }?["store"] == "google_play")
        }
    }

    @Test(
        "how fast refunds come back, per store: hours from the store's refund to the clawback entry and to the game's acknowledgement (median, p99), and the units recovered"
    )
    func recoverySpeed() throws {
        try ReportFixture.with { fixture in
            let run = try fixture.run(grantsInScope: 3)
            // Refunded 10, 30 and 50 hours before the run wrote their entries (now); the first one applied now.
            let now = try fixture.connection.query("SELECT clock_timestamp()").first?.decode(Date.self, at: 0) ?? Date()
            for (id, hours) in [("r-10", 10.0), ("r-30", 30.0), ("r-50", 50.0)] {
                try fixture.check(.init(transactionID: id, revocationDate: now - hours * 3_600), run: run)
            }
            try fixture.acknowledge(transaction: "r-10", outcome: "applied")
            let files = try ReportGenerator.write(
                .run(run), options: .init(directory: fixture.directory.path), from: ReportStore(fixture.connection.storage))
            let rows = try StrictCSV(try ReportFixture.bytes(files.summary)).rows.filter { $0["section"] == "speed" }
            func value(_ key: String, _ column: String = "amount_informational") -> String? { rows.first { $0["key"] == key }?[column] }
            #expect(rows.allSatisfy { $0["store"] == "app_store" })
            #expect(value("refund_to_ledger_median_hours") == "30.0" && value("refund_to_ledger_median_hours", "count") == "3")
            #expect(value("refund_to_ledger_p99_hours") == "49.6")
            #expect(value("refund_to_acknowledgement_median_hours") == "10.0" && value("refund_to_acknowledgement_median_hours", "count") == "1")
            #expect(value("units_recovered_percent") == "33.3" && value("units_recovered_percent", "units") == "600")
            // As of before the acknowledgement, the report reads as it did then: nothing acknowledged yet.
            let earlier = try ReportGenerator.write(
                .run(run), options: .init(directory: fixture.directory.path, asOf: now - 60), from: ReportStore(fixture.connection.storage))
            let then = try StrictCSV(try ReportFixture.bytes(earlier.summary)).rows.filter { $0["section"] == "speed" }
            #expect(then.first { $0["key"] == "refund_to_acknowledgement_median_hours" }?["count"] == "0")
        }
    }

    @Test("no run to report on is a clear error")
    func nothingToReport() throws {
        try ReportFixture.with { fixture in
            #expect {
                try ReportGenerator.write(.run(404), options: .init(directory: fixture.directory.path), from: ReportStore(fixture.connection.storage))
            } throws: { error in
                "\(error)".contains("there is no run 404")
            }
            let window = try ReconciliationWindow.month("2026-10")
            try fixture.run(start: window.start, end: window.end, dryRun: true)
            #expect {
                try ReportGenerator.write(
                    .window(window), options: .init(directory: fixture.directory.path), from: ReportStore(fixture.connection.storage))
            } throws: { error in
                "\(error)".contains("no run (other than dry runs) covers exactly the window 2026-10")
            }
        }
    }

    @Test("a report analyzes what its run just wrote before planning its queries (autovacuum would, within a minute)")
    func analyzesWhatTheRunWrote() throws {
        try ReportFixture.with { fixture in
            let run = try fixture.run(grantsInScope: 3_000)
            // autovacuum off for these tables: only the report can have analyzed them.
            try fixture.connection.execute("ALTER TABLE clawback.checks SET (autovacuum_enabled = false)")
            try fixture.connection.execute("ALTER TABLE clawback.ledger SET (autovacuum_enabled = false)")
            try fixture.connection.execute(
                """
                INSERT INTO clawback.checks (run_id, transaction_id, original_transaction_id, bundle_id, environment, player_id, product_id,
                    quantity, units_granted, purchased_at, verdict, action, units_clawed_back)
                SELECT \(run), 'tx-' || i, 'tx-' || i, 'com.studio.game', 'Production', 'player-' || i, 'gems_600', 1, 600,
                    timestamptz '2026-09-01 00:00:00Z' + i * interval '1 minute', 'refunded', 'clawback_created', 600
                FROM generate_series(1, 3000) AS i
                """)
            try fixture.connection.execute(
                """
                INSERT INTO clawback.ledger (transaction_id, kind, idempotency_key, units, run_id, original_transaction_id, bundle_id,
                    environment, player_id, product_id, quantity, units_granted, purchased_at)
                SELECT transaction_id, 'clawback', 'clawback:' || run_id, 600, run_id, original_transaction_id, bundle_id, environment,
                    player_id, product_id, 1, 600, purchased_at
                FROM clawback.checks WHERE run_id = \(run)
                """)
            _ = try fixture.connection.query("SELECT pg_stat_force_next_flush()")
            func analyzed() throws -> [String] {
                try fixture.connection.query(
                    """
                    SELECT relname FROM pg_stat_user_tables
                    WHERE schemaname = 'clawback' AND relname IN ('checks', 'ledger') AND last_analyze IS NOT NULL ORDER BY relname
                    """
                ).rows.map { try $0.decode(String.self, at: 0) }
            }
            #expect(try analyzed().isEmpty)
            let files = try ReportGenerator.write(
                .run(run), options: .init(directory: fixture.directory.path), from: ReportStore(fixture.connection.storage))
            #expect(try analyzed() == ["checks", "ledger"])
            #expect(files.flaggedPurchases == 3_000)
        }
    }
}
