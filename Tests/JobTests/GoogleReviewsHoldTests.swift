import AppStoreSimulator
import Foundation
import GooglePlay
import Logging
import Postgres
import Reports
import Storage
import TestSupport
import Testing

@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

/// Google's chargeback answers hold at the edges: a failing or impossible hook sets one review aside and the
/// others are answered; a hostile message is kept for a person and never blocks the subscription; an
/// unreachable Pub/Sub is an outage, not an empty subscription; an order Google does not know ends the review.
@Suite("Google Play: chargeback answers hold when a hook, a message or the network misbehaves")
struct GoogleReviewsHoldTests {
    static let package = GoogleNotificationsRunTests.package
    static let now = Date()

    @Test(
        "a hook that fails or gives no share of the purchase sets that review aside with the reason; every other review is answered in the same run; the outcome, exit and report say so; fixed, the next run answers them"
    )
    func hookTroubleSetsAside() async throws {
        var orders = (1...6).map { GoogleNotificationsRunTests.order($0) }
        let notifications = orders.indices.map { GoogleNotificationsRunTests.review(&orders[$0]) }
        try await GoogleJobFixture.with(orders, packages: [Self.package]) { setup in
            try GoogleOrdersRunTests.grant(orders, on: setup.connection)
            // token-1: the consumption service is down for this player; token-2: a sentinel; token-3: more than
            // granted; token-4: the usage log is down; token-5 untouched; token-6 consumed whole.
            try setup.connection.executeScript(
                unsafeSQL: """
                    CREATE TABLE public.hook_mode (broken boolean NOT NULL);
                    INSERT INTO public.hook_mode VALUES (true);
                    CREATE OR REPLACE FUNCTION clawback.units_consumed(
                        p_transaction_id text, p_player_id text, p_product_id text, p_units_granted bigint
                    ) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
                    BEGIN
                        IF (SELECT broken FROM public.hook_mode) THEN
                            IF p_transaction_id = 'token-1' THEN RAISE EXCEPTION 'wallet service unreachable for %', p_player_id; END IF;
                            IF p_transaction_id = 'token-2' THEN RETURN -1; END IF;
                            IF p_transaction_id = 'token-3' THEN RETURN p_units_granted + 5; END IF;
                        END IF;
                        RETURN CASE p_transaction_id WHEN 'token-6' THEN p_units_granted ELSE 0 END;
                    END $$;
                    CREATE OR REPLACE FUNCTION clawback.usage_events(p_transaction_id text, p_player_id text, p_product_id text)
                    RETURNS TABLE (used_at timestamptz, description text) LANGUAGE plpgsql STABLE AS $$
                    BEGIN
                        IF (SELECT broken FROM public.hook_mode) AND p_transaction_id = 'token-4' THEN
                            RAISE EXCEPTION 'usage log unreachable';
                        END IF;
                    END $$;
                    GRANT SELECT ON public.hook_mode TO PUBLIC;
                    """)
            for notification in notifications { setup.simulator.notify(notification) }
            let failure: GoogleNotificationsRun.Failure
            do throws(GoogleNotificationsRun.Failure) {
                _ = try await GoogleNotificationsRun.perform(
                    database: setup.database.storage, configuration: setup.configuration, logger: Logger(label: "test"))
                Issue.record("a run with reviews set aside ended as finished")
                return
            } catch {
                failure = error
            }
            #expect(failure.exitStatus == .temporaryFailure, "75: the next run goes on")
            #expect(failure.description.contains("4 of them set aside"), "\(failure.description)")
            let first = try #require(failure.outcome)
            #expect(first.setAside == 4 && first.answered == 2 && first.open == 4 && first.unanswerable == 0)
            let answers = setup.simulator.answeredReviews
            #expect(answers.keys.sorted() == ["prt-token-5", "prt-token-6"], "the others answered in the same run")
            #expect(answers["prt-token-6"]?.preference == "DECLINE" && answers["prt-token-5"]?.preference == "APPROVE")

            let reasons = Dictionary(
                uniqueKeysWithValues: try setup.connection.query(
                    "SELECT pending_refund_token, state, set_aside_reason FROM clawback.google_refund_reviews WHERE set_aside_reason IS NOT NULL"
                ).rows.map { (try $0.decode(String.self, at: 0), (try $0.decode(String.self, at: 1), try $0.decode(String.self, at: 2))) })
            #expect(reasons.count == 4 && reasons.values.allSatisfy { $0.0 == "open" })
            #expect(reasons["prt-token-1"]?.1.contains("wallet service unreachable") == true)
            #expect(reasons["prt-token-2"]?.1.contains("returned -1 for a grant of") == true)
            #expect(reasons["prt-token-3"]?.1.contains("outside 0...") == true)
            #expect(reasons["prt-token-4"]?.1.contains("usage log unreachable") == true)

            // Finance sees them: set aside, with why, in the detail and the figures.
            let lines = try ReportStore(setup.connection.storage).chargebackReviews(
                from: Self.now - 30 * 86_400, to: Self.now + 86_400, asOf: Date())
            #expect(lines.filter { $0.setAsideReason != nil }.count == 4)
            let totals = ChargebackReviewReport.totals(lines).values.reduce(0) { $0 + ($1[.setAside]?.count ?? 0) }
            #expect(totals == 4)
            let header = ChargebackReviewReport.columns
            #expect(header.last == "set_aside_reason")

            // The metrics say it.
            let metrics = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-hold-\(UUID().uuidString).prom").path
            defer { try? FileManager.default.removeItem(atPath: metrics) }
            try await MetricsFile.writeGoogleNotifications(to: .file(metrics), outcome: first, succeeded: false)
            #expect(try String(contentsOfFile: metrics, encoding: .utf8).contains("clawback_google_notifications_reviews_set_aside 4"))

            // The hooks mended: the next run answers the four, as the policy says; nothing answered twice.
            try setup.connection.execute("UPDATE public.hook_mode SET broken = false")
            let second = try await GoogleNotificationsRunTests.run(setup)
            #expect(second.answered == 4 && second.setAside == 0 && second.open == 0)
            #expect(setup.simulator.answeredReviews.count == 6 && setup.simulator.answeredReviews.values.allSatisfy { $0.calls == 1 })
            let cleared = try setup.connection.query(
                "SELECT count(*)::bigint FROM clawback.google_refund_reviews WHERE set_aside_reason IS NOT NULL"
            ).first?.decode(Int.self, at: 0)
            #expect(cleared == 0)
        }
    }

