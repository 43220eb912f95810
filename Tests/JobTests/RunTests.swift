import AppStore
import AppStoreSimulator
import Foundation
import Postgres
import Reconciliation
import Storage
import Synchronization
import TestSupport
import Testing

@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

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
            try await JobFixture.with(database: database, transactions: records) { fixture in
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
                #expect(outcome.status == .incomplete)  // one grant stays unverified
                // Every new entry was announced, after commit, with its id.
                let announced = try listener.notifications()
                let entryIDs = try fixture.connection.query("SELECT entry_id::text FROM clawback.ledger ORDER BY entry_id").rows
                    .map { try $0.decode(String.self, at: 0) }
                #expect(announced.map(\.payload).sorted() == entryIDs.sorted())
                #expect(announced.allSatisfy { $0.channel == "clawback" })
                let verdicts = try fixture.verdicts(run: outcome.runID)
                #expect(
                    verdicts == [
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
            }
        }
    }

    @Test("a rerun writes no entry; a dry run writes none either")
    func idempotentAndDry() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let records = (0..<30).map { index in
                JobFixture.purchase(String(1_000_000_100 + index), refund: index % 3 == 0 ? JobFixture.refund() : nil)
            }
            try await JobFixture.with(database: database, transactions: records) { fixture in
                try fixture.grant(records)
                let dry = try await fixture.run(fixture.scope(dryRun: true))
                #expect(dry.status == .succeeded)
                #expect(try fixture.ledgerCount() == 0)
                #expect(dry.counters.actions[.clawbackCreated] == 10)  // what it would have done

                let first = try await fixture.run()
                #expect(first.counters.newLedgerEntries == 10)
                let second = try await fixture.run()
                #expect(second.runID != first.runID)
                #expect(second.counters.newLedgerEntries == 0)
                #expect(second.counters.actions[.alreadyRecorded] == 10)
                #expect(try fixture.ledgerCount() == 10)
            }
        }
    }

    @Test("a refund, its reversal, then a new refund; and a prorated refund that becomes full")
    func reversalThenNewRefund() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let refunded = JobFixture.purchase("1000000200", refund: JobFixture.refund(daysAgo: 20))
            let prorated = JobFixture.purchase("1000000201", refund: JobFixture.refund(daysAgo: 20, type: "REFUND_PRORATED", percentage: 50_000))
            try await JobFixture.with(database: database, transactions: [refunded, prorated]) { fixture in
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
            }
        }
    }

    @Test("shards 0..3 together equal one unsharded run")
    func shards() async throws {
        let records = (0..<80).map { index in
            JobFixture.purchase(
                String(1_000_000_300 + index),
                refund: index % 4 == 0 ? JobFixture.refund(type: index % 8 == 0 ? "REFUND_FULL" : "REFUND_PRORATED", percentage: 25_000) : nil)
        }
        func outcome(sharded: Bool) async throws -> (verdicts: [String: String], ledger: Set<String>) {
            try await TestPostgres.withScratchDatabaseAsync { database in
                try await JobFixture.with(database: database, transactions: records) { fixture in
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
                    let ledger = Set(
                        try fixture.connection.query("SELECT transaction_id || ':' || kind || ':' || units FROM clawback.ledger").rows
                            .map { try $0.decode(String.self, at: 0) })
                    return (verdicts, ledger)
                }
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
            try await JobFixture.with(database: database, transactions: [JobFixture.purchase("1000000400")]) { fixture in
                try fixture.grant([JobFixture.purchase("1000000400")])
                let holder = try TestPostgres.connect(database: database)
                try holder.query("SELECT pg_advisory_lock(\(fixture.scope().lockKey.value))")
                do {
                    _ = try await fixture.run()
                    Issue.record("the run went ahead while another held the lock")
                } catch CheckingFailure.locked(_, let description) {
                    #expect(description.contains("database session pid \(holder.backendPID)"))
                }
                // Another scope (a dry run) is not blocked.
                #expect(try await fixture.run(fixture.scope(dryRun: true)).status == .succeeded)
                holder.close()
                try await TestPostgres.waitUntilUnlocked(fixture.scope().lockKey, database: database)
                #expect(try await fixture.run().status == .succeeded)
            }
        }
    }

    @Test("an interrupted run is resumed by the next invocation, which checks only what is left")
    func resumeAfterInterruption() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let records = (0..<60).map { JobFixture.purchase(String(1_000_000_500 + $0), refund: $0 % 5 == 0 ? JobFixture.refund() : nil) }
            try await JobFixture.with(database: database, transactions: records) { fixture in
                try fixture.grant(records)
                let stop = StopSignal()
                let interrupting = StopAfter(limit: 20, inner: TransactionInfoGateway(apps: fixture.apps()), stop: stop)
                let first = try await fixture.run(gateway: interrupting, stop: stop)
                #expect(first.status == .interrupted)
                #expect(first.counters.checked >= 20 && first.counters.checked < 60)

                let second = try await fixture.run()
                #expect(second.runID == first.runID)
                #expect(second.resumed)
                #expect(second.attempt == 2)
                #expect(second.status == .succeeded)
                #expect(first.counters.checked + second.counters.checked == 60)
                // One request per grant, whichever attempt asked: the run's Apple figures add up its attempts.
                #expect(first.counters.storeRequests == first.counters.checked)
                #expect(second.counters.storeRequests == 60)
                #expect(try fixture.verdicts(run: first.runID).count == 60)
                #expect(try fixture.ledgerCount() == 12)
            }
        }
    }

    @Test("an incomplete run (unverified grants) is finished by a rerun, which asks again only about those")
    func incompleteThenFinished() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            var other = JobFixture.purchase("1000000601", refund: JobFixture.refund())
            other.bundleId = "com.second.game"
            let records = [JobFixture.purchase("1000000600"), other]
            try await JobFixture.with(database: database, transactions: records) { fixture in
                try fixture.grant(records)
                let app = AppRecord(
                    bundleId: "com.second.game", appAppleId: 2, issuerId: JobFixture.issuerID,
                    keys: [.init(keyId: JobFixture.keyID, publicKey: fixture.key.publicKey.pemRepresentation)])
                fixture.simulator.update([.app(app)])
                let first = try await fixture.run()  // no credentials for com.second.game yet
                #expect(first.status == .incomplete)
                #expect(first.counters.unverified == 1)
                let second = try await fixture.run(apps: fixture.apps(bundles: [JobFixture.bundleID, "com.second.game"]))
                #expect(second.runID == first.runID)
                #expect(second.counters.checked == 1)
                #expect(second.status == .succeeded)
                #expect(try fixture.verdicts(run: first.runID) == ["1000000600": "ok", "1000000601": "refunded"])
            }
        }
    }
}

