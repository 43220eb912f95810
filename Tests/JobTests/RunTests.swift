import AppStore
import AppStoreSimulator
import Foundation
import Job
import Postgres
import Reconciliation
import Storage
import Synchronization
import TestSupport
import Testing

@Suite("clawback run against PostgreSQL and the simulator")
struct RunTests {
    @Test("every verdict and both kinds of ledger entry, with prorated rounding")
    func everyVerdict() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let records = [
                JobFixture.purchase("1000000001"),
                JobFixture.purchase("1000000002", refund: JobFixture.refund()),
                JobFixture.purchase("1000000003", refund: JobFixture.refund(type: "REFUND_PRORATED", percentage: 33_417)),
                JobFixture.purchase("1000000004", refund: JobFixture.refund(type: "FAMILY_REVOKE")),
                JobFixture.purchase("1000000005", product: "gems_100"),
            ]
            let fixture = try await JobFixture(database: database, transactions: records)
            // The game granted gems_600 for 1000000005 (Apple sold gems_100), and 1000000006 Apple never saw.
            try fixture.grant(records, overrides: ["1000000005": { $0.product_id = "gems_600" }])
            try fixture.grant([JobFixture.purchase("1000000006")])
            // 1000000007 belongs to an app without credentials: no verified answer.
            var other = JobFixture.purchase("1000000007")
            other.bundleId = "com.unconfigured.game"
            try fixture.grant([other])