    @Test(
        "the database's own trouble inside the facts (no space, a serialization failure) is not the hook's: the run fails as the database's, nothing is set aside or answered"
    )
    func databaseTroubleIsNotAHookError() async throws {
        var orders = [GoogleNotificationsRunTests.order(1)]
        let notification = GoogleNotificationsRunTests.review(&orders[0])
        try await GoogleJobFixture.with(orders, packages: [Self.package]) { setup in
            try GoogleOrdersRunTests.grant(orders, on: setup.connection)
            setup.simulator.notify(notification)
            for (code, exit) in [("53100", ExitStatus.unavailable), ("40001", .unavailable)] {
                try setup.connection.executeScript(
                    unsafeSQL: """
                        CREATE OR REPLACE FUNCTION clawback.units_consumed(
                            p_transaction_id text, p_player_id text, p_product_id text, p_units_granted bigint
                        ) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
                        BEGIN RAISE EXCEPTION 'as the server would say' USING ERRCODE = '\(code)'; END $$;
                        """)
                do throws(GoogleNotificationsRun.Failure) {
                    _ = try await GoogleNotificationsRun.perform(
                        database: setup.database.storage, configuration: setup.configuration, logger: Logger(label: "test"))
                    Issue.record("SQLSTATE \(code) did not end the run")
                } catch {
                    #expect(error.exitStatus == exit, "\(code): \(error)")
                    #expect(error.outcome == nil, "not a finished run with reviews set aside")
                }
                let setAside = try setup.connection.query(
                    "SELECT count(*)::bigint FROM clawback.google_refund_reviews WHERE set_aside_reason IS NOT NULL"
                ).first?.decode(Int.self, at: 0)
                #expect(setAside == 0 && setup.simulator.answeredReviews.isEmpty)
            }
        }
    }