/// Asks the run to stop once `limit` grants were answered, with a request or from the feed in line (a
/// SIGTERM mid-run, wherever it lands).
final class StopAfter: StoreGateway {
    let limit: Int
    let inner: any StoreGateway
    let stop: StopSignal
    private let count = Atomic<Int>(0)

    init(limit: Int, inner: any StoreGateway, stop: StopSignal) {
        self.limit = limit
        self.inner = inner
        self.stop = stop
    }

    var statistics: AppStoreAPICounters { inner.statistics }
    func prepare(_ context: RunContext) async throws { try await inner.prepare(context) }
    func contribute(to counters: inout RunCounters) { inner.contribute(to: &counters) }
    func finish() async throws { try await inner.finish() }

    func localAnswer(for grant: Grant, ledger: LedgerHistory) -> StoreAnswer? {
        let answer = inner.localAnswer(for: grant, ledger: ledger)
        if answer != nil { counted() }
        return answer
    }

    func answer(for grant: Grant, ledger: LedgerHistory) async -> StoreAnswer {
        let answer = await inner.answer(for: grant, ledger: ledger)
        counted()
        return answer
    }

    private func counted() {
        if count.add(1, ordering: .relaxed).newValue == limit { stop.request() }
    }
}

@Suite("clawback run --strategy notifications")
struct NotificationStrategyTests {
    /// 40 purchases, 10 refunded (two of them, when `unnotified`, never notified: no notification URL then),
    /// one refunded and reversed.
    static func world(unnotified: Bool) -> [TransactionRecord] {
        var records = (0..<40).map { JobFixture.purchase(String(1_000_000_700 + $0)) }
        for index in 0..<8 { records[index].refund = JobFixture.refund(daysAgo: 10 - Double(index)) }
        for index in 8..<10 {
            records[index].refund = JobFixture.refund(daysAgo: 5)
            if unnotified { records[index].refund?.notified = false }
        }
        records[10].refund = JobFixture.refund(daysAgo: 20, reversedDaysAgo: 2)
        return records
    }

