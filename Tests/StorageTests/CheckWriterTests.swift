import Foundation
import Postgres
import Reconciliation
import Storage
import TestSupport
import Testing

@Suite("Writing checks")
struct CheckWriterTests {
    @Test("Apple's text with a NUL byte (an error message, a revocation type) is stored, with U+FFFD in its place")
    func nulFromApple() throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            let window = ReconciliationWindow.monthsBefore(Date(), months: 3)
            let run = try RunStore.create(
                RunScope(selection: GrantSelection(window: window), strategy: .transactionInfo, dryRun: false),
                origin: RunOrigin(triggeredBy: "test", host: "localhost", arguments: []), on: connection.storage)
            let grant = Grant(
                transactionID: "2000000123", bundleID: "com.studio.game", productID: "gems_600", playerID: "p1",
                unitsGranted: 600, purchasedAt: window.start)
            let unverified = CheckRecord(
                grant: grant,
                decision: Reconciler.decide(grant: grant, answer: .unverified(reason: "HTTP 500: Apple says \u{0}oops"), ledger: .init()),
                facts: nil)
            var other = grant
            other.transactionID = "2000000124"
            let facts = StoreStatement(
                transactionID: "2000000124", environment: .production, bundleID: "com.studio.game", productID: "gems_600",
                quantity: 1, revocationDate: window.start, refundKind: .unknown("REFUND_\u{0}NEW"))
            let review = CheckRecord(
                grant: other, decision: Reconciler.decide(grant: other, answer: .verified(facts), ledger: .init()),
                facts: facts)
            let outcome = try CheckWriter.write([unverified, review], runID: run.runID, dryRun: false, counters: "{}", on: connection.storage)
            #expect(outcome.newEntryIDs.count == 1)
            let details = try connection.query("SELECT detail, revocation_type FROM clawback.checks ORDER BY transaction_id").rows
            #expect(try details[0].decode(String.self, at: 0) == "HTTP 500: Apple says \u{FFFD}oops")
            #expect(try details[1].decode(String.self, at: 1) == "REFUND_\u{FFFD}NEW")
            let key = try connection.query("SELECT idempotency_key FROM clawback.ledger").first?.decode(String.self, at: 0)
            #expect(key?.contains("\u{FFFD}") == true)
        }
    }

    @Test("a decision made on a ledger another run has written to since is not written: it is retried, never a second clawback")
    func staleLedger() throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            let window = ReconciliationWindow.monthsBefore(Date(), months: 3)
            let scope = RunScope(selection: GrantSelection(window: window), strategy: .transactionInfo, dryRun: false)
            let origin = RunOrigin(triggeredBy: "test", host: "localhost", arguments: [])
            let grant = Grant(
                transactionID: "2000000500", bundleID: "com.studio.game", productID: "gems_600", playerID: "p1",
                unitsGranted: 600, purchasedAt: window.start)
            func refund(at milliseconds: Double) -> CheckRecord {
                let facts = StoreStatement(
                    transactionID: grant.transactionID, environment: .production, bundleID: "com.studio.game",
                    productID: "gems_600", quantity: 1, revocationDate: Date(timeIntervalSince1970: milliseconds / 1000),
                    refundKind: .full)
                return CheckRecord(
                    grant: grant, decision: Reconciler.decide(grant: grant, answer: .verified(facts), ledger: .init()),
                    facts: facts, ledgerEntriesSeen: 0)
            }
            // Two runs read an empty ledger; Apple's revocation date moved between their requests.
            let first = try RunStore.create(scope, origin: origin, on: connection.storage)
            let written = try CheckWriter.write(
                [refund(at: 1_790_000_000_000)], runID: first.runID, dryRun: false, counters: "{}", on: connection.storage)
            #expect(written.newEntryIDs.count == 1)
            let narrowed = RunScope(
                selection: GrantSelection(window: window, transactionID: grant.transactionID), strategy: .transactionInfo,
                dryRun: false)
            let second = try RunStore.create(narrowed, origin: origin, on: connection.storage)
            let late = try CheckWriter.write(
                [refund(at: 1_790_000_060_000)], runID: second.runID, dryRun: false, counters: "{}", on: connection.storage)
            #expect(late.newEntryIDs.isEmpty)
            #expect(late.records.first?.decision.verdict == .unverified)
            #expect(late.records.first?.decision.detail?.contains("another run wrote to it") == true)
            #expect(try connection.query("SELECT count(*) FROM clawback.ledger").first?.decode(Int.self, at: 0) == 1)
        }
    }
}