    @Test(
        "--dry-run: each review's answer as the run would send it, changing nothing (no message kept or acknowledged, nothing stored or sent); the run after it sends exactly what it showed"
    )
    func dryRunShowsWhatTheRunSends() async throws {
        var orders = (1...4).map { GoogleNotificationsRunTests.order($0) }
        let notifications = orders.indices.map { GoogleNotificationsRunTests.review(&orders[$0]) }
        try await GoogleJobFixture.with(orders, packages: [Self.package]) { setup in
            try GoogleOrdersRunTests.grant(orders, on: setup.connection)
            try setup.connection.executeScript(
                unsafeSQL: """
                    CREATE OR REPLACE FUNCTION clawback.units_consumed(
                        p_transaction_id text, p_player_id text, p_product_id text, p_units_granted bigint
                    ) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
                    BEGIN
                        IF p_transaction_id = 'token-4' THEN RAISE EXCEPTION 'wallet service unreachable'; END IF;
                        RETURN CASE p_transaction_id WHEN 'token-1' THEN p_units_granted WHEN 'token-2' THEN 0 END;
                    END $$;
                    -- A studio's hook that writes (an audit row): the preview's read-only session refuses it.
                    CREATE TABLE public.hook_audit (transaction_id text);
                    CREATE OR REPLACE FUNCTION clawback.usage_events(p_transaction_id text, p_player_id text, p_product_id text)
                    RETURNS TABLE (used_at timestamptz, description text) LANGUAGE plpgsql VOLATILE AS $$
                    BEGIN
                        IF p_transaction_id = 'token-3' THEN INSERT INTO public.hook_audit VALUES (p_transaction_id); END IF;
                    END $$;
                    """)
            // One review recorded by an earlier run (Google unavailable then), three still waiting in Pub/Sub.
            setup.simulator.notify(notifications[0])
            setup.simulator.setFaults(GoogleFaults(failures: [200, 503, 503, 503]))
            _ = try await GoogleNotificationsRunTests.run(setup)
            setup.simulator.setFaults(GoogleFaults())
            for notification in notifications.dropFirst() { setup.simulator.notify(notification) }
            func snapshot() throws -> [String] {
                try setup.connection.query(
                    """
                    SELECT 'n ' || message_id || ' ' || deliveries FROM clawback.google_notifications
                    UNION ALL SELECT 'r ' || pending_refund_token || ' ' || state || ' ' || sends || ' ' || coalesce(set_aside_reason, '')
                    FROM clawback.google_refund_reviews
                    UNION ALL SELECT 'a ' || transaction_id FROM public.hook_audit ORDER BY 1
                    """
                ).rows.map { try $0.decode(String.self, at: 0) }
            }
            let before = try snapshot()
            let waitingBefore = setup.simulator.pubSub.waiting(in: GoogleJobFixture.subscription)

            let preview = try await GoogleNotificationsPreview.perform(
                database: setup.database.storage, configuration: setup.configuration, logger: Logger(label: "test"))
            #expect(try snapshot() == before, "the database unchanged")
            #expect(setup.simulator.answeredReviews.isEmpty, "nothing sent")
            #expect(setup.simulator.pubSub.waiting(in: GoogleJobFixture.subscription) == waitingBefore, "nothing acknowledged")
            // Handed back, not only unacknowledged: the run below, whose leases last 600 s, pulls them at once.
            let actions = Dictionary(uniqueKeysWithValues: preview.reviews.map { ($0.pendingRefundToken, $0) })
            #expect(preview.messagesWaiting == 3 && actions.count == 4)
            #expect(actions["prt-token-1"]?.action == "resend" && actions["prt-token-1"]?.waiting == false)
            #expect(actions["prt-token-2"]?.action == "send" && actions["prt-token-2"]?.preference == "APPROVE")
            #expect(
                actions["prt-token-3"]?.action == "set_aside" && actions["prt-token-3"]?.reason.contains("read-only transaction") == true,
                "a hook that writes is refused in the preview: \(actions["prt-token-3"]?.reason ?? "")")
            #expect(actions["prt-token-4"]?.action == "set_aside" && actions["prt-token-4"]?.reason.contains("wallet service unreachable") == true)
            #expect(preview.rendered(json: false, oneLine: false).contains("DRY RUN"))

            // The run sends what the preview showed.
            _ = try await GoogleNotificationsRunTests.run(setup)
            let sent = setup.simulator.answeredReviews
            for (token, line) in actions where line.action == "send" || line.action == "resend" {
                #expect(
                    sent[token]?.preference == line.preference,
                    "\(token): sent \(sent[token]?.preference ?? "nothing"), previewed \(line.preference ?? "")")
            }
            #expect(sent["prt-token-4"] == nil)
            #expect(sent["prt-token-3"]?.preference == "NEUTRAL", "the run itself lets the hook write")
        }
    }

    /// A notification's JSON text with one field replaced, for the hostile cases.
    static func review(_ number: Int, eventTime: String = "\"1790000000000\"", reason: String = "7", token: String? = nil) -> String {
        let token = token ?? "\"prt-hostile-\(number)\""
        return
            #"{"version":"1.0","packageName":"com.studio.game","eventTimeMillis":\#(eventTime),"pendingRefundReviewNotification":{"pendingRefundToken":\#(token),"orderId":"GPA.9-\#(number)","refundReason":\#(reason)}}"#
    }

    /// Messages no well-behaved Google sends, each as its data bytes.
    static var hostile: [(String, [UInt8])] {
        var cases: [(String, String)] = [
            ("event time past Int64 microseconds", review(1, eventTime: "1000000000000000000")),
            ("event time as a huge string", review(2, eventTime: "\"9223372036854775807\"")),
            ("event time negative", review(3, eventTime: "-5")),
            ("event time fractional", review(4, eventTime: "1.5")),
            ("event time in the year 9000, a deadline that never comes", review(11, eventTime: "221845392000000")),
            ("refundReason past 2^31", review(5, reason: "4294967296")),
            ("refundReason past Int64", review(6, reason: "99999999999999999999999")),
            ("refundReason a string", review(7, reason: "\"seven\"")),
            ("token with NUL", review(8, token: #""prt\u0000x""#)),
            ("token a number", review(9, token: "12")),
            ("token empty", review(10, token: #""""#)),
            ("package name with NUL", #"{"packageName":"com.studio.game\u0000","eventTimeMillis":"1","testNotification":{}}"#),
            ("huge package name", #"{"packageName":""# + String(repeating: "p", count: 1 << 20) + #"","eventTimeMillis":"1","testNotification":{}}"#),
            ("deeply nested", String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)),
            ("deep object", String(repeating: #"{"a":"#, count: 20_000) + "1" + String(repeating: "}", count: 20_000)),
            ("two notifications", #"{"packageName":"com.studio.game","eventTimeMillis":"1","testNotification":{},"voidedPurchaseNotification":{}}"#),
            ("not JSON", "{\"packageName\": com.studio.game"),
            ("JSON null", "null"),
            ("a bare string", "\"hello\""),
            ("lone surrogate", #"{"packageName":"\ud800","eventTimeMillis":"1","testNotification":{}}"#),
        ]
        cases.append(("5 MB of data", String(repeating: "x", count: 5 << 20)))
        var bytes = cases.map { ($0.0, Array($0.1.utf8)) }
        bytes.append(("invalid UTF-8", [0x7B, 0xFF, 0xFE, 0x22, 0x7D]))
        bytes.append(("NUL bytes", [0, 0, 0]))
        bytes.append(("empty", []))
        return bytes
    }

    @Test(
        "hostile messages through Pub/Sub: each kept for a person with a named problem, none crashes the run, none blocks the subscription; the review published after them is answered"
    )
    func hostileMessagesThroughTheSubscription() async throws {
        var orders = [GoogleNotificationsRunTests.order(1)]
        let good = GoogleNotificationsRunTests.review(&orders[0])
        try await GoogleJobFixture.with(orders, packages: [Self.package]) { setup in
            try GoogleOrdersRunTests.grant(orders, on: setup.connection)
            for (_, data) in Self.hostile { setup.simulator.publishRaw(data, topicOf: Self.package) }
            setup.simulator.notify(good)
            let outcome = try await GoogleNotificationsRunTests.run(setup)
            // The huge package name is a notification clawback can read, about an app it does not serve.
            #expect(outcome.messagesRead == Self.hostile.count + 1 && outcome.unreadable == Self.hostile.count - 1, "\(outcome)")
            #expect(outcome.unknownPackages == 1 && outcome.reviewsOpened == 1)
            #expect(outcome.answered == 1 && !outcome.subscriptionLeft && outcome.pubSubFailure == nil)
            #expect(setup.simulator.pubSub.waiting(in: GoogleJobFixture.subscription) == 0, "nothing left blocking the subscription")
            let problems = try setup.connection.query(
                "SELECT problem FROM clawback.google_notifications WHERE kind IN ('unreadable', 'unknown_package')"
            ).rows.map { try $0.decode(String.self, at: 0) }
            #expect(problems.allSatisfy { $0.count < 2_000 }, "a problem names the value, not all of it")
            #expect(problems.count == Self.hostile.count && problems.allSatisfy { !$0.isEmpty })
            #expect(problems.contains { $0.contains("past the year 9999") })
            #expect(problems.contains { $0.contains("refundReason 4294967296 is out of range") })
            #expect(problems.contains { $0.contains("holds a NUL character") })
        }
    }

    @Test(
        "fuzzed: thousands of mutated notifications and hostile message ids through DeveloperNotification.read and the keep path on the real database: each kept (as read, or for a person with a named problem) or refused by name, never a crash, and a batch is never held back by one message"
    )
    func fuzzedKeepPath() async throws {
        try await GoogleJobFixture.with([], packages: [Self.package]) { setup in
            var random = SeededGenerator(seed: 44)
            let seeds = [
                Self.review(1), #"{"packageName":"com.studio.game","eventTimeMillis":"1790000000000","testNotification":{"version":"1.0"}}"#,
                #"{"packageName":"com.studio.game","eventTimeMillis":1790000000000,"voidedPurchaseNotification":{"purchaseToken":"t","orderId":"GPA.1","productType":2,"refundType":1}}"#,
            ].map { Array($0.utf8) }
            let fragments = [
                "1e400", "-0", "18446744073709551616", "\"\\u0000\"", "null", "[]", "{}", "true", "\"\\ud800\"", "9999999999999999999",
                String(repeating: "9", count: 400), "\"" + String(repeating: "z", count: 70_000) + "\"",
            ].map { Array($0.utf8) }
            var batch: [KeptNotification] = []
            var kept = 0
            for index in 0..<3_000 {
                var data = seeds[index % seeds.count]
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0 where !data.isEmpty:  // flip a byte
                        data[Int.random(in: 0..<data.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                    case 1 where !data.isEmpty:  // cut
                        data.removeLast(Int.random(in: 0..<min(data.count, 20), using: &random))
                    case 2:  // splice a hostile value in after a colon
                        if let colon = data.indices.filter({ data[$0] == UInt8(ascii: ":") }).randomElement(using: &random) {
                            var end = colon + 1
                            while end < data.count, ![UInt8(ascii: ","), UInt8(ascii: "}")].contains(data[end]) { end += 1 }
                            data.replaceSubrange((colon + 1)..<end, with: fragments.randomElement(using: &random) ?? [])
                        }
                    default:  // duplicate a stretch
                        if data.count > 2 {
                            let start = Int.random(in: 0..<(data.count - 1), using: &random)
                            data.insert(contentsOf: data[start..<min(data.count, start + 30)], at: start)
                        }
                    }
                }
                let ids = ["m-\(index)", "m-\(index)\u{0}nul", String(repeating: "i", count: 5_000) + "\(index)", ""]
                let id = index % 97 == 0 ? ids[Int.random(in: 1..<ids.count, using: &random)] : ids[0]
                let message = PubSubClient.ReceivedMessage(
                    ackID: "a-\(index)", messageID: id, data: data, rawData: "", publishTime: Date(), attributes: [:])
                batch.append(GoogleNotificationsWork.kept(message, subscription: GoogleJobFixture.subscription, configured: [Self.package]))
                if batch.count == 100 {
                    let result = try GoogleNotificationStore.keepReporting(batch, on: setup.connection.storage)
                    kept += result.added.count
                    batch.removeAll()
                }
            }
            let counted = try setup.connection.query("SELECT count(*)::bigint FROM clawback.google_notifications").first?.decode(Int.self, at: 0)
            #expect(counted == kept && kept >= 2_950, "\(kept) kept")
            let unnamed = try setup.connection.query(
                "SELECT count(*)::bigint FROM clawback.google_notifications WHERE kind = 'unreadable' AND coalesce(problem, '') = ''"
            ).first?.decode(Int.self, at: 0)
            #expect(unnamed == 0, "every unreadable one says why")
        }
    }

    @Test("a message whose values PostgreSQL refuses is kept as unreadable with PostgreSQL's reason, and the rest of its batch as read")
    func refusedAsReadIsKeptForAPerson() async throws {
        try await GoogleJobFixture.with([], packages: [Self.package]) { setup in
            let fine = KeptNotification(
                subscription: GoogleJobFixture.subscription, messageID: "ok-1", kind: .test, packageName: Self.package, eventTime: Self.now,
                data: [1])
            // Past what PostgreSQL's timestamptz holds (and past Int64 microseconds): the formatter does not trap.
            var far = fine
            far.messageID = "far"
            far.eventTime = Date(timeIntervalSince1970: 1e15)
            var nul = fine
            nul.messageID = "nul\u{0}id"
            let result = try GoogleNotificationStore.keepReporting([fine, far, nul], on: setup.connection.storage)
            #expect(result.added == ["ok-1", "far", "nul\u{FFFD}id"])
            #expect(result.refusedAsRead["far"]?.contains("PostgreSQL would not keep it as read") == true, "\(result.refusedAsRead)")
            #expect(result.refusedAsRead["nul\u{FFFD}id"]?.contains("NUL") == true, "\(result.refusedAsRead)")
            let kinds = try setup.connection.query("SELECT message_id, kind FROM clawback.google_notifications ORDER BY 1").rows.map {
                "\(try $0.decode(String.self, at: 0)) \(try $0.decode(String.self, at: 1))"
            }
            #expect(kinds == ["far unreadable", "nul\u{FFFD}id unreadable", "ok-1 test"])
        }
    }

    @Test("a review of an order Google does not know, beside an order it answers, ends unanswerable on the first run, not asked every hour")
    func unknownOrderEndsUnanswerable() async throws {
        var orders = [GoogleNotificationsRunTests.order(1)]
        let known = GoogleNotificationsRunTests.review(&orders[0])
        try await GoogleJobFixture.with(orders, packages: [Self.package]) { setup in
            try GoogleOrdersRunTests.grant(orders, on: setup.connection)
            setup.simulator.notify(known)
            _ = try await GoogleNotificationsRunTests.run(setup)
            // Google notifies a review of an order its Orders API does not answer.
            setup.simulator.notify(
                DeveloperNotification(
                    packageName: Self.package, eventTime: Self.now - 600,
                    pendingRefundReview: .init(pendingRefundToken: "prt-ghost", orderId: "GPA.3300-0000-0000-99999")))
            let outcome = try await GoogleNotificationsRunTests.run(setup)
            #expect(outcome.unanswerable == 1 && outcome.open == 0, "\(outcome)")
            let reason = try setup.connection.query(
                "SELECT state, reason FROM clawback.google_refund_reviews WHERE pending_refund_token = 'prt-ghost'"
            ).first.map { "\(try $0.decode(String.self, at: 0)): \(try $0.decode(String.self, at: 1))" }
            #expect(reason?.hasPrefix("unanswerable: Google's Orders API does not know order") == true, "\(reason ?? "none")")
        }
    }

    @Test("a job's start refused the database's CONNECT privilege fails 77 naming it, as every job's start classifies it")
    func connectRefusedAtStart() async throws {
        try await GoogleJobFixture.with([], packages: [Self.package]) { setup in
            try await TestPostgres.withRole(database: setup.databaseName, prefix: "no_connect") { _, asRole in
                try setup.connection.execute("REVOKE CONNECT ON DATABASE \(identifier: setup.databaseName) FROM PUBLIC")
                defer { _ = try? setup.connection.execute("GRANT CONNECT ON DATABASE \(identifier: setup.databaseName) TO PUBLIC") }
                let database = PostgresConfiguration(connectionString: asRole, applicationName: "clawback-tests")
                do throws(GoogleNotificationsRun.Failure) {
                    _ = try await GoogleNotificationsRun.perform(
                        database: database.storage, configuration: setup.configuration, logger: Logger(label: "test"))
                    Issue.record("a refused login ran")
                } catch {
                    #expect(error.exitStatus == .permissionDenied, "\(error)")
                    #expect(error.description.contains("CONNECT on database"), "\(error)")
                }
            }
        }
    }

    @Test("a black-holed Pub/Sub is an outage: the run exits 75 naming it, never 'read to its end'; an empty subscription is 0")
    func blackHoledPubSub() async throws {
        try await GoogleJobFixture.with([], packages: [Self.package]) { setup in
            // A loopback port whose full accept queue drops every SYN, as a black-holed address does.
            let hole = try SilentListener(backlog: 0)
            hole.fillBacklog()
            var configuration = setup.configuration
            configuration.google.timeoutSeconds = 1
            configuration.google.notifications?.pubsubURL = "http://127.0.0.1:\(hole.port)"
            do throws(GoogleNotificationsRun.Failure) {
                let outcome = try await GoogleNotificationsRun.perform(
                    database: setup.database.storage, configuration: configuration, logger: Logger(label: "test"))
                Issue.record("a black-holed Pub/Sub ended as read to its end: \(outcome)")
            } catch {
                #expect(error.exitStatus == .temporaryFailure)
                #expect(error.outcome?.subscriptionLeft == true)
                #expect(error.description.contains("never left"), "\(error.description)")
            }
            withExtendedLifetime(hole) {}
            // The simulator's empty subscription, held open past the timeout: the end of the messages.
            setup.simulator.pubSub.setFaults(PubSubFaults(holdEmptyPullMilliseconds: 2_500))
            var held = setup.configuration
            held.google.timeoutSeconds = 1
            let outcome = try await GoogleNotificationsRun.perform(
                database: setup.database.storage, configuration: held, logger: Logger(label: "test"))
            #expect(!outcome.subscriptionLeft && outcome.pubSubFailure == nil)
        }
    }
}
