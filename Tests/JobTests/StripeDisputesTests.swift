import AppStoreSimulator
import Foundation
import Job
import Logging
import Postgres
import Reports
import Storage
import Stripe
import TestSupport
import Testing

@testable import StripeDriver

/// `clawback stripe disputes` against the simulator over loopback and a real PostgreSQL: each dispute
/// awaiting a response whose purchase the game delivered gets its evidence staged and submitted once before
/// its deadline, through 429s, 500s, a hook that fails and reruns; the others are left, with why; nothing
/// is ever accepted, and a submit whose answer was lost is never sent twice.
@Suite("Stripe: disputes answered with the game's evidence", .serialized)
struct StripeDisputesTests {
    static let shop = StripeRunTests.shop
    static let key = StripeRunTests.key
    static let now = Date()

    /// Payment `index` with one dispute in `status`, due `dueIn` seconds from now (nil: no due_by).
    static func payment(_ index: Int, status: String, dueIn: TimeInterval? = 7 * 86_400, submitted: Int = 0, warned: Bool = false)
        -> StripePaymentRecord
    {
        let created = now - 20 * 86_400
        var dispute = StripeDisputeRecord(
            id: "dp_\(index)", amount: 1000, status: status, created: created + 86_400, dueBy: dueIn.map { now + $0 })
        dispute.submissionCount = submitted
        var payment = StripePaymentRecord(
            id: "pi_\(index)", amount: 1000, currency: "eur", created: created, livemode: true, status: "succeeded", disputes: [dispute])
        if warned { payment.fraudWarnings = [StripeFraudWarningRecord(id: "issfr_\(index)", actionable: false, created: created + 3_600)] }
        return payment
    }

    static func world() -> StripeWorld {
        StripeWorld(
            keys: [key],
            payments: [
                payment(1, status: "needs_response"),  // delivered, partly consumed: submitted
                payment(2, status: "warning_needs_response"),  // an inquiry about a delivered purchase: answered too
                payment(3, status: "needs_response", warned: true),  // no grant: left, its warning none of the game's
                payment(4, status: "needs_response", dueIn: nil),  // the issuer allows no response: left
                payment(5, status: "needs_response", dueIn: 120),  // too near its deadline: left
                payment(6, status: "under_review", submitted: 1),  // answered in the Dashboard before: not ours
                payment(7, status: "needs_response"),  // its hook fails on the first run: set aside, then submitted
                payment(8, status: "lost", warned: true),  // an early fraud warning came first
                payment(11, status: "warning_under_review", dueIn: nil),  // an inquiry answered elsewhere: observed, then a chargeback
                StripePaymentRecord(
                    id: "pi_10", amount: 1000, currency: "eur", created: now - 20 * 86_400,
                    fraudWarnings: [StripeFraudWarningRecord(id: "issfr_10", created: now - 19 * 86_400)]),  // warned, not disputed
            ])
    }

    /// Runs the job once: its outcome, whether it finished everything, and the exit status it would give.
    static func runOnce(_ database: DatabaseConfiguration, _ configuration: ClawbackConfiguration) async -> (StripeDisputesRun.Outcome?, Int32) {
        do throws(StripeDisputesRun.Failure) {
            let outcome = try await StripeDisputesRun.perform(database: database, configuration: configuration, logger: Logger(label: "test"))
            return (outcome, 0)
        } catch {
            return (error.outcome, error.exitStatus.rawValue)
        }
    }

