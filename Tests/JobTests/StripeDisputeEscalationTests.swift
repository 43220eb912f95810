import AppStoreSimulator
import Foundation
import Job
import Postgres
import Reports
import Storage
import TestSupport
import Testing

@testable import StripeDriver

/// An inquiry the issuer escalates to a chargeback is the same Stripe dispute, now `needs_response`: a new
/// question with its own deadline. Whatever clawback did with the inquiry (answered it, left it, saw it answered
/// in the Dashboard, staged evidence or lost a submit's answer), the chargeback is answered once, and never
/// when it no longer awaits a response; Stripe does not say whether `submission_count` starts again at the
/// chargeback, so both are held to the same ends.
@Suite("Stripe: an inquiry escalated to a chargeback is answered once more", .serialized)
struct StripeDisputeEscalationTests {
    static let now = StripeDisputesTests.now
    static let evidence = #"[["evidence[product_description]", "100 units of gems_100"]]"#

    static func world() -> StripeWorld {
        var payments = [
            StripeDisputesTests.payment(21, status: "warning_needs_response"),  // answered as an inquiry, then escalated
            StripeDisputesTests.payment(22, status: "warning_needs_response", dueIn: 120),  // left too near its deadline, then escalated
            StripeDisputesTests.payment(23, status: "warning_under_review", submitted: 1),  // answered in the Dashboard: observed
            StripeDisputesTests.payment(24, status: "warning_needs_response"),  // evidence staged for the inquiry when escalated
            StripeDisputesTests.payment(25, status: "warning_under_review", submitted: 1),  // a submit whose answer was lost
            StripeDisputesTests.payment(26, status: "warning_needs_response"),  // escalated, answered in the Dashboard at once
            StripeDisputesTests.payment(27, status: "warning_needs_response"),  // no grant: left, and left again
            StripeDisputesTests.payment(28, status: "warning_needs_response"),  // a submit lost before it reached Stripe
            StripeDisputesTests.payment(29, status: "warning_under_review", submitted: 1),  // answered long ago, beyond the list
            StripeDisputesTests.payment(30, status: "warning_needs_response"),  // stored long ago, beyond the list
        ]
        // What the inquiry's staging left on Stripe: the dispute's evidence as it stood then.
        payments[3].disputes[0].evidence = ["product_description": "what the inquiry was staged with"]
        payments[4].disputes[0].evidence = ["product_description": "100 units of gems_100"]
        payments[8].disputes[0].evidence = ["product_description": "100 units of gems_100"]
        for index in [8, 9] {
            payments[index].created = now - 75 * 86_400
            payments[index].disputes[0].created = now - 70 * 86_400
        }
        return StripeWorld(keys: [StripeDisputesTests.key], payments: payments)
    }

    /// Runs the job until it finishes (at most eight times): the outcomes of every run.
    static func runToTheEnd(_ database: DatabaseConfiguration, _ configuration: ClawbackConfiguration) async -> [StripeDisputesRun.Outcome?] {
        var outcomes: [StripeDisputesRun.Outcome?] = []
        for _ in 0..<8 {
            let (outcome, exit) = await StripeDisputesTests.runOnce(database, configuration)
            outcomes.append(outcome)
            if exit == 0 { return outcomes }
        }
        Issue.record("the disputes job did not finish in eight runs: \(outcomes)")
        return outcomes
    }