            let listener = try TestPostgres.connect(database: database)
            try listener.listen("clawback")
            let outcome = try await fixture.run()
            #expect(outcome.status == "incomplete")  // one grant stays unverified
            // Every new entry was announced, after commit, with its id.
            let announced = try listener.notifications()
            let entryIDs = try fixture.connection.query("SELECT entry_id::text FROM clawback.ledger ORDER BY entry_id").rows
                .map { try $0.decode(String.self, at: 0) }
            #expect(announced.map(\.payload).sorted() == entryIDs.sorted())
            #expect(announced.allSatisfy { $0.channel == "clawback" })
            let verdicts = try fixture.verdicts(run: outcome.runID)
            #expect(verdicts == [
                "1000000001": "ok", "1000000002": "refunded", "1000000003": "refunded", "1000000004": "revoked", "1000000005": "mismatch",
                "1000000006": "unknown_to_apple", "1000000007": "unverified",
            ])
            #expect(try fixture.ledger("1000000002").map { $0.0 + ":\($0.1)" } == ["clawback:600"])
            #expect(try fixture.ledger("1000000003").map(\.1) == [201])  // 600 × 33.417% = 200.502 → 201
            #expect(try fixture.ledger("1000000004").map(\.1) == [600])
            #expect(try fixture.ledger("1000000005").map(\.0) == ["review"])
            #expect(try fixture.ledger("1000000006").map(\.2) == ["review:unknown_to_apple"])
            #expect(try fixture.ledger("1000000001").isEmpty && fixture.ledger("1000000007").isEmpty)
            #expect(outcome.counters.unitsClawedBack == 600 + 201 + 600)
            #expect(outcome.counters.newLedgerEntries == 5)
            await fixture.shutdown()
        }
    }

    @Test("a rerun writes no entry; a dry run writes none either")
    func idempotentAndDry() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let records = (0..<30).map { index in
                JobFixture.purchase(String(1_000_000_100 + index), refund: index % 3 == 0 ? JobFixture.refund() : nil)
            }
            let fixture = try await JobFixture(database: database, transactions: records)
            try fixture.grant(records)
            let dry = try await fixture.run(fixture.scope(dryRun: true))
            #expect(dry.status == "succeeded")
            #expect(try fixture.ledgerCount() == 0)
            #expect(dry.counters.actions["clawback_created"] == 10)  // what it would have done

            let first = try await fixture.run()
            #expect(first.counters.newLedgerEntries == 10)
            let second = try await fixture.run()
            #expect(second.runID != first.runID)
            #expect(second.counters.newLedgerEntries == 0)
            #expect(second.counters.actions["already_recorded"] == 10)
            #expect(try fixture.ledgerCount() == 10)
            await fixture.shutdown()
        }
    }

    @Test("a refund, its reversal, then a new refund; and a prorated refund that becomes full")
    func reversalThenNewRefund() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let refunded = JobFixture.purchase("1000000200", refund: JobFixture.refund(daysAgo: 20))
            let prorated = JobFixture.purchase("1000000201", refund: JobFixture.refund(daysAgo: 20, type: "REFUND_PRORATED", percentage: 50_000))
            let fixture = try await JobFixture(database: database, transactions: [refunded, prorated])
            try fixture.grant([refunded, prorated])
            _ = try await fixture.run()

            // Apple reverses the first refund, and turns the prorated one into a full refund.
            var reversed = refunded
            reversed.refund?.reversedDate = Date(timeIntervalSinceNow: -86_400 * 5)
            var full = prorated
            full.refund?.type = "REFUND_FULL"
            full.refund?.percentage = nil
            fixture.simulator.update([.transaction(reversed), .transaction(full)])
            let second = try await fixture.run()
            #expect(try fixture.verdicts(run: second.runID)["1000000200"] == "refund_reversed")
            #expect(try fixture.ledger("1000000200").map { "\($0.0):\($0.1)" } == ["clawback:600", "reversal:-600"])
            #expect(try fixture.ledger("1000000201").map { "\($0.0):\($0.1)" } == ["clawback:300", "adjustment:300"])

            // Later the customer is refunded again.
            var again = reversed
            again.refund = JobFixture.refund(daysAgo: 1)
            fixture.simulator.update([.transaction(again)])
            let third = try await fixture.run()
            #expect(try fixture.verdicts(run: third.runID)["1000000200"] == "refunded")
            #expect(try fixture.ledger("1000000200").map { "\($0.0):\($0.1)" } == ["clawback:600", "reversal:-600", "clawback:600"])
            // And nothing more on a fourth run.
            let fourth = try await fixture.run()
            #expect(fourth.counters.newLedgerEntries == 0)
            await fixture.shutdown()
        }
    }

    @Test("shards 0..3 together equal one unsharded run")
    func shards() async throws {
        let records = (0..<80).map { index in
            JobFixture.purchase(String(1_000_000_300 + index), refund: index % 4 == 0 ? JobFixture.refund(type: index % 8 == 0 ? "REFUND_FULL" : "REFUND_PRORATED", percentage: 25_000) : nil)
        }
        func outcome(sharded: Bool) async throws -> (verdicts: [String: String], ledger: Set<String>) {
            try await TestPostgres.withScratchDatabaseAsync { database in
                let fixture = try await JobFixture(database: database, transactions: records)
                try fixture.grant(records)
                var verdicts: [String: String] = [:]
                if sharded {
                    var checked = 0
                    for shard in 0..<4 {
                        let outcome = try await fixture.run(fixture.scope(shard: (shard, 4)))
                        checked += outcome.counters.checked
                        verdicts.merge(try fixture.verdicts(run: outcome.runID)) { first, _ in first }
                    }
                    #expect(checked == 80)
                } else {
                    verdicts = try fixture.verdicts(run: try await fixture.run().runID)
                }
                let ledger = Set(try fixture.connection.query("SELECT transaction_id || ':' || kind || ':' || units FROM clawback.ledger").rows
                    .map { try $0.decode(String.self, at: 0) })
                await fixture.shutdown()
                return (verdicts, ledger)
            }
        }
        let whole = try await outcome(sharded: false)
        let split = try await outcome(sharded: true)
        #expect(whole.verdicts.count == 80)
        #expect(split.verdicts == whole.verdicts)
        #expect(split.ledger == whole.ledger)
        #expect(whole.ledger.count == 20)
    }

    @Test("a second run over the same scope is refused while the first holds the lock, naming the holder")
    func lock() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let fixture = try await JobFixture(database: database, transactions: [JobFixture.purchase("1000000400")])
            try fixture.grant([JobFixture.purchase("1000000400")])
            let holder = try TestPostgres.connect(database: database)
            try holder.query("SELECT pg_advisory_lock(\(fixture.scope().lockKey.value))")
            do {
                _ = try await fixture.run()
                Issue.record("the run went ahead while another held the lock")
            } catch RunFailure.locked(_, let description) {
                #expect(description.contains("database session pid \(holder.backendPID)"))
            }
            // Another scope (a dry run) is not blocked.
            #expect(try await fixture.run(fixture.scope(dryRun: true)).status == "succeeded")
            holder.close()
            try await TestPostgres.waitUntilUnlocked(fixture.scope().lockKey, database: database)
            #expect(try await fixture.run().status == "succeeded")
            await fixture.shutdown()
        }
    }

    @Test("an interrupted run is resumed by the next invocation, which checks only what is left")
    func resumeAfterInterruption() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let records = (0..<60).map { JobFixture.purchase(String(1_000_000_500 + $0), refund: $0 % 5 == 0 ? JobFixture.refund() : nil) }
            let fixture = try await JobFixture(database: database, transactions: records)
            try fixture.grant(records)
            let stop = StopSignal()
            let interrupting = StopAfter(limit: 20, inner: TransactionInfoGateway(apps: fixture.apps()), stop: stop)
            let first = try await fixture.run(gateway: interrupting, stop: stop)
            #expect(first.status == "interrupted")
            #expect(first.counters.checked >= 20 && first.counters.checked < 60)

            let second = try await fixture.run()
            #expect(second.runID == first.runID)
            #expect(second.resumed)
            #expect(second.attempt == 2)
            #expect(second.status == "succeeded")
            #expect(first.counters.checked + second.counters.checked == 60)
            // One request per grant, whichever attempt asked: the run's Apple figures add up its attempts.
            #expect(first.counters.appleRequests == first.counters.checked)
            #expect(second.counters.appleRequests == 60)
            #expect(try fixture.verdicts(run: first.runID).count == 60)
            #expect(try fixture.ledgerCount() == 12)
            await fixture.shutdown()
        }
    }

    @Test("an incomplete run (unverified grants) is finished by a rerun, which asks again only about those")
    func incompleteThenFinished() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            var other = JobFixture.purchase("1000000601", refund: JobFixture.refund())
            other.bundleId = "com.second.game"
            let records = [JobFixture.purchase("1000000600"), other]
            let fixture = try await JobFixture(database: database, transactions: records)
            try fixture.grant(records)
            let app = AppRecord(bundleId: "com.second.game", appAppleId: 2, issuerId: JobFixture.issuerID,
                keys: [.init(keyId: JobFixture.keyID, publicKey: fixture.key.publicKey.pemRepresentation)])
            fixture.simulator.update([.app(app)])
            let first = try await fixture.run()  // no credentials for com.second.game yet
            #expect(first.status == "incomplete")
            #expect(first.counters.unverified == 1)
            let second = try await fixture.run(apps: fixture.apps(bundles: [JobFixture.bundleID, "com.second.game"]))
            #expect(second.runID == first.runID)
            #expect(second.counters.checked == 1)
            #expect(second.status == "succeeded")
            #expect(try fixture.verdicts(run: first.runID) == ["1000000600": "ok", "1000000601": "refunded"])
            await fixture.shutdown()
        }
    }
}