    /// Runs the notifications strategy over the world in a fresh database; `check` looks at the outcome while
    /// the fixture is up.
    func run(audit: Double, unnotified: Bool, _ check: (CheckingOutcome, JobFixture) throws -> Void) async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            try await JobFixture.with(database: database, transactions: Self.world(unnotified: unnotified)) { fixture in
                try fixture.grant(Self.world(unnotified: unnotified))
                let gateway = NotificationFeedGateway(apps: fixture.apps(), auditShare: audit, auditSalt: "test", logger: .init(label: "test"))
                let scope = RunScope(selection: GrantSelection(window: fixture.window), strategy: .notifications, dryRun: false)
                try check(try await fixture.run(scope, gateway: gateway), fixture)
            }
        }
    }

    @Test("a feed the audit confirms answers every other grant: refunds from the feed, the rest no refund reported; calls scale with refunds")
    func feed() async throws {
        try await run(audit: 0.25, unnotified: false) { outcome, fixture in
            let verdicts = try fixture.verdicts(run: outcome.runID)
            #expect((0..<10).allSatisfy { verdicts[String(1_000_000_700 + $0)] == "refunded" })
            #expect(verdicts["1000000710"] == "ok")  // refunded, then reversed before any clawback: Apple's latest word
            let audited = outcome.counters.auditedGrants
            #expect(audited > 0 && audited < 20)
            // The rest: the audited ones are ok (Apple confirmed them), the others no refund reported, never ok.
            #expect(verdicts.values.filter { $0 == "ok" || $0 == "no_refund_reported" }.count == 30)
            #expect(verdicts.values.filter { $0 == "no_refund_reported" }.count >= 30 - 1 - audited)
            // Three types × two environments, one page each, and the sample: not one request per grant.
            #expect(outcome.counters.storeRequests == 6 + audited)
            #expect(outcome.counters.missedNotifications == 0)
            #expect(try fixture.ledgerCount() == 10)
        }
    }

    @Test("the audit catches a feed that misses refunds: it counts them, trusts nothing the feed says, and every grant is decided per transaction")
    func audit() async throws {
        try await run(audit: 1, unnotified: true) { outcome, fixture in
            #expect(outcome.counters.auditedGrants == 40)
            #expect(outcome.counters.missedNotifications == 2)
            let verdicts = try fixture.verdicts(run: outcome.runID)
            #expect(verdicts["1000000708"] == "refunded" && verdicts["1000000709"] == "refunded")
            #expect(!verdicts.values.contains("no_refund_reported"))
            #expect(try fixture.ledgerCount() == 10)
        }
    }

    @Test("without an audit sample no feed is trusted: grants are asked per transaction, never answered by silence")
    func noAudit() async throws {
        try await run(audit: 0, unnotified: true) { outcome, fixture in
            let verdicts = try fixture.verdicts(run: outcome.runID)
            #expect(!verdicts.values.contains("no_refund_reported"))
            #expect(verdicts["1000000708"] == "refunded")
            #expect(outcome.counters.storeRequests == 6 + 40)
        }
    }
}

@Suite("clawback run --strategy notifications fails closed")
struct NotificationStrategyCoverageTests {
    /// The notifications strategy with exactly `sample` audited (the evidence a feed is trusted on).
    func notifications(_ fixture: JobFixture, sample: Set<String>) -> (RunScope, NotificationFeedGateway) {
        (
            RunScope(selection: GrantSelection(window: fixture.window), strategy: .notifications, dryRun: false),
            NotificationFeedGateway(apps: fixture.apps(), sample: sample, logger: .init(label: "test"))
        )
    }