    /// Each dispute's recorded outcome and fee: "lost 1500 eur".
    static func outcomes(_ connection: PostgresConnection) throws -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: try connection.query(
                """
                SELECT dispute_id, outcome || ' ' || coalesce(fee_minor::text, '-') || ' ' || coalesce(fee_currency, '-')
                FROM clawback.stripe_disputes WHERE outcome IS NOT NULL
                """
            ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1)) })
    }

    static func states(_ connection: PostgresConnection) throws -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: try connection.query("SELECT dispute_id, state FROM clawback.stripe_disputes").rows.map {
                (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1))
            })
    }

    @Test("each awaiting dispute the game delivered is submitted once before its deadline, through faults, a failing hook and reruns; none accepted")
    func submittedOnce() async throws {
        try await StripeShopServer.with(Self.world(), threads: 2) { shop in
            let configuration = try shop.configuration()
            try await TestPostgres.withScratchDatabaseAsync { name in
                let connection = try TestPostgres.connect(database: name)
                try Migrator().migrate(on: connection.storage)
                try StripeRunTests.importGrants(
                    ["pi_1", "pi_2", "pi_4", "pi_5", "pi_6", "pi_7", "pi_8", "pi_10", "pi_11"].map {
                        (id: $0, daysAgo: 20, environment: "Production")
                    },
                    on: connection)
                try connection.executeScript(
                    unsafeSQL: """
                        CREATE TABLE public.hook_mode (broken boolean NOT NULL);
                        INSERT INTO public.hook_mode VALUES (true);
                        CREATE OR REPLACE FUNCTION clawback.units_consumed(
                            p_transaction_id text, p_player_id text, p_product_id text, p_units_granted bigint
                        ) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
                        BEGIN
                            IF p_transaction_id = 'pi_7' AND (SELECT broken FROM public.hook_mode) THEN
                                RAISE EXCEPTION 'wallet service unreachable';
                            END IF;
                            RETURN CASE p_transaction_id WHEN 'pi_1' THEN 40 ELSE 0 END;
                        END $$;
                        CREATE OR REPLACE FUNCTION clawback.usage_events(p_transaction_id text, p_player_id text, p_product_id text)
                        RETURNS TABLE (used_at timestamptz, description text) LANGUAGE sql STABLE AS $$
                            SELECT now() - interval '3 days', 'spent 40 gems on <b>a sword</b>' WHERE p_transaction_id = 'pi_1'
                        $$;
                        """)
                let database = try TestPostgres.configuration(database: name).storage
                let stripe = try shop.stripe
                stripe.setFaults(StripeFaults(rateLimitedShare: 0.1, serverErrorShare: 0.1))

                let (first, firstExit) = await Self.runOnce(database, configuration)
                #expect(firstExit == 75, "the failing hook leaves pi_7 for the next run")
                #expect(first?.notFinished.contains("dp_7") == true)
                #expect(try Self.states(connection)["dp_7"] == "set_aside")
                try connection.execute("UPDATE public.hook_mode SET broken = false")
                var exit: Int32 = 75
                for _ in 0..<8 where exit != 0 { exit = await Self.runOnce(database, configuration).1 }
                #expect(exit == 0)

                let disputes = Dictionary(uniqueKeysWithValues: stripe.world.payments.values.flatMap(\.disputes).map { ($0.id, $0) })
                for id in ["dp_1", "dp_2", "dp_7"] {
                    #expect(disputes[id]?.submissionCount == 1, "\(id) submitted once: \(String(describing: disputes[id]))")
                }
                #expect(disputes["dp_1"]?.status == "under_review" && disputes["dp_2"]?.status == "warning_under_review")
                for id in ["dp_3", "dp_4", "dp_5"] {
                    #expect((disputes[id]?.submissionCount ?? 0) == 0 && disputes[id]?.evidence == nil, "\(id) left alone")
                }
                #expect(disputes["dp_6"]?.submissionCount == 1 && disputes["dp_6"]?.evidence == nil, "not clawback's to answer")
                #expect(disputes.values.allSatisfy { $0.closedByMerchant != true }, "nothing accepted")
                #expect(stripe.stats.snapshot["requests.stripe.disputes.close"] == nil)
                let evidence = try #require(disputes["dp_1"]?.evidence)
                #expect(evidence["product_description"]?.contains("gems_100") == true)
                #expect(evidence["access_activity_log"]?.contains("40 of the 100 units") == true)
                #expect(evidence["access_activity_log"]?.contains("spent 40 gems on <b>a sword</b>") == true)
                #expect(evidence["service_date"]?.count == 10)

                let states = try Self.states(connection)
                // The Dashboard's answer and the lost one are the game's disputes too: kept for finance, not answered.
                #expect(
                    states == [
                        "dp_1": "submitted", "dp_2": "submitted", "dp_3": "left", "dp_4": "left", "dp_5": "left", "dp_6": "observed",
                        "dp_7": "submitted", "dp_8": "observed", "dp_11": "observed",
                    ])
                #expect(try Self.outcomes(connection) == ["dp_8": "lost 1500 eur"], "only Stripe's final statuses are outcomes, with their fee")
                let why = Dictionary(
                    uniqueKeysWithValues: try connection.query("SELECT dispute_id, why FROM clawback.stripe_disputes WHERE state = 'left'").rows.map {
                        (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1))
                    })
                #expect(why["dp_3"]?.contains("no grant") == true && why["dp_4"]?.contains("no response") == true)
                #expect(why["dp_5"]?.contains("too near its deadline") == true)

                // A rerun sends nothing more.
                stripe.setFaults(StripeFaults())
                let posts = stripe.stats.snapshot["requests.stripe.disputes.update"] ?? 0
                #expect(await Self.runOnce(database, configuration).1 == 0)
                #expect(stripe.stats.snapshot["requests.stripe.disputes.update"] ?? 0 == posts)

                // Outcomes: dp_1 won (its fee returned) within the list's reach; dp_2's inquiry closed and dp_6 lost
                // long ago, beyond it, so each is asked alone. An outcome once read is kept whatever Stripe says later.
                stripe.update { world in
                    world.payments["pi_1"]?.disputes[0].status = "won"
                    world.payments["pi_1"]?.disputes[0].feeReturned = true
                    world.payments["pi_2"]?.disputes[0].status = "warning_closed"
                    world.payments["pi_6"]?.disputes[0].status = "lost"
                    world.payments["pi_6"]?.disputes[0].created = Self.now - 90 * 86_400
                    world.payments["pi_6"]?.disputes[0].fee = 2000
                }
                #expect(await Self.runOnce(database, configuration).1 == 0)
                #expect(try Self.outcomes(connection) == ["dp_1": "won 0 eur", "dp_6": "lost 2000 eur", "dp_8": "lost 1500 eur"])
                #expect(stripe.stats.snapshot["requests.stripe.disputes.retrieve"] ?? 0 >= 1, "dp_6 asked alone")
                stripe.update { $0.payments["pi_8"]?.disputes[0].status = "won" }
                #expect(await Self.runOnce(database, configuration).1 == 0)
                #expect(try Self.outcomes(connection)["dp_8"] == "lost 1500 eur")

                // Finance's part of the report: each dispute of the window's purchases, its answer and outcome, the
                // amounts lost and the fees; as of a time before the outcomes, none is shown.
                func part(asOf: Date) throws -> StoreReportTable.Contents {
                    try StripeDisputeReport.table.read(
                        ReportStore(connection.storage), .init(start: Self.now - 60 * 86_400, end: Self.now + 86_400, label: "w", asOf: asOf))
                }
                let report = try part(asOf: Date() + 1)
                let rows = Dictionary(
                    uniqueKeysWithValues: report.rows.map { row in
                        (row[1].csvText, Dictionary(uniqueKeysWithValues: zip(StripeDisputeReport.columns, row.map(\.csvText))))
                    })
                #expect(rows.keys.sorted() == ["dp_1", "dp_11", "dp_2", "dp_3", "dp_4", "dp_5", "dp_6", "dp_7", "dp_8"])
                #expect(rows["dp_1"]?["state"] == "submitted" && rows["dp_1"]?["submitted_in_time"] == "yes" && rows["dp_1"]?["outcome"] == "won")
                #expect(rows["dp_1"]?["dispute_fee"] == "0.00" && rows["dp_1"]?["fee_currency"] == "EUR" && rows["dp_1"]?["units_consumed"] == "40")
                #expect(rows["dp_8"]?["state"] == "observed" && rows["dp_8"]?["outcome"] == "lost" && rows["dp_8"]?["dispute_fee"] == "15.00")
                #expect(rows["dp_8"]?["fee_status"] == "charged" && rows["dp_2"]?["fee_status"] == "")
                #expect(rows["dp_3"]?["shop"] == "(no grant)" && rows["dp_1"]?["shop"] == Self.shop, "a payment the game never granted is no shop's")
                #expect(rows["dp_2"]?["kind"] == "inquiry" && rows["dp_2"]?["outcome"] == "" && rows["dp_3"]?["why"]?.contains("no grant") == true)
                let summary = Dictionary(
                    report.summaryRows.map { ($0[2].csvText + " " + $0[4].csvText, [$0[5].csvText, $0[7].csvText]) }, uniquingKeysWith: { $1 })
                #expect(summary["lost_amount EUR"] == ["2", "20.00"], "dp_6 and dp_8, 10.00 each")
                #expect(summary["dispute_fees EUR"] == ["3", "35.00"], "dp_1's returned, dp_6's 20.00, dp_8's 15.00")
                #expect(report.summaryRows.allSatisfy { $0.count == SummaryReport.columns.count && $0[1].csvText == "stripe_disputes" })
                #expect(report.html.contains("id=\"stripe-disputes\"") && report.html.contains("35.00"))
                let earlier = try part(asOf: Self.now - 86_400 * 30)
                #expect(earlier.rows.isEmpty, "nothing was seen a month ago")

                // An observed dispute that comes to await a response is answered, once; a report as of before shows it observed.
                let beforeReopening = Date()
                stripe.update { world in
                    world.payments["pi_11"]?.disputes[0].status = "needs_response"
                    world.payments["pi_11"]?.disputes[0].dueBy = Self.now + 5 * 86_400
                }
                #expect(await Self.runOnce(database, configuration).1 == 0)
                #expect(try Self.states(connection)["dp_11"] == "submitted")
                #expect(stripe.world.payments["pi_11"]?.disputes[0].submissionCount == 1)
                let then = try part(asOf: beforeReopening).rows.first { $0[1].csvText == "dp_11" }
                #expect(then?[StripeDisputeReport.columns.firstIndex(of: "state") ?? 0].csvText == "observed")

                // Early fraud warnings: only those about granted payments, each once, with the dispute that followed.
                let warnings = try StripeFraudWarningReport.table.read(
                    ReportStore(connection.storage), .init(start: Self.now - 60 * 86_400, end: Self.now + 86_400, label: "w", asOf: Date() + 1))
                #expect(
                    warnings.rows.map { [$0[1].csvText, $0[8].csvText, $0[9].csvText] } == [["issfr_10", "", ""], ["issfr_8", "dp_8", "lost"]])
                let warned = Dictionary(warnings.summaryRows.map { ($0[2].csvText, $0[5].csvText) }, uniquingKeysWith: +)
                #expect(warned["warned"] == "2" && warned["disputed"] == "1" && warned["lost"] == "1" && warned["not_disputed"] == "1")

                // A submit whose answer was lost (killed after the POST, before its row said so) is not sent again;
                // one killed before its POST is sent once, under the same key.
                let postsBefore = stripe.stats.snapshot["requests.stripe.disputes.update"] ?? 0
                try connection.execute("UPDATE clawback.stripe_disputes SET state = 'submitting' WHERE dispute_id = 'dp_1'")
                stripe.update { world in
                    world.payments["pi_9"] = Self.payment(9, status: "needs_response")
                }
                try StripeRunTests.importGrants([(id: "pi_9", daysAgo: 20, environment: "Production")], on: connection)
                try connection.execute(
                    """
                    INSERT INTO clawback.stripe_disputes (
                        dispute_id, shop, payment_intent, stripe_status, amount_minor, currency, due_by, state, evidence, stage)
                    VALUES ('dp_9', \(Self.shop), 'pi_9', 'needs_response', 1000, 'eur', \(Self.now + 7 * 86_400), 'submitting',
                        '[["evidence[product_description]", "100 units of gems_100"]]'::jsonb, 'chargeback')
                    """)
                let last = await Self.runOnce(database, configuration)
                #expect(last.1 == 0, "\(String(describing: last.0))")
                let after = Dictionary(uniqueKeysWithValues: stripe.world.payments.values.flatMap(\.disputes).map { ($0.id, $0) })
                #expect(after["dp_1"]?.submissionCount == 1 && after["dp_9"]?.submissionCount == 1)
                #expect(try Self.states(connection)["dp_1"] == "submitted" && Self.states(connection)["dp_9"] == "submitted")
                #expect(stripe.stats.snapshot["requests.stripe.disputes.update"] ?? 0 == postsBefore + 1, "only dp_9's submit was sent")
            }
        }
    }

    @Test("a key without Disputes: Write stops the job (78) at its first POST; a submit left past its deadline is left, not sent late")
    func forbiddenAndLate() async throws {
        var world = Self.world()
        world.keys.insert("rk_live_readonly")
        world.keyResources = ["rk_live_readonly": ["charges", "refunds", "disputes:read", "payment_intents", "events"]]
        try await StripeShopServer.with(world) { shop in
            try await TestPostgres.withScratchDatabaseAsync { name in
                let connection = try TestPostgres.connect(database: name)
                try Migrator().migrate(on: connection.storage)
                try StripeRunTests.importGrants([(id: "pi_1", daysAgo: 20, environment: "Production")], on: connection)
                let database = try TestPostgres.configuration(database: name).storage
                let stripe = try shop.stripe
                #expect(await Self.runOnce(database, try shop.configuration(key: "rk_live_readonly")).1 == 78)
                #expect(stripe.world.payments["pi_1"]?.disputes.first?.submissionCount ?? 0 == 0)
                #expect(try Self.states(connection)["dp_1"] == "stored", "its evidence kept for the next run")
                // Left submitting by a run killed before its POST, then found past its deadline: not sent.
                try connection.execute("UPDATE clawback.stripe_disputes SET state = 'submitting' WHERE dispute_id = 'dp_1'")
                stripe.update { $0.payments["pi_1"]?.disputes[0].dueBy = Self.now + 60 }
                #expect(await Self.runOnce(database, try shop.configuration()).1 == 0)
                #expect(stripe.world.payments["pi_1"]?.disputes.first?.submissionCount ?? 0 == 0)
                #expect(try Self.states(connection)["dp_1"] == "left")
            }
        }
    }

    @Test("a dispute Stripe lists in a shape clawback cannot read is named and left for the next run (75); the others are answered in the same run")
    func unreadableDispute() async throws {
        try await StripeShopServer.with(Self.world()) { shop in
            let configuration = try shop.configuration()
            try await TestPostgres.withScratchDatabaseAsync { name in
                let connection = try TestPostgres.connect(database: name)
                try Migrator().migrate(on: connection.storage)
                try StripeRunTests.importGrants(["pi_1", "pi_2"].map { (id: $0, daysAgo: 20, environment: "Production") }, on: connection)
                let database = try TestPostgres.configuration(database: name).storage
                let stripe = try shop.stripe
                stripe.setFaults(StripeFaults(unreadableObjects: ["dp_2"]))
                let (first, exit) = await Self.runOnce(database, configuration)
                #expect(exit == 75 && first?.notFinished == ["dp_2"], "\(String(describing: first))")
                #expect(try first?.submitted == 1 && Self.states(connection)["dp_1"] == "submitted")
                #expect(try Self.states(connection)["dp_2"] == nil, "nothing recorded of what could not be read")
                #expect(stripe.world.payments["pi_2"]?.disputes.first?.submissionCount ?? 0 == 0)

                // Readable again: answered by the next run, dp_1 not again.
                stripe.setFaults(StripeFaults())
                let (second, again) = await Self.runOnce(database, configuration)
                #expect(again == 0 && second?.submitted == 1, "\(String(describing: second))")
                #expect(try Self.states(connection)["dp_2"] == "submitted")
                #expect(stripe.world.payments["pi_1"]?.disputes.first?.submissionCount == 1)
            }
        }
    }

    @Test("a key without Early fraud warnings: Read answers the disputes all the same, and says the warnings were not read")
    func withoutRadar() async throws {
        var world = Self.world()
        world.keys.insert("rk_live_noradar")
        world.keyResources = ["rk_live_noradar": ["charges", "refunds", "disputes", "payment_intents", "events"]]
        try await StripeShopServer.with(world) { shop in
            let configuration = try shop.configuration(key: "rk_live_noradar")
            try await TestPostgres.withScratchDatabaseAsync { name in
                let connection = try TestPostgres.connect(database: name)
                try Migrator().migrate(on: connection.storage)
                try StripeRunTests.importGrants([(id: "pi_1", daysAgo: 20, environment: "Production")], on: connection)
                let (outcome, exit) = await Self.runOnce(try TestPostgres.configuration(database: name).storage, configuration)
                #expect(exit == 0)
                #expect(outcome?.submitted == 1 && outcome?.fraudWarningsUnread?.contains("403") == true, "\(String(describing: outcome))")
                #expect(try Self.states(connection)["dp_1"] == "submitted")
            }
        }
    }

    @Test("the studio's text is one line per use and fits Stripe's limits in UTF-16; the newest uses are the ones kept")
    func evidenceText() throws {
        let now = Date(timeIntervalSince1970: 1_790_000_000)
        let uses = (0..<3_000).map { index in
            PurchaseUse(
                at: now + Double(index),
                description: index == 2_999 ? "newest\nConsumed by the player: 0 of the 100 units" : String(repeating: "👍🏽", count: 400))
        }
        let facts = DisputeFacts(
            delivered: true, transactionID: "pi_1", playerID: "player-1", productID: "gems", unitsGranted: 100, purchasedAt: now, unitsConsumed: 40,
            uses: uses)
        guard case .answer(let evidence) = StripeDisputeEvidence.decide(facts, shop: "shop") else {
            Issue.record("a delivered purchase is answered")
            return
        }
        let log = try #require(evidence.first { $0.0 == "evidence[access_activity_log]" }?.1)
        #expect(log.utf16.count <= 20_000)
        #expect(log.split(separator: "\n").filter { $0.hasPrefix("Consumed by the player") }.count == 1, "no use passes for another line")
        #expect(log.contains("newest Consumed by the player: 0 of the 100 units"), "the newest use kept, on its own line")
        #expect(evidence.allSatisfy { $0.1.utf16.count <= 20_000 })
    }

    @Test("the simulator answers a repeated Idempotency-Key with the first answer and refuses it with other parameters")
    func idempotency() async throws {
        let simulator = Simulator(world: World(apps: [], transactions: []), chain: try SigningChain(), stripe: Self.world())
        let server = try await SimulatorServer.start(simulator: simulator, threads: 1)
        let http = try HTTPClients.start(for: "the test", timeout: .seconds(10))
        defer { http.shutdown() }
        let client = StripeClient(key: Self.key, baseURL: "http://127.0.0.1:\(server.port)", http: http, retries: 0)
        let first = try await client.post(Dispute.self, "/v1/disputes/dp_1", form: [("submit", "true")], idempotencyKey: "k1")
        let replay = try await client.post(Dispute.self, "/v1/disputes/dp_1", form: [("submit", "true")], idempotencyKey: "k1")
        #expect(first == replay && first.submissionCount == 1, "the replay is the first answer, nothing submitted twice")
        await #expect(throws: StripeError.self) {
            try await client.post(Dispute.self, "/v1/disputes/dp_1", form: [("submit", "false")], idempotencyKey: "k1")
        }
        await #expect(throws: StripeError.self, "a submitted dispute takes no more evidence") {
            try await client.post(Dispute.self, "/v1/disputes/dp_1", form: [("submit", "true")], idempotencyKey: "k2")
        }
    }
}