    @Test(
        "each escalated inquiry is answered once as a chargeback, through faults, whether or not Stripe counts its submissions again",
        arguments: [false, true])
    func answeredOnceMore(resettingSubmissions: Bool) async throws {
        try await StripeShopServer.with(Self.world()) { shop in
            let configuration = try shop.configuration()
            try await TestPostgres.withScratchDatabaseAsync { name in
                let connection = try TestPostgres.connect(database: name)
                try Migrator().migrate(on: connection.storage)
                try StripeRunTests.importGrants(
                    [21, 22, 23, 24, 25, 26, 28].map { (id: "pi_\($0)", daysAgo: 20, environment: "Production") }
                        + [29, 30].map { (id: "pi_\($0)", daysAgo: 75, environment: "Production") }, on: connection)
                // dp_24: staged by a run that stopped before its submit; dp_25 and dp_28: a submit sent, the answer
                // lost (dp_25's reached Stripe, dp_28's did not); dp_29: answered long ago; dp_30: stored long ago.
                // The inquiry's deadline in whole seconds, as Stripe gives the others.
                let inquiryDue = Date(timeIntervalSince1970: (Self.now + 7 * 86_400).timeIntervalSince1970.rounded(.down))
                for (id, state, status, count, staged, submitted) in [
                    ("24", "staged", "warning_needs_response", 0, true, false), ("25", "submitting", "warning_needs_response", 0, true, false),
                    ("28", "submitting", "warning_needs_response", 0, true, false), ("29", "submitted", "warning_under_review", 1, true, true),
                    ("30", "stored", "warning_needs_response", 0, false, false),
                ] {
                    try connection.execute(
                        """
                        INSERT INTO clawback.stripe_disputes (
                            dispute_id, shop, payment_intent, stripe_status, first_status, amount_minor, currency, due_by, state, evidence,
                            stage, submission_count, stored_at, staged_at, submitted_at, submitted_in_time, seen_at)
                        VALUES (\("dp_" + id), \(StripeDisputesTests.shop), \("pi_" + id), \(status), 'warning_needs_response', 1000, 'eur',
                            \(inquiryDue), \(state), \(Self.evidence)::jsonb, 'inquiry', \(count), \(Self.now - 3_600),
                            \(staged ? Self.now - 3_600 : nil), \(submitted ? Self.now - 3_000 : nil), \(submitted ? true : nil), \(Self.now - 7_200))
                        """)
                }
                let database = try TestPostgres.configuration(database: name).storage
                let stripe = try shop.stripe
                stripe.setFaults(StripeFaults(rateLimitedShare: 0.1, serverErrorShare: 0.1))
                func escalate(_ index: Int) {
                    #expect(
                        stripe.escalate(
                            "dp_\(index)", dueBy: Self.now + 10 * 86_400, at: Date(), resettingSubmissions: resettingSubmissions))
                }
                let beforeFirstEscalations = Date()
                for index in [24, 25, 28, 30] { escalate(index) }
                _ = await Self.runToTheEnd(database, configuration)
                #expect(
                    try StripeDisputesTests.states(connection) == [
                        "dp_21": "submitted", "dp_22": "left", "dp_23": "observed", "dp_24": "submitted", "dp_25": "submitted",
                        "dp_26": "submitted", "dp_27": "left", "dp_28": "submitted", "dp_29": "submitted", "dp_30": "submitted",
                    ])

                let beforeEscalation = Date()
                for index in [21, 22, 23, 26, 27, 29] { escalate(index) }
                stripe.update { world in
                    world.payments["pi_26"]?.disputes[0].status = "under_review"
                    world.payments["pi_26"]?.disputes[0].submissionCount = resettingSubmissions ? 1 : 2
                }
                let outcomes = await Self.runToTheEnd(database, configuration)
                #expect(outcomes.compactMap { $0?.reopened }.reduce(0, +) == 4, "dp_21, dp_22, dp_27 and dp_29: \(outcomes)")

                let disputes = Dictionary(uniqueKeysWithValues: stripe.world.payments.values.flatMap(\.disputes).map { ($0.id, $0) })
                let twice = resettingSubmissions ? 1 : 2
                let submissions = disputes.mapValues { $0.submissionCount ?? 0 }
                #expect(
                    submissions == [
                        "dp_21": twice, "dp_22": 1, "dp_23": twice, "dp_24": 1, "dp_25": twice, "dp_26": twice, "dp_27": 0, "dp_28": 1,
                        "dp_29": twice, "dp_30": 1,
                    ],
                    "the inquiry's submission, if any, and one for the chargeback; dp_26's second is the Dashboard's")
                #expect(disputes.values.allSatisfy { $0.closedByMerchant != true }, "nothing accepted")
                #expect(disputes["dp_24"]?.evidence?["product_description"] == "100 units of gems_100", "staged again for the chargeback")
                #expect(
                    stripe.stats.snapshot["requests.stripe.disputes.submit"] == 10,
                    "dp_21, dp_24, dp_25, dp_26, dp_28, dp_30, then dp_21, dp_22, dp_23, dp_29")
                let states = try StripeDisputesTests.states(connection)
                #expect(
                    states == [
                        "dp_21": "submitted", "dp_22": "submitted", "dp_23": "submitted", "dp_24": "submitted", "dp_25": "submitted",
                        "dp_26": "closed", "dp_27": "left", "dp_28": "submitted", "dp_29": "submitted", "dp_30": "submitted",
                    ])
                let kept = Dictionary(
                    uniqueKeysWithValues: try connection.query(
                        """
                        SELECT dispute_id, stage || ' ' || coalesce(inquiry_answer->>'state', '-') || ' ' || coalesce(why, '-')
                        FROM clawback.stripe_disputes
                        """
                    ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1)) })
                #expect(kept["dp_21"] == "chargeback submitted -" && kept["dp_22"]?.hasPrefix("chargeback left") == true)
                #expect(kept["dp_26"]?.hasPrefix("chargeback submitted the inquiry became a chargeback (under_review)") == true, "\(kept)")
                #expect(kept["dp_27"]?.hasPrefix("chargeback left") == true && kept["dp_27"]?.contains("no grant") == true)

                // Rerun: nothing more is sent or reopened.
                stripe.setFaults(StripeFaults())
                let posts = stripe.stats.snapshot["requests.stripe.disputes.update"] ?? 0
                let (again, exit) = await StripeDisputesTests.runOnce(database, configuration)
                #expect(exit == 0 && again?.reopened == 0 && again?.submitted == 0)
                #expect(stripe.stats.snapshot["requests.stripe.disputes.update"] ?? 0 == posts)
                #expect(try StripeDisputesTests.states(connection) == states)

                // Finance's report as of before the escalation shows the inquiries' answers; as of now, the chargebacks'.
                func rows(asOf: Date) throws -> [String: [String: String]] {
                    let part = try StripeDisputeReport.table.read(
                        ReportStore(connection.storage), .init(start: Self.now - 90 * 86_400, end: Self.now + 86_400, label: "w", asOf: asOf))
                    return Dictionary(
                        uniqueKeysWithValues: part.rows.map { row in
                            (row[1].csvText, Dictionary(uniqueKeysWithValues: zip(StripeDisputeReport.columns, row.map(\.csvText))))
                        })
                }
                let then = try rows(asOf: beforeEscalation)
                #expect(then["dp_21"]?["kind"] == "inquiry" && then["dp_21"]?["state"] == "submitted" && then["dp_21"]?["escalated_at"] == "")
                #expect(then["dp_22"]?["state"] == "left" && then["dp_26"]?["state"] == "submitted" && then["dp_23"]?["state"] == "observed")
                #expect(then["dp_24"]?["kind"] == "chargeback", "escalated before")
                #expect(then["dp_29"]?["state"] == "submitted" && then["dp_29"]?["kind"] == "inquiry")
                let current = try rows(asOf: Date() + 1)
                #expect(current["dp_21"]?["kind"] == "chargeback" && current["dp_21"]?["escalated_at"]?.isEmpty == false)
                #expect(current["dp_22"]?["state"] == "submitted" && current["dp_26"]?["state"] == "closed")
                #expect(current.values.allSatisfy { $0["kind"] == "chargeback" })
                // Before the first escalations, the staged, submitting and stored inquiries as they stood, with their deadline.
                let first = try rows(asOf: beforeFirstEscalations)
                #expect(first["dp_24"]?["state"] == "staged" && first["dp_25"]?["state"] == "staged" && first["dp_30"]?["state"] == "stored")
                #expect(first["dp_24"]?["kind"] == "inquiry" && first["dp_24"]?["due_by"] == then["dp_21"]?["due_by"], "\(first)")
                #expect(current["dp_24"]?["due_by"] != first["dp_24"]?["due_by"], "the chargeback's deadline")
            }
        }
    }

    @Test("an inquiry the release before left at rest, escalated since, is answered as the chargeback after the upgrade")
    func escalatedBeforeTheUpgrade() async throws {
        var payment = StripeDisputesTests.payment(40, status: "needs_response", submitted: 1)
        payment.disputes[0].evidence = ["product_description": "100 units of gems_100"]
        let world = StripeWorld(
            keys: [StripeDisputesTests.key],
            payments: [payment, StripeDisputesTests.payment(41, status: "under_review", submitted: 1)])
        try await StripeShopServer.with(world) { shop in
            try await TestPostgres.withScratchDatabaseAsync { name in
                let connection = try TestPostgres.connect(database: name)
                try Migrator(migrations: Migration.embedded.filter { $0.version < 26 }).migrate(on: connection.storage)
                try StripeRunTests.importGrants(["pi_40", "pi_41"].map { (id: $0, daysAgo: 20, environment: "Production") }, on: connection)
                // As the release before left them: dp_40 answered as an inquiry, then closed on reading the chargeback
                // with its one submission; dp_41 answered as a chargeback, now under review.
                for (id, first, status, state, why) in [
                    ("40", "warning_needs_response", "needs_response", "closed", "needs_response with 1 submission(s) before clawback submitted"),
                    ("41", "needs_response", "under_review", "submitted", nil),
                ] {
                    try connection.execute(
                        """
                        INSERT INTO clawback.stripe_disputes (
                            dispute_id, shop, payment_intent, stripe_status, first_status, amount_minor, currency, due_by, state, why, evidence)
                        VALUES (\("dp_" + id), \(StripeDisputesTests.shop), \("pi_" + id), \(status), \(first), 1000, 'eur',
                            \(Self.now + 7 * 86_400), \(state), \(why), \(Self.evidence)::jsonb)
                        """)
                }
                try Migrator().migrate(on: connection.storage)
                let (outcome, exit) = await StripeDisputesTests.runOnce(
                    try TestPostgres.configuration(database: name).storage, try shop.configuration())
                #expect(exit == 0 && outcome?.reopened == 1 && outcome?.submitted == 1, "\(String(describing: outcome))")
                let stripe = try shop.stripe
                #expect(stripe.world.payments["pi_40"]?.disputes[0].submissionCount == 2, "the chargeback answered too")
                #expect(stripe.world.payments["pi_41"]?.disputes[0].submissionCount == 1, "a chargeback answered before: not again")
                #expect(try StripeDisputesTests.states(connection) == ["dp_40": "submitted", "dp_41": "submitted"])
            }
        }
    }
}
