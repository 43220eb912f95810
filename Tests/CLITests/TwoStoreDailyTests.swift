import AppStoreSimulator
import Foundation
import Postgres
import Reconciliation
import TestSupport
import Testing

/// Both stores' daily schedules as an operator runs them, day after day, on one database: Apple's
/// `clawback run --daily`, Google's sweep and `clawback run --daily --strategy google-orders`.
@Suite("both stores' daily runs, day after day, end to end", .serialized)
struct TwoStoreDailyTests {
    /// A day's new refunds: purchases of every age the grants table keeps, the older ones past the next
    /// monthly run's window (bought up to 150 days ago; customers ask up to about 90 days after a purchase,
    /// chargebacks come later).
    struct Refunds {
        var apple: [String] = []
        var google: [String] = []
    }

    @Test(
        "every refund of a kept grant that a store's feed names (Apple's notifications, Google's voids), whatever its purchase's age, is on the ledger after the next day's runs, as a full re-check writes it; the monthly runs after them write nothing for it, and the window's report is the monthly-only one"
    )
    func refundsWithinADay() async throws {
        let now = Date()
        var google = try GooglePlayWorldGenerator.generate(
            orders: 300, start: now - 86_400 * 150, end: now - 86_400, refundRate: 0.1, unknownShare: 0.002, seed: 37)
        for (id, order) in google.world.orders where order.state == "PENDING_REFUND" { google.world.orders[id]?.state = "PROCESSED" }
        let kept = try #require(ReconciliationWindow.dailyWindows(after: now, months: 3, retentionMonths: 4).first).start
        let monthly = ReconciliationWindow.nextMonthly(after: now, months: 3)
        try await RunCrashTests.Setup.with(purchases: 300, seed: 37, days: 150, google: google) { setup in
            var random = SeededGenerator(seed: 37)
            let appleCandidates = Self.unrefundedApple(setup, since: kept).shuffled(using: &random)
            let googleCandidates = Self.unrefundedGoogle(setup, since: kept).shuffled(using: &random)
            let rounds = 3
            let perRound = 8
            try #require(appleCandidates.count >= rounds * perRound && googleCandidates.count >= rounds * perRound)

            let revealed = try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let environment = try setup.environment(database: database)
                let connection = try TestPostgres.connect(database: database)
                // The first day: the refunds the worlds already hold.
                try await Self.dailyRuns(environment)
                var revealed = Refunds()
                for round in 0..<rounds {
                    // Refunds made since the last runs, then the next day's runs.
                    let slice = round * perRound..<(round + 1) * perRound
                    revealed.apple += try Self.refundApple(Array(appleCandidates[slice]), in: setup)
                    revealed.google += try Self.refundGoogle(Array(googleCandidates[slice]), in: setup)
                    try await Self.dailyRuns(environment)
                    let onLedger = try Self.ledgerPurchases(connection)
                    let missing = (revealed.apple + revealed.google).filter { !onLedger.contains($0) }
                    #expect(missing.isEmpty, "day \(round + 2): refunds not on the ledger: \(missing)")
                }
                let older = (revealed.apple + revealed.google).filter { id in
                    (setup.output.grants.first { $0.transaction_id == id }?.purchased_at
                        ?? google.grants.first { $0.transaction_id == id }?.purchased_at ?? now) < monthly.start
                }
                #expect(!older.isEmpty, "refunds of purchases older than the next monthly run's window")

                // The monthly runs after them write nothing for a purchase whose refund a feed named.
                let before = try Self.entries(connection, of: revealed.apple + revealed.google)
                try await Self.monthlyRuns(environment, monthly)
                #expect(try Self.entries(connection, of: revealed.apple + revealed.google) == before)
                return (revealed, before, try WindowReport(monthly, on: connection))
            }
            #expect(revealed.1.count >= rounds * perRound * 2)

            // What a full re-check of every kept grant writes for them, and what the monthly runs alone report.
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let environment = try setup.environment(database: database)
                let connection = try TestPostgres.connect(database: database)
                try await Self.monthlyRuns(environment, try ReconciliationWindow(start: kept, end: monthly.end))
                #expect(try Self.entries(connection, of: revealed.0.apple + revealed.0.google) == revealed.1)
            }
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                try await Self.monthlyRuns(try setup.environment(database: database), monthly)
                let report = try WindowReport(monthly, on: try TestPostgres.connect(database: database))
                #expect(report.rows.count > 10)
                #expect(revealed.2 == report)
            }
        }
    }

    /// Apple's daily run, Google's sweep, Google's daily run: each succeeds.
    static func dailyRuns(_ environment: [String: String]) async throws {
        for arguments in [
            ["run", "--daily"], ["google-play", "sweep-voids"], ["run", "--daily", "--strategy", "google-orders"],
        ] {
            let result = try await CommandRunner.run("clawback", arguments + ["--log-level", "warning"], environment: environment)
            #expect(result.status == 0, "\(arguments): \(result.standardError)")
        }
    }

    /// Both stores' re-check of every grant purchased in `window`.
    static func monthlyRuns(_ environment: [String: String], _ window: ReconciliationWindow) async throws {
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        let range = ["--from", day.string(from: window.start), "--to", day.string(from: window.end), "--log-level", "warning"]
        for arguments in [["run"], ["run", "--strategy", "google-orders"]] {
            let result = try await CommandRunner.run("clawback", arguments + range, environment: environment)
            #expect(result.status == 0, "\(arguments): \(result.standardError)")
        }
    }

    /// Apple purchases granted since `since`, never refunded.
    static func unrefundedApple(_ setup: RunCrashTests.Setup, since: Date) -> [String] {
        let world = setup.server.simulator.world
        // A grant Apple never saw (the generator's forged ones) is no candidate: Apple has nothing to refund.
        return setup.output.grants.filter { grant in
            grant.purchased_at >= since && world.transactions[grant.transaction_id].map { $0.refund == nil } == true
        }.map(\.transaction_id)
    }

    /// Google orders granted since `since`, processed and never refunded: their purchase tokens.
    static func unrefundedGoogle(_ setup: RunCrashTests.Setup, since: Date) -> [String] {
        guard let world = setup.server.simulator.google?.world else { return [] }
        return world.orders.values.filter { $0.purchaseTime >= since && $0.state == "PROCESSED" }.map(\.purchaseToken).sorted()
    }

    /// Refunds the Apple purchases now (a second ago), notified as Apple notifies.
    static func refundApple(_ ids: [String], in setup: RunCrashTests.Setup) throws -> [String] {
        let world = setup.server.simulator.world
        let lines = try ids.enumerated().map { index, id in
            var record = try #require(world.transactions[id])
            record.refund = RefundRecord(date: Date() - 1, reason: Int32(index % 2))
            return WorldLine.transaction(record)
        }
        setup.server.simulator.update(lines)
        return ids
    }

    /// Refunds the Google orders of these purchase tokens three minutes ago, revoked (so the voids feed lists
    /// them, recorded a minute later: the sweep reads the feed up to a minute before now), a chargeback among them.
    static func refundGoogle(_ tokens: [String], in setup: RunCrashTests.Setup) throws -> [String] {
        let google = try #require(setup.server.simulator.google)
        let now = Date()
        google.update { world in
            for (index, token) in tokens.enumerated() {
                guard let id = world.orders.first(where: { $0.value.purchaseToken == token })?.key, var order = world.orders[id] else { continue }
                let chargeback = index == 0
                order.state = "REFUNDED"
                order.refund = .init(date: now - 180, reason: chargeback ? "CHARGEBACK" : "OTHER", amountMilli: order.priceMilli)
                order.voids = [.init(recordedAt: now - 120, voidedAt: now - 180, source: 0, reason: chargeback ? 7 : 1)]
                world.orders[id] = order
            }
        }
        return tokens
    }

    /// The purchases that have a ledger entry.
    static func ledgerPurchases(_ connection: PostgresConnection) throws -> Set<String> {
        Set(try connection.query("SELECT DISTINCT transaction_id FROM clawback.ledger").rows.map { try $0.decode(String.self, at: 0) })
    }

    /// The ledger entries of these purchases: purchase, kind, units.
    static func entries(_ connection: PostgresConnection, of ids: [String]) throws -> [String] {
        let wanted = Set(ids)
        return try connection.query("SELECT transaction_id, kind, units FROM clawback.ledger ORDER BY 1, 2, 3").rows.compactMap { row in
            let id = try row.decode(String.self, at: 0)
            return wanted.contains(id) ? "\(id) \(try row.decode(String.self, at: 1)) \(try row.decode(Int64.self, at: 2))" : nil
        }
    }
}
