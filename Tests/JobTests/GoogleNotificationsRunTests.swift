import AppStoreSimulator
import Foundation
import GooglePlay
import HTTP
import Logging
import Postgres
import Reports
import Storage
import TestSupport
import Testing

@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

/// `clawback google-play notifications` against the simulator's Pub/Sub and Orders API over loopback, on a
/// real database: every message kept once and acknowledged only once kept, every chargeback review answered
/// once by the policy, none after its deadline.
@Suite("Google Play: real-time notifications and chargeback reviews")
struct GoogleNotificationsRunTests {
    static let package = "com.studio.game"
    static let now = Date()

    static func order(_ number: Int, daysAgo: Double = 3) -> GoogleOrderRecord {
        GoogleOrderRecord(
            orderId: "GPA.3300-0000-0000-\(String(format: "%05d", number))", packageName: package, purchaseToken: "token-\(number)",
            productId: "gems_600", quantity: 1, priceMilli: 4_990, currency: "EUR", purchaseTime: now - daysAgo * 86_400)
    }

    /// A chargeback under review for `order`, notified `hoursAgo`, and the notification Google publishes.
    static func review(_ order: inout GoogleOrderRecord, hoursAgo: Double = 1) -> DeveloperNotification {
        let notified = now - hoursAgo * 3600
        order.refundReview = .init(pendingRefundToken: "prt-" + order.purchaseToken, notifiedAt: notified)
        return DeveloperNotification(
            packageName: order.packageName, eventTime: notified,
            pendingRefundReview: .init(pendingRefundToken: "prt-" + order.purchaseToken, orderId: order.orderId, obfuscatedAccountId: "acct-7"))
    }

    static func run(_ setup: GoogleJobFixture) async throws -> GoogleNotificationsRun.Outcome {
        do {
            return try await GoogleNotificationsRun.perform(
                database: setup.database.storage, configuration: setup.configuration, logger: Logger(label: "test"))
        } catch let failure {
            guard let outcome = failure.outcome else { throw failure }
            return outcome
        }
    }