    @Test("what the feed cannot cover is asked per transaction: refunds before the sandbox's 30 days, open clawbacks, REVOKE")
    func uncovered() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            // A sandbox purchase refunded 40 days ago: Apple keeps 30 days of sandbox notifications.
            let oldSandbox = JobFixture.purchase("1000001000", daysAgo: 45, refund: JobFixture.refund(daysAgo: 40), environment: "Sandbox")
            // A refund Apple never notified, clawed back earlier by a transaction-info run.
            var unnotified = JobFixture.purchase("1000001001", refund: JobFixture.refund(daysAgo: 5))
            unnotified.refund?.notified = false
            // A Family Sharing revocation arrives as REVOKE, not REFUND.
            let revoked = JobFixture.purchase("1000001002", refund: JobFixture.refund(daysAgo: 4, type: "FAMILY_REVOKE"))
            let clean = JobFixture.purchase("1000001003")
            let audited = JobFixture.purchase("1000001004")
            let records = [oldSandbox, unnotified, revoked, clean, audited]
            try await JobFixture.with(database: database, transactions: records) { fixture in
                try fixture.grant(records)
                _ = try await fixture.run(fixture.scope(player: "player-c-1000001001"))
                let (scope, gateway) = notifications(fixture, sample: ["1000001004"])
                let outcome = try await fixture.run(scope, gateway: gateway)
                #expect(
                    try fixture.verdicts(run: outcome.runID) == [
                        "1000001000": "refunded", "1000001001": "refunded", "1000001002": "revoked", "1000001003": "no_refund_reported",
                        "1000001004": "ok",
                    ])
                #expect(gateway.feedCounts.askedPerTransaction == 2)
                #expect(try fixture.ledger("1000001001").count == 1)
            }
        }
    }

    @Test("a grant of an app with no credentials is unverified, not answered by silence")
    func unconfiguredBundle() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let record = JobFixture.purchase("1000001010")
            try await JobFixture.with(database: database, transactions: [record]) { fixture in
                try fixture.grant([record], overrides: ["1000001010": { $0.bundle_id = "com.studio.other" }])
                let (scope, gateway) = notifications(fixture, sample: ["1000001010"])
                let outcome = try await fixture.run(scope, gateway: gateway)
                #expect(try fixture.verdicts(run: outcome.runID) == ["1000001010": "unverified"])
                #expect(outcome.status == .incomplete)
            }
        }
    }

    @Test("production notifications are checked against the app's Apple ID: another app's are rejected, and their grants asked per transaction")
    func appAppleID() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let records = [JobFixture.purchase("1000001030", refund: JobFixture.refund(daysAgo: 3)), JobFixture.purchase("1000001031")]
            try await JobFixture.with(database: database, transactions: records) { fixture in
                try fixture.grant(records)
                var apps = fixture.apps()
                apps.appAppleIDs = [JobFixture.bundleID: 2]  // the simulator's app is 1
                let gateway = NotificationFeedGateway(apps: apps, sample: ["1000001031"], logger: .init(label: "test"))
                let scope = RunScope(selection: GrantSelection(window: fixture.window), strategy: .notifications, dryRun: false)
                let outcome = try await fixture.run(scope, gateway: gateway)
                #expect(outcome.counters.rejectedNotifications == 1)
                #expect(gateway.feedCounts.askedPerTransaction == 1)
                #expect(try fixture.verdicts(run: outcome.runID) == ["1000001030": "refunded", "1000001031": "ok"])
            }
        }
    }

    @Test("notifications that fail verification never read as silence: their grants are asked per transaction", arguments: ["tampered", "wrongRoot"])
    func rejectedNotifications(kind: String) async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let records = [
                JobFixture.purchase("1000001020", refund: JobFixture.refund(daysAgo: 3)), JobFixture.purchase("1000001021"),
                JobFixture.purchase("1000001022"),
            ]
            try await JobFixture.with(database: database, transactions: records) { fixture in
                try fixture.grant(records)
                var faults = FaultPlan()
                faults.hostileShare = 1
                faults.hostileKind = kind
                fixture.simulator.setFaults(faults)
                let (scope, gateway) = notifications(fixture, sample: ["1000001022"])
                let outcome = try await fixture.run(scope, gateway: gateway)
                // Every signed answer is hostile: the rejected notification's grant and the sample are unverified, so
                // no feed is trusted and nothing is concluded.
                #expect(
                    try fixture.verdicts(run: outcome.runID) == ["1000001020": "unverified", "1000001021": "unverified", "1000001022": "unverified"])
                #expect(outcome.counters.rejectedNotifications >= 1)
                #expect(try fixture.ledgerCount() == 0)
                fixture.simulator.setFaults(.none)
                let rerun = try await fixture.run(scope, gateway: notifications(fixture, sample: ["1000001022"]).1)
                #expect(try fixture.verdicts(run: rerun.runID) == ["1000001020": "refunded", "1000001021": "no_refund_reported", "1000001022": "ok"])
            }
        }
    }
}