/// A gateway that asks the run to stop after `limit` answers (a SIGTERM mid-run).
final class StopAfter: AppleGateway {
    let limit: Int
    let inner: any AppleGateway
    let stop: StopSignal
    private let count = Atomic<Int>(0)

    init(limit: Int, inner: any AppleGateway, stop: StopSignal) {
        self.limit = limit
        self.inner = inner
        self.stop = stop
    }

    var statistics: AppStoreAPICounters { inner.statistics }

    func answer(for grant: Grant) async -> AppleAnswer {
        let answer = await inner.answer(for: grant)
        if count.add(1, ordering: .relaxed).newValue == limit { stop.request() }
        return answer
    }
}

@Suite("clawback run --strategy notifications")
struct NotificationStrategyTests {
    static func world() -> [TransactionRecord] {
        var records = (0..<40).map { JobFixture.purchase(String(1_000_000_700 + $0)) }
        for index in 0..<8 { records[index].refund = JobFixture.refund(daysAgo: 10 - Double(index)) }
        // Two refunds Apple never notified (the app's notification URL was down).
        for index in 8..<10 {
            records[index].refund = JobFixture.refund(daysAgo: 5)
            records[index].refund?.notified = false
        }
        records[10].refund = JobFixture.refund(daysAgo: 20, reversedDaysAgo: 2)
        return records
    }