    @Test(
        "every message kept once and acknowledged; duplicates and redeliveries counted, not kept twice; unreadable and foreign ones kept for a person; voids named for the daily run; each review answered once as the policy says, none past its deadline"
    )
    func readAndAnswer() async throws {
        var orders = (1...7).map { Self.order($0) }
        orders.append(Self.order(8, daysAgo: 1))  // bought yesterday, never granted
        var notifications = [1, 2, 3, 8].map { Self.review(&orders[$0 - 1]) }
        notifications.append(Self.review(&orders[4], hoursAgo: 25))  // its 24 hours are over
        notifications.append(
            DeveloperNotification(
                packageName: Self.package, eventTime: Self.now - 600, voidedPurchase: .init(purchaseToken: "token-6", orderId: orders[5].orderId)))
        notifications.append(DeveloperNotification(packageName: Self.package, eventTime: Self.now, test: .init()))
        notifications.append(DeveloperNotification(packageName: "com.studio.locked", eventTime: Self.now, test: .init()))
        try await GoogleJobFixture.with(orders, packages: [Self.package]) { setup in
            try GoogleOrdersRunTests.grant(Array(orders[0..<7]), on: setup.connection)
            // The studio's hooks: token-1 consumed whole with two uses, token-2 untouched, token-3 unknown.
            try setup.connection.executeScript(
                unsafeSQL: """
                    CREATE OR REPLACE FUNCTION clawback.units_consumed(
                        p_transaction_id text, p_player_id text, p_product_id text, p_units_granted bigint
                    ) RETURNS bigint LANGUAGE sql STABLE AS $$
                        SELECT CASE p_transaction_id WHEN 'token-1' THEN p_units_granted WHEN 'token-2' THEN 0 END
                    $$;
                    CREATE OR REPLACE FUNCTION clawback.usage_events(p_transaction_id text, p_player_id text, p_product_id text)
                    RETURNS TABLE (used_at timestamptz, description text) LANGUAGE sql STABLE AS $$
                        SELECT t, 'spent 300 gems' FROM (VALUES (now() - interval '2 days'), (now() - interval '1 day')) v(t)
                        WHERE p_transaction_id = 'token-1'
                    $$;
                    """)
            var configuration = setup.configuration
            configuration.googleApps[0].refundRequests.grantsCompleteSince = Self.now - 365 * 86_400
            let setup = GoogleJobFixture(
                simulator: setup.simulator, configuration: configuration, database: setup.database, databaseName: setup.databaseName,
                connection: setup.connection)
            for notification in notifications { setup.simulator.notify(notification) }
            setup.simulator.publishRaw(Array("{not json".utf8), topicOf: Self.package)
            setup.simulator.pubSub.setFaults(PubSubFaults(duplicateNextPull: true))

            let first = try await Self.run(setup)
            #expect(first.messagesRead == 10 && first.newMessages == 9 && first.duplicates == 1)
            #expect(first.voids == 1 && first.reviewsOpened == 5 && first.tests == 1 && first.unreadable == 1 && first.unknownPackages == 1)
            #expect(first.answered == 4 && first.expired == 1 && first.open == 0 && first.refusedByGoogle == 0 && first.unknownOutcome == 0)
            #expect(setup.simulator.pubSub.waiting(in: GoogleJobFixture.subscription) == 0, "everything kept was acknowledged")

            let answers = setup.simulator.answeredReviews
            #expect(answers.keys.sorted() == ["prt-token-1", "prt-token-2", "prt-token-3", "prt-token-8"])
            #expect(answers["prt-token-1"]?.preference == "DECLINE" && answers["prt-token-1"]?.consumptionMilliunits == 100_000)
            #expect(answers["prt-token-1"]?.usageEvents == 2)
            #expect(answers["prt-token-2"]?.preference == "APPROVE" && answers["prt-token-2"]?.consumptionMilliunits == 0)
            #expect(answers["prt-token-3"]?.preference == "NEUTRAL" && answers["prt-token-3"]?.consumptionMilliunits == nil)
            #expect(answers["prt-token-8"]?.preference == "APPROVE", "not delivered: no grant, and the game would have one")
            #expect(answers.values.allSatisfy { $0.calls == 1 })

            let states = Dictionary(
                uniqueKeysWithValues: try setup.connection.query("SELECT pending_refund_token, state FROM clawback.google_refund_reviews").rows.map {
                    (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1))
                })
            #expect(states["prt-token-5"] == "expired" && states.values.filter { $0 == "answered" }.count == 4)
            let kept = try setup.connection.query(
                "SELECT kind, count(*)::bigint FROM clawback.google_notifications GROUP BY kind ORDER BY kind"
            ).rows.map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode(Int.self, at: 1))" }
            #expect(kept == ["refund_review 5", "test 1", "unknown_package 1", "unreadable 1", "voided 1"])
            #expect(try GoogleVoidStore.tokensKept(packageName: Self.package, since: Self.now - 3600, on: setup.connection.storage) == ["token-6"])
            // The next Google daily run checks the void a notification named (no sweep ran): refunded, taken back.
            setup.simulator.update { world in
                world.orders[orders[5].orderId]?.state = "REFUNDED"
                world.orders[orders[5].orderId]?.refund = .init(date: Self.now - 600, reason: "OTHER", amountMilli: 4_990)
            }
            let http = try HTTPClient(configuration: .init(timeout: .seconds(10)))
            defer { http.shutdown() }
            let (daily, _) = try await GoogleOrdersRunTests.run(setup, http: http, daily: true)
            #expect(daily.counters.checked == 1)
            let taken = try setup.connection.query(
                "SELECT units FROM clawback.ledger WHERE transaction_id = 'token-6' AND kind = 'clawback'"
            ).first?.decode(Int64.self, at: 0)
            #expect(taken == GoogleOrdersRunTests.unitsPerItem)