@Suite("Apple refuses the credentials in one environment")
struct RefusedEnvironmentTests {
    @Test(
        "production answers 401: its grants are unverified under every strategy, never unknown; the sandbox's are decided",
        // The daily run's refusal is a failed run instead (DailyRunTests): it decides nothing from a partial feed.
        arguments: StoreCatalog.strategies.filter { $0 != .receipt && $0 != .notifiedRefunds && $0.store == .appStore })
    func productionRefuses(strategy: RunStrategy) async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let records = [
                JobFixture.purchase("1000001100", refund: JobFixture.refund(daysAgo: 3)), JobFixture.purchase("1000001101"),
                JobFixture.purchase("1000001102", environment: "Sandbox"),
            ]
            try await JobFixture.with(database: database, transactions: records) { fixture in
                try fixture.grant(records)
                var faults = FaultPlan()
                faults.unauthorizedEnvironments = ["Production"]
                fixture.simulator.setFaults(faults)
                let scope = RunScope(selection: GrantSelection(window: fixture.window), strategy: strategy, dryRun: false)
                let gateway = AppStoreDriver.gateway(strategy, apps: fixture.apps(), auditShare: 0, auditSalt: "test", logger: .init(label: "test"))
                let outcome = try await fixture.run(scope, gateway: gateway)
                let verdicts = try fixture.verdicts(run: outcome.runID)
                #expect(verdicts["1000001100"] == "unverified" && verdicts["1000001101"] == "unverified")
                #expect(["ok", "no_refund_reported"].contains(verdicts["1000001102"]))
                #expect(outcome.status == .incomplete)
                #expect(try fixture.ledgerCount() == 0)
            }
        }
    }
}

@Suite("clawback run --strategy receipt")
struct ReceiptStrategyTests {
    static func receipt(_ id: String) -> String {
        Base64.encodeStandard(Array("{\n\"purchase-info\" = \"\(Base64.encodeStandard(Array("{\"transaction-id\" = \"\(id)\";}".utf8)))\";\n}".utf8))
    }

    @Test(
        "with API credentials every grant is decided by Get Transaction Info; with only a shared secret nothing is, and the reason says what the receipt showed"
    )
    func receipts() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            var premium = JobFixture.purchase("1000000800", product: "premium", refund: JobFixture.refund())
            premium.type = "Non-Consumable"
            var unlock = JobFixture.purchase("1000000801", product: "unlock")
            unlock.type = "Non-Consumable"
            let gems = JobFixture.purchase("1000000802", refund: JobFixture.refund())
            let modern = JobFixture.purchase("1000000803", refund: JobFixture.refund())
            let records = [premium, unlock, gems, modern]
            try await JobFixture.with(database: database, transactions: records) { fixture in
                try fixture.grant(records)
                for id in ["1000000800", "1000000801", "1000000802"] {
                    try fixture.connection.execute("UPDATE clawback.grants SET receipt = \(Self.receipt(id)) WHERE transaction_id = \(id)")
                }
                let scope = RunScope(selection: GrantSelection(window: fixture.window), strategy: .receipt, dryRun: false)
                let sharedSecretOnly = try await fixture.run(scope, gateway: ReceiptGateway(apps: fixture.apps(bundles: [])))
                #expect(try fixture.verdicts(run: sharedSecretOnly.runID).values.allSatisfy { $0 == "unverified" })
                let details = try fixture.connection.query(
                    "SELECT transaction_id, detail FROM clawback.checks WHERE run_id = \(sharedSecretOnly.runID) ORDER BY transaction_id"
                ).rows.map { try $0.decode(String.self, at: 1) }
                #expect(details[0].contains("shows a cancellation"))
                #expect(details[1].contains("never shows for a consumable"))
                #expect(details[2].contains("finished consumables leave receipts"))
                #expect(details[3].contains("kept no receipt"))
                #expect(try fixture.ledgerCount() == 0)

                let outcome = try await fixture.run(scope, gateway: ReceiptGateway(apps: fixture.apps()))
                #expect(outcome.runID == sharedSecretOnly.runID)  // the incomplete run, finished
                #expect(
                    try fixture.verdicts(run: outcome.runID) == [
                        "1000000800": "refunded", "1000000801": "ok", "1000000802": "refunded", "1000000803": "refunded",
                    ])
                #expect(outcome.status == .succeeded)
            }
        }
    }
}

@Suite("clawback run --strategy customer-history")
struct CustomerHistoryStrategyTests {
    static func customerPurchase(_ id: String, customer: String, refund: RefundRecord? = nil, token: String? = nil) -> TransactionRecord {
        var record = JobFixture.purchase(id, refund: refund)
        record.customerId = customer
        record.appAccountToken = token
        return record
    }

    func scope(_ fixture: JobFixture) -> RunScope {
        RunScope(selection: GrantSelection(window: fixture.window), strategy: .customerHistory, dryRun: false)
    }