    func run(audit: Double, in database: String) async throws -> (outcome: RunOutcome, fixture: JobFixture) {
        let fixture = try await JobFixture(database: database, transactions: Self.world())
        try fixture.grant(Self.world())
        let gateway = NotificationFeedGateway(apps: fixture.apps(), auditShare: audit, auditSalt: "test", logger: .init(label: "test"))
        let scope = RunScope(selection: GrantSelection(window: fixture.window), strategy: "notifications", dryRun: false)
        return (try await fixture.run(scope, gateway: gateway), fixture)
    }

    @Test("refunds come from the verified feed; Apple calls scale with refunds, not grants")
    func feed() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let (outcome, fixture) = try await run(audit: 0, in: database)
            let verdicts = try fixture.verdicts(run: outcome.runID)
            #expect((0..<8).allSatisfy { verdicts[String(1_000_000_700 + $0)] == "refunded" })
            #expect(verdicts["1000000710"] == "ok")  // refunded, then reversed before any clawback
            // Unnotified refunds are invisible to this strategy without an audit.
            #expect(verdicts["1000000708"] == "ok" && verdicts["1000000709"] == "ok")
            // Two types × two environments, one page each: 4 requests for 40 grants.
            #expect(outcome.counters.appleRequests == 4)
            #expect(try fixture.ledgerCount() == 8)
            await fixture.shutdown()
        }
    }

    @Test("the audit sample finds the refunds the feed missed, counts them, and claws them back")
    func audit() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let (outcome, fixture) = try await run(audit: 1, in: database)
            #expect(outcome.counters.auditedGrants == 40)
            #expect(outcome.counters.missedNotifications == 2)
            let verdicts = try fixture.verdicts(run: outcome.runID)
            #expect(verdicts["1000000708"] == "refunded" && verdicts["1000000709"] == "refunded")
            #expect(try fixture.ledgerCount() == 10)
            await fixture.shutdown()
        }
    }
}

@Suite("clawback run --strategy receipt")
struct ReceiptStrategyTests {
    static func receipt(_ id: String) -> String {
        Base64.encodeStandard(Array("{\n\"purchase-info\" = \"\(Base64.encodeStandard(Array("{\"transaction-id\" = \"\(id)\";}".utf8)))\";\n}".utf8))
    }

    @Test("receipts show refunds of non-consumables; finished consumables stay unverified, with the reason; grants without a receipt ask per transaction")
    func receipts() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            var premium = JobFixture.purchase("1000000800", product: "premium", refund: JobFixture.refund())
            premium.type = "Non-Consumable"
            var unlock = JobFixture.purchase("1000000801", product: "unlock")
            unlock.type = "Non-Consumable"
            let gems = JobFixture.purchase("1000000802", refund: JobFixture.refund())
            let modern = JobFixture.purchase("1000000803", refund: JobFixture.refund())
            let records = [premium, unlock, gems, modern]
            let fixture = try await JobFixture(database: database, transactions: records)
            try fixture.grant(records)
            for id in ["1000000800", "1000000801", "1000000802"] {
                try fixture.connection.execute("UPDATE clawback.grants SET receipt = \(Self.receipt(id)) WHERE transaction_id = \(id)")
            }
            let scope = RunScope(selection: GrantSelection(window: fixture.window), strategy: "receipt", dryRun: false)
            let outcome = try await fixture.run(scope, gateway: ReceiptGateway(apps: fixture.apps()))
            let verdicts = try fixture.verdicts(run: outcome.runID)
            #expect(verdicts == ["1000000800": "refunded", "1000000801": "ok", "1000000802": "unverified", "1000000803": "refunded"])
            let detail = try fixture.connection.query("SELECT detail FROM clawback.checks WHERE transaction_id = '1000000802'").first?
                .decode(String.self, at: 0)
            #expect(detail?.contains("finished consumables leave receipts") == true)
            #expect(outcome.status == "incomplete")
            await fixture.shutdown()
        }
    }
}