            // Nothing new: the next run sends nothing again.
            let second = try await Self.run(setup)
            #expect(second.messagesRead == 0 && second.answered == 0)
            #expect(setup.simulator.answeredReviews.values.allSatisfy { $0.calls == 1 })

            // Outcomes, read from the orders at most once a day: order 1's chargeback lost (Google refunded
            // it), order 2's won (still processed 30 days after its deadline), order 3's not known yet.
            setup.simulator.update { world in
                world.orders[orders[0].orderId]?.state = "REFUNDED"
                world.orders[orders[0].orderId]?.refund = .init(date: Self.now, reason: "CHARGEBACK", amountMilli: 4_990)
            }
            try setup.connection.execute(
                """
                UPDATE clawback.google_refund_reviews SET outcome_read_at = outcome_read_at - interval '2 days',
                    deadline = CASE pending_refund_token WHEN 'prt-token-2' THEN now() - interval '31 days' ELSE deadline END
                """)
            let third = try await Self.run(setup)
            #expect(third.chargebacksLost == 1 && third.chargebacksWon == 1)
            let outcomes = Dictionary(
                uniqueKeysWithValues: try setup.connection.query(
                    "SELECT pending_refund_token, coalesce(outcome, 'unknown') FROM clawback.google_refund_reviews"
                ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1)) })
            #expect(outcomes["prt-token-1"] == "refunded" && outcomes["prt-token-2"] == "not_refunded" && outcomes["prt-token-3"] == "unknown")

            // Finance's view: every review of the window's purchases, the answer and the outcome; and as of a
            // time before the first run, every one still open with nothing said.
            let store = ReportStore(setup.connection.storage)
            let lines = try store.chargebackReviews(from: Self.now - 30 * 86_400, to: Self.now + 86_400, asOf: Date())
            // Four answered, in time but order 2's, whose deadline the test moved a month back.
            #expect(lines.count == 5 && lines.filter { $0.state == "answered" }.count == 4)
            #expect(lines.filter(\.answeredInTime).count == 3)
            let figures = ChargebackReviewReport.totals(lines).values.reduce(into: [ChargebackReviewReport.Figure: Int]()) { sums, figures in
                for (figure, sum) in figures { sums[figure, default: 0] += sum.count }
            }
            #expect(figures[.received] == 5 && figures[.answered] == 4 && figures[.answeredInTime] == 3)
            #expect(figures[.declineAsked] == 1 && figures[.approveAsked] == 2)
            #expect(figures[.neutralAsked] == 1 && figures[.expired] == 1 && figures[.chargebackLost] == 1 && figures[.chargebackWon] == 1)
            let rows = ChargebackReviewReport.summaryRows(lines, window: "w")
            #expect(rows.allSatisfy { $0[1] == .text("chargeback_reviews") && $0[10] == .text("google_play") })
            let before = try store.chargebackReviews(from: Self.now - 30 * 86_400, to: Self.now + 86_400, asOf: Self.now - 3600)
            #expect(before.isEmpty, "received after that time")
            // A run keeps every message before it answers: as of the last review kept, all are open, nothing said.
            let lastKept = try #require(
                try setup.connection.query("SELECT max(received_at) FROM clawback.google_refund_reviews").first?.decode(Date.self, at: 0))
            let earlier = try store.chargebackReviews(from: Self.now - 30 * 86_400, to: Self.now + 86_400, asOf: lastKept)
            #expect(earlier.count == 5 && earlier.allSatisfy { $0.state == "open" && $0.refundPreference == nil && $0.outcome == nil })
        }
    }

    @Test(
        "sent until taken: an answer Google may have (a 500, a run stopped while sending, a lost reply) is sent again as stored, never decided anew, and Google holds one answer; one Google did not take is sent again"
    )
    func sentUntilTaken() async throws {
        var orders = [Self.order(1), Self.order(2)]
        let notifications = [Self.review(&orders[0]), Self.review(&orders[1])]
        try await GoogleJobFixture.with(orders, packages: [Self.package]) { setup in
            try GoogleOrdersRunTests.grant(orders, on: setup.connection)
            for notification in notifications { setup.simulator.notify(notification) }
            // The orders are read in one call; then the first answer meets three 500s (Google may have it), the
            // second three 503s (Google says it did not take it).
            setup.simulator.setFaults(GoogleFaults(failures: [200, 500, 500, 500, 503, 503, 503]))
            let first = try await Self.run(setup)
            #expect(first.reviewsOpened == 2 && first.answered == 0 && first.unconfirmed == 1 && first.notTaken == 1 && first.open == 2)
            #expect(setup.simulator.answeredReviews.isEmpty)
            let stored = try setup.connection.query(
                "SELECT pending_refund_token, unconfirmed_sends, sends FROM clawback.google_refund_reviews WHERE state = 'stored' ORDER BY 1"
            ).rows.map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode(Int.self, at: 1)) \(try $0.decode(Int.self, at: 2))" }
            #expect(stored == ["prt-token-1 1 1", "prt-token-2 0 1"])

            // As if a run had stopped after marking the first one sending: sent again by the next run.
            try setup.connection.execute("UPDATE clawback.google_refund_reviews SET state = 'sending' WHERE pending_refund_token = 'prt-token-1'")
            // The studio's hook changes its mind meanwhile: the stored answer is sent as it is, not decided anew.
            try setup.connection.executeScript(
                unsafeSQL: """
                    CREATE OR REPLACE FUNCTION clawback.units_consumed(
                        p_transaction_id text, p_player_id text, p_product_id text, p_units_granted bigint
                    ) RETURNS bigint LANGUAGE sql STABLE AS $$ SELECT p_units_granted $$;
                    """)
            // Google takes the first send and its reply is lost: sent again, answered OK, one answer kept.
            setup.simulator.setFaults(GoogleFaults(lostAnswers: 1))
            let second = try await Self.run(setup)
            #expect(second.answered == 2 && second.open == 0 && second.unknownOutcome == 0)
            let answers = setup.simulator.answeredReviews
            #expect(answers["prt-token-1"]?.calls == 2 && answers["prt-token-1"]?.bodies.count == 1, "sent twice, the same body")
            #expect(answers["prt-token-1"]?.preference == "NEUTRAL" && answers["prt-token-2"]?.preference == "NEUTRAL", "the stored answers")
            let states = try setup.connection.query("SELECT DISTINCT state FROM clawback.google_refund_reviews").rows.map {
                try $0.decode(String.self, at: 0)
            }
            #expect(states == ["answered"])
            let third = try await Self.run(setup)
            #expect(third.answered == 0 && setup.simulator.answeredReviews.values.map(\.calls).sorted() == [1, 2], "nothing sent again")
        }
    }

    @Test(
        "config check: the subscription proved pullable without taking a message; the last test notification and messages kept for a person shown; a subscription the account may not pull, or that does not exist, named"
    )
    func configCheck() async throws {
        try await GoogleJobFixture.with([Self.order(1)], packages: [Self.package]) { setup in
            let http = try HTTPClient(configuration: .init(timeout: .seconds(10)))
            defer { http.shutdown() }
            func check(_ configuration: ClawbackConfiguration) async -> [ConfigurationCheck.Line] {
                await GooglePlayConfigurationCheck.notifications(
                    configuration, database: setup.database.storage, http: http, logger: Logger(label: "test"))
            }
            setup.simulator.notify(DeveloperNotification(packageName: Self.package, eventTime: Self.now, test: .init()))
            var lines = await check(setup.configuration)
            #expect(lines.first?.status == .ok && lines.first?.detail.contains("no message taken") == true, "\(lines)")
            #expect(lines.last?.detail == "no test notification received yet")
            #expect(setup.simulator.pubSub.waiting(in: GoogleJobFixture.subscription) == 1, "nothing taken")

            setup.simulator.publishRaw(Array("garbage".utf8), topicOf: Self.package)
            _ = try await Self.run(setup)
            lines = await check(setup.configuration)
            #expect(lines.last?.status == .warning)
            #expect(
                lines.last?.detail.contains("last test notification") == true && lines.last?.detail.contains("1 messages kept for a person") == true)

            var elsewhere = setup.configuration
            elsewhere.google.notifications?.subscription = "projects/studio/subscriptions/missing"
            lines = await check(elsewhere)
            #expect(lines.count == 1 && lines[0].status == .failed && lines[0].detail.contains("no such subscription"), "\(lines)")
            setup.simulator.update { world in
                world.subscriptions[GoogleJobFixture.subscription]?.subscribers = []
            }
            lines = await check(setup.configuration)
            #expect(lines.count == 1 && lines[0].status == .failed && lines[0].detail.contains("Pub/Sub Subscriber role"), "\(lines)")
        }
    }

    @Test("a stored answer is marked for sending only until five minutes before its deadline, and only once")
    func sendingOnlyBeforeTheDeadline() async throws {
        try await GoogleJobFixture.with([], packages: [Self.package]) { setup in
            let notified = Self.now - 3600
            let message = KeptNotification(
                subscription: GoogleJobFixture.subscription, messageID: "m-1", kind: .refundReview, packageName: Self.package, eventTime: notified,
                orderID: "GPA.1", data: nil,
                review: .init(pendingRefundToken: "prt-1", orderID: "GPA.1", refundReason: 7, obfuscatedAccountID: nil, obfuscatedProfileID: nil))
            #expect(try GoogleNotificationStore.keep([message, message], on: setup.connection.storage) == ["m-1"])
            let answer = StoredReviewAnswer(
                body: #"{"pendingRefundToken":"prt-1","refundPreference":"NEUTRAL","sampleContentProvided":false}"#, preference: "NEUTRAL",
                consumedMilliunits: nil, usageEvents: 0, facts: GoogleDeliveryFacts(delivery: .delivered), reason: "test", purchasedAt: nil)
            try GoogleNotificationStore.store(answer, token: "prt-1", now: Self.now, on: setup.connection.storage)
            let deadline = notified + GoogleNotificationStore.reviewWindow
            let latest = deadline - GoogleNotificationStore.sendingMargin
            #expect(try GoogleNotificationStore.markSending("prt-1", now: latest + 1, on: setup.connection.storage) == false, "too near its deadline")
            #expect(try GoogleNotificationStore.markSending("prt-1", now: latest - 1, on: setup.connection.storage))
            #expect(try GoogleNotificationStore.markSending("prt-1", now: latest - 1, on: setup.connection.storage) == false, "already being sent")
            // Its fate unseen, it is stored again; the margin then settles it `unknown`, not `expired`: a send
            // may have reached Google.
            try GoogleNotificationStore.record(.unconfirmed("HTTP 502"), token: "prt-1", now: latest - 1, on: setup.connection.storage)
            #expect(try GoogleNotificationStore.settleStale(now: latest - 1, on: setup.connection.storage) == (0, 0))
            #expect(try GoogleNotificationStore.settleStale(now: latest + 1, on: setup.connection.storage) == (1, 0))
        }
    }

    @Test("Pub/Sub holding a pull on an empty subscription past the client's timeout is the end of the messages, not a failure")
    func heldEmptyPull() async throws {
        try await GoogleJobFixture.with([], packages: [Self.package]) { setup in
            var configuration = setup.configuration
            configuration.google.timeoutSeconds = 1
            setup.simulator.notify(DeveloperNotification(packageName: Self.package, eventTime: Self.now, test: .init()))
            setup.simulator.pubSub.setFaults(PubSubFaults(holdEmptyPullMilliseconds: 2_500))
            let outcome = try await GoogleNotificationsRun.perform(
                database: setup.database.storage, configuration: configuration, logger: Logger(label: "test"))
            #expect(outcome.messagesRead == 1 && !outcome.subscriptionLeft)
            #expect(setup.simulator.pubSub.waiting(in: GoogleJobFixture.subscription) == 0)
        }
    }
}