    @Test("one history per Apple account decides every grant it lists, as Get Transaction Info would; app account tokens agree")
    func perAccount() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let token = UUID().uuidString.lowercased()
            let records = [
                Self.customerPurchase("1000000900", customer: "alice", refund: JobFixture.refund(daysAgo: 10), token: token),
                Self.customerPurchase("1000000901", customer: "alice", token: token),
                Self.customerPurchase("1000000902", customer: "alice", token: token),
                Self.customerPurchase("1000000903", customer: "bob"), Self.customerPurchase("1000000904", customer: "bob"),
            ]
            try await JobFixture.with(database: database, transactions: records) { fixture in
                try fixture.grant(
                    records,
                    overrides: Dictionary(
                        uniqueKeysWithValues: records.map { record in
                            (record.transactionId, { (grant: inout GeneratedGrant) in grant.app_account_token = record.appAccountToken })
                        }))
                let outcome = try await fixture.run(scope(fixture), gateway: CustomerHistoryGateway(apps: fixture.apps()))
                #expect(
                    try fixture.verdicts(run: outcome.runID) == [
                        "1000000900": "refunded", "1000000901": "ok", "1000000902": "ok", "1000000903": "ok", "1000000904": "ok",
                    ])
                #expect(outcome.counters.storeRequests == 2)  // alice and bob, one page each
                #expect(try fixture.ledgerCount() == 1)
            }
        }
    }

    @Test("a player paying from two Apple accounts: the second account's grants get their own history, and its refund is found")
    func playerWithTwoAppleAccounts() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let phone = Self.customerPurchase("1000000910", customer: "dana-phone")
            let tablet = Self.customerPurchase("1000000911", customer: "dana-tablet", refund: JobFixture.refund(daysAgo: 3))
            let tabletToo = Self.customerPurchase("1000000912", customer: "dana-tablet")
            let records = [phone, tablet, tabletToo]
            try await JobFixture.with(database: database, transactions: records) { fixture in
                // One game account for all three purchases.
                try fixture.grant(
                    records,
                    overrides: Dictionary(
                        uniqueKeysWithValues: records.map { record in
                            (record.transactionId, { (grant: inout GeneratedGrant) in grant.player_id = "player-dana" })
                        }))
                let outcome = try await fixture.run(scope(fixture), gateway: CustomerHistoryGateway(apps: fixture.apps()))
                #expect(try fixture.verdicts(run: outcome.runID) == ["1000000910": "ok", "1000000911": "refunded", "1000000912": "ok"])
                #expect(outcome.counters.storeRequests == 2)
            }
        }
    }

    @Test("a grant no history lists is asked per transaction: unknown to Apple, or a production grant Apple has in the sandbox")
    func notListed() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let known = Self.customerPurchase("1000000920", customer: "erin")
            let sandboxOnly = Self.customerPurchase("1000000921", customer: "erin-sandbox")
            var sandboxRecord = sandboxOnly
            sandboxRecord.environment = "Sandbox"
            try await JobFixture.with(database: database, transactions: [known, sandboxRecord]) { fixture in
                let ghost = JobFixture.purchase("1000000929")
                try fixture.grant(
                    [known, sandboxOnly, ghost],
                    overrides: [
                        "1000000921": { $0.player_id = "player-erin" }, "1000000929": { $0.player_id = "player-erin" },
                    ])
                let outcome = try await fixture.run(scope(fixture), gateway: CustomerHistoryGateway(apps: fixture.apps()))
                #expect(try fixture.verdicts(run: outcome.runID) == ["1000000920": "ok", "1000000921": "mismatch", "1000000929": "unknown_to_apple"])
            }
        }
    }

    @Test("a clawed-back grant whose history shows no revocation any more was reversed")
    func reversalFromHistory() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let refunded = Self.customerPurchase("1000000950", customer: "carol", refund: JobFixture.refund(daysAgo: 10))
            let other = Self.customerPurchase("1000000951", customer: "carol")
            try await JobFixture.with(database: database, transactions: [refunded, other]) { fixture in
                try fixture.grant([refunded, other])
                _ = try await fixture.run()  // transaction-info claws it back
                var reversed = refunded
                reversed.refund?.reversedDate = Date(timeIntervalSinceNow: -3600)
                fixture.simulator.update([.transaction(reversed)])
                let outcome = try await fixture.run(scope(fixture), gateway: CustomerHistoryGateway(apps: fixture.apps()))
                #expect(try fixture.verdicts(run: outcome.runID) == ["1000000950": "refund_reversed", "1000000951": "ok"])
                #expect(try fixture.ledger("1000000950").map(\.0) == ["clawback", "reversal"])
            }
        }
    }
}