@Suite("clawback run --strategy refund-history")
struct RefundHistoryStrategyTests {
    static func customerPurchase(_ id: String, customer: String, refund: RefundRecord? = nil) -> TransactionRecord {
        var record = JobFixture.purchase(id, refund: refund)
        record.customerId = customer
        return record
    }

    func scope(_ fixture: JobFixture) -> RunScope {
        RunScope(selection: GrantSelection(window: fixture.window), strategy: "refund-history", dryRun: false)
    }

    func gateway(_ fixture: JobFixture, _ database: String) throws -> RefundHistoryGateway {
        RefundHistoryGateway(apps: fixture.apps(), database: try DatabaseSession(try TestPostgres.configuration(database: database)))
    }

    @Test("one request per customer; revisions stored; the next run sees only new refunds and keeps the earlier clawback")
    func incremental() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let records = [
                Self.customerPurchase("1000000900", customer: "alice", refund: JobFixture.refund(daysAgo: 10)),
                Self.customerPurchase("1000000901", customer: "alice"), Self.customerPurchase("1000000902", customer: "alice"),
                Self.customerPurchase("1000000903", customer: "bob"), Self.customerPurchase("1000000904", customer: "bob"),
            ]
            let fixture = try await JobFixture(database: database, transactions: records)
            try fixture.grant(records)
            let first = try await fixture.run(scope(fixture), gateway: try gateway(fixture, database))
            #expect(try fixture.verdicts(run: first.runID) == [
                "1000000900": "refunded", "1000000901": "ok", "1000000902": "ok", "1000000903": "ok", "1000000904": "ok",
            ])
            #expect(first.counters.appleRequests == 2)  // alice and bob, one page each
            #expect(try fixture.connection.query("SELECT count(*) FROM clawback.refund_history_revisions").first?.decode(Int.self, at: 0) == 2)

            var later = records[1]
            later.refund = JobFixture.refund(daysAgo: 1)
            fixture.simulator.update([.transaction(later)])
            let second = try await fixture.run(scope(fixture), gateway: try gateway(fixture, database))
            let verdicts = try fixture.verdicts(run: second.runID)
            #expect(verdicts["1000000901"] == "refunded")
            #expect(verdicts["1000000900"] == "refunded")  // not in the increment, the clawback stands
            #expect(second.counters.newLedgerEntries == 1)
            #expect(try fixture.ledger("1000000900").count == 1)
            await fixture.shutdown()
        }
    }

    @Test("with a complete history, a clawed-back grant no longer listed was reversed")
    func reversalFromCompleteHistory() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let refunded = Self.customerPurchase("1000000950", customer: "carol", refund: JobFixture.refund(daysAgo: 10))
            let fixture = try await JobFixture(database: database, transactions: [refunded])
            try fixture.grant([refunded])
            _ = try await fixture.run()  // transaction-info claws it back
            var reversed = refunded
            reversed.refund?.reversedDate = Date(timeIntervalSinceNow: -3600)
            fixture.simulator.update([.transaction(reversed)])
            let outcome = try await fixture.run(scope(fixture), gateway: try gateway(fixture, database))
            #expect(try fixture.verdicts(run: outcome.runID)["1000000950"] == "refund_reversed")
            #expect(try fixture.ledger("1000000950").map(\.0) == ["clawback", "reversal"])
            await fixture.shutdown()
        }
    }
}
