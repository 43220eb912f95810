import AppStoreSimulator
import Foundation
import GooglePlay
import Postgres
import Storage
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `clawback google-play notifications` as cron runs it, killed with SIGKILL at random points while Google and
/// Pub/Sub fail one call in ten: every chargeback review answered as the policy says, at most once, none past
/// its deadline, and no message acknowledged that was not kept.
@Suite("clawback google-play notifications, end to end", .serialized)
struct GoogleNotificationsCrashTests {
    static let package = GooglePlayWorldGenerator.packageName

    /// The world's notifications: chargeback reviews of granted orders (consumed whole, untouched, unknown to
    /// the hook), of orders the game never granted, and past their deadline; some published twice; voids, test
    /// notifications, another app's, and data that is no notification.
    struct Scenario {
        var reviews: [String: GoogleOrderRecord] = [:]
        var late: Set<String> = []
        var ungranted: Set<String> = []
    }

    static func publish(_ setup: RunCrashTests.Setup, random: inout SeededGenerator) throws -> Scenario {
        let google = try #require(setup.server.simulator.google)
        var scenario = Scenario()
        let now = Date()
        var processed = google.world.orders.values.filter { $0.state == "PROCESSED" && $0.refundReview == nil && $0.purchaseTime < now - 86_400 }
            .sorted { $0.orderId < $1.orderId }
        processed.shuffle(using: &random)
        // Orders bought yesterday that the game never granted (a purchase it failed to deliver).
        var ungranted = (0..<5).map { index in
            GoogleOrderRecord(
                orderId: "GPA.3388-0000-0000-\(index)", packageName: package, purchaseToken: "undelivered-\(index)", productId: "gems_600",
                quantity: 1, priceMilli: 4_990, currency: "EUR", purchaseTime: now - 86_400)
        }
        var chosen = Array(processed.prefix(60))
        for index in chosen.indices {
            let hoursAgo = index < 5 ? 25 : Double.random(in: 0.2...20, using: &random)
            chosen[index].refundReview = .init(pendingRefundToken: "prt-\(index)", notifiedAt: now - hoursAgo * 3600)
            if index < 5 { scenario.late.insert("prt-\(index)") }
        }
        for index in ungranted.indices {
            ungranted[index].refundReview = .init(pendingRefundToken: "prt-u\(index)", notifiedAt: now - 3600)
            scenario.ungranted.insert("prt-u\(index)")
        }
        google.update { world in
            for order in chosen + ungranted { world.orders[order.orderId] = order }
        }
        for order in chosen + ungranted {
            // swift-format-ignore: NeverForceUnwrap
            let review = order.refundReview!  // set just above
            scenario.reviews[review.pendingRefundToken] = order
            let notification = DeveloperNotification(
                packageName: package, eventTime: review.notifiedAt,
                pendingRefundReview: .init(pendingRefundToken: review.pendingRefundToken, orderId: order.orderId))
            google.notify(notification)
            if Bool.random(using: &random) { google.notify(notification) }  // Google published it twice
        }
        let refunded = google.world.orders.values.filter { $0.voids != nil }.sorted { $0.orderId < $1.orderId }.prefix(10)
        for order in refunded {
            google.notify(
                DeveloperNotification(
                    packageName: package, eventTime: now - 600, voidedPurchase: .init(purchaseToken: order.purchaseToken, orderId: order.orderId)))
        }
        for _ in 0..<3 { google.notify(DeveloperNotification(packageName: package, eventTime: now, test: .init())) }
        for index in 0..<3 {
            google.publishRaw(
                Array(#"{"packageName":"com.other.app","eventTimeMillis":"\#(index + 1)","testNotification":{}}"#.utf8), topicOf: package)
        }
        for _ in 0..<2 { google.publishRaw(Array("{not a notification".utf8), topicOf: package) }
        return scenario
    }

    /// Runs the binary once and SIGKILLs it `killAfter` milliseconds after `trigger` first holds, if it is still
    /// running then; true when the kill landed. Watched from a thread of its own: the cooperative threads a
    /// test's task waits on are shared with every other test of the suite, which can keep a sleeping task from
    /// waking for seconds, long enough for the attempt to finish before the kill meant for its middle (CI's
    /// load made every attempt of one run finish first).
    static func attempt(
        _ arguments: [String], environment: [String: String], killAfter milliseconds: UInt32, when trigger: @escaping () throws -> Bool
    ) async throws -> Bool {
        let watch = TriggerProbe(holds: trigger)
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        let process = try ChildProcess.start("clawback", arguments, environment: environment)
                        let deadline = ContinuousClock.now + .seconds(60)
                        while try !watch.holds() && process.isRunning && ContinuousClock.now < deadline { usleep(2_000) }
                        usleep(milliseconds * 1_000)
                        let killed = process.isRunning
                        if killed { kill(process.processIdentifier, SIGKILL) }
                        process.waitUntilExit()
                        return killed
                    })
            }.start()
        }
    }

    @Test(
        "SIGKILL at random points, while an answer is in flight and right after one was taken, with one Google and Pub/Sub call in twenty failing and one reply in twenty lost: every message kept, none acknowledged before it was kept, every review whose facts are known answered once, in time, with one body, as the policy says; none past its deadline"
    )
    func killedAndFaulted() async throws {
        let setup = try await RunCrashTests.Setup.make(googleOrders: 2_000, seed: 47)
        @Sendable func stop(_ setup: RunCrashTests.Setup) async {
            await setup.server.stop()
            try? FileManager.default.removeItem(at: setup.directory)
        }
        try await scoped(setup, stop: stop) { setup in
            // The notifications' subscription, and answers for the app's chargeback reviews.
            let config = setup.directory.appendingPathComponent("clawback.yaml")
            var text = try String(contentsOf: config, encoding: .utf8)
            text = text.replacingOccurrences(
                of: "google_apps:\n",
                with: """
                      notifications:
                        subscription: \(GooglePlayWorldGenerator.subscriptionName)
                        pubsub_url: http://127.0.0.1:\(setup.server.port)
                    google_apps:

                    """)
            text = text.replacingOccurrences(
                of: "    service_account_key_file: google.json\n",
                with: "    service_account_key_file: google.json\n    refund_requests:\n      grants_complete_since: 2020-01-01\n")
            try text.write(to: config, atomically: true, encoding: .utf8)

            var random = SeededGenerator(seed: 48)
            let scenario = try Self.publish(setup, random: &random)
            // Short leases: what a killed run pulled comes again within the test.
            setup.server.simulator.google?.update { world in
                world.subscriptions[GooglePlayWorldGenerator.subscriptionName]?.ackDeadlineSeconds = 2
            }
            // swift-format-ignore: NeverForceUnwrap
            let google = setup.server.simulator.google!  // a Google world
            let published = google.pubSub.waiting(in: GooglePlayWorldGenerator.subscriptionName)

            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let connection = try TestPostgres.connect(database: database)
                // The studio's hook: a third consumed whole, a third untouched, a third unknown.
                try connection.executeScript(
                    unsafeSQL: """
                        CREATE OR REPLACE FUNCTION clawback.units_consumed(
                            p_transaction_id text, p_player_id text, p_product_id text, p_units_granted bigint
                        ) RETURNS bigint LANGUAGE sql STABLE AS $$
                            SELECT CASE abs(hashtext(p_transaction_id)) % 3 WHEN 0 THEN p_units_granted WHEN 1 THEN 0 END
                        $$;
                        """)
                let environment = try setup.environment(database: database)
                let arguments = ["google-play", "notifications", "--log-level", "warning"]
                // Google slow while the kills land (a fifth of a second a call), so that a kill after a commit lands
                // mid-run even on a machine loaded enough to wake the test late.
                google.setFaults(GoogleFaults(latencyMilliseconds: 200, failureShare: 0.05, lostAnswerShare: 0.05))
                google.pubSub.setFaults(PubSubFaults(failureShare: 0.05))
                func progress() throws -> Int {
                    try connection.query(
                        """
                        SELECT (SELECT count(*) FROM clawback.google_notifications)
                            + (SELECT count(*) FROM clawback.google_refund_reviews WHERE state <> 'open')
                        """
                    ).first?.decode(Int.self, at: 0) ?? 0
                }
                func sending() throws -> Bool {
                    try connection.query("SELECT count(*)::bigint FROM clawback.google_refund_reviews WHERE state = 'sending'").first?.decode(
                        Int.self, at: 0) ?? 0 > 0
                }
                var interrupted = 0
                // Random moments after a commit.
                for _ in 0..<4 {
                    let before = try progress()
                    let delay = UInt32.random(in: 0...300, using: &random)
                    let killed = try await Self.attempt(arguments, environment: environment, killAfter: delay) { try progress() != before }
                    // Its last COMMIT and its lock's session may outlive it on the server for a moment.
                    try await TestPostgres.waitForOtherSessionsToEnd(database: database)
                    if killed { interrupted += 1 }
                }
                // `sending` committed, the call sent and not yet answered (Google answers in 200 ms).
                var inFlight = 0
                for _ in 0..<2 {
                    if try await Self.attempt(arguments, environment: environment, killAfter: 50, when: sending) { inFlight += 1 }
                    try await TestPostgres.waitForOtherSessionsToEnd(database: database)
                }
                // Google has taken an answer and clawback has not recorded it yet.
                var crashed = environment
                crashed["CLAWBACK_CRASH_AT"] = "google-notifications.after-send:2"
                _ = try await Self.attempt(arguments, environment: crashed, killAfter: 0) { false }
                try await TestPostgres.waitForOtherSessionsToEnd(database: database)
                #expect(interrupted > 0, "no kill landed while a run was going on")
                #expect(inFlight > 0, "no kill landed while an answer was in flight")
                google.setFaults(GoogleFaults(latencyMilliseconds: 5, failureShare: 0.05, lostAnswerShare: 0.05))
                // Then hourly runs, the faults still on, until one finishes with nothing left.
                var finished = false
                for _ in 0..<12 where !finished {
                    let run = try await CommandRunner.run("clawback", arguments, environment: environment)
                    #expect([0, 75].contains(run.status), "\(run.standardError)")
                    finished = run.status == 0
                }
                #expect(finished, "the runs never finished")

                // What a killed run had pulled, or failed to acknowledge, is leased still: kept, and acknowledged
                // (as a duplicate) by the run after its lease ends.
                try await Task.sleep(for: .milliseconds(2_100))
                google.setFaults(GoogleFaults())
                google.pubSub.setFaults(PubSubFaults())
                let last = try await CommandRunner.run("clawback", arguments + ["--json"], environment: environment)
                #expect(last.status == 0, "\(last.standardError)")
                #expect(google.pubSub.waiting(in: GooglePlayWorldGenerator.subscriptionName) == 0)
                // Every message kept, and none acknowledged that was not kept.
                let kept = Set(
                    try connection.query("SELECT message_id FROM clawback.google_notifications").rows.map { try $0.decode(String.self, at: 0) })
                #expect(kept.count == published)
                #expect(google.pubSub.acknowledgedMessageIDs(in: GooglePlayWorldGenerator.subscriptionName).isSubset(of: kept))

                // Each review whose facts are known: answered, once, with one body, as the policy says, in time.
                let consumed = Dictionary(
                    uniqueKeysWithValues: try connection.query(
                        """
                        SELECT transaction_id, units_granted, clawback.units_consumed(transaction_id, player_id, product_id, units_granted)
                        FROM clawback.grants WHERE store = 'google_play'
                        """
                    ).rows.map { (try $0.decode(String.self, at: 0), (try $0.decode(Int64.self, at: 1), try $0.decode(Int64?.self, at: 2))) })
                let states = Dictionary(
                    uniqueKeysWithValues: try connection.query("SELECT pending_refund_token, state FROM clawback.google_refund_reviews").rows.map {
                        (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1))
                    })
                #expect(Set(states.keys) == Set(scenario.reviews.keys))
                let answers = google.answeredReviews
                var answered = 0
                for (token, order) in scenario.reviews {
                    let answer = answers[token]
                    if scenario.late.contains(token) {
                        #expect(answer == nil && states[token] == "expired", "\(token) answered after its deadline")
                        continue
                    }
                    #expect(states[token] == "answered", "\(token): \(states[token] ?? "none")")
                    guard let answer else {
                        Issue.record("\(token) never reached Google")
                        continue
                    }
                    answered += 1
                    #expect(answer.bodies.count == 1, "\(token) sent with \(answer.bodies.count) different bodies")
                    #expect(answer.receivedAt <= order.refundReview?.notifiedAt.addingTimeInterval(24 * 3600) ?? .distantPast)
                    let expected: String =
                        if scenario.ungranted.contains(token) {
                            "APPROVE"
                        } else {
                            switch consumed[order.purchaseToken] {
                            case .some((let granted, .some(let used))) where used == granted: "DECLINE"
                            case .some((_, .some(0))): "APPROVE"
                            default: "NEUTRAL"
                            }
                        }
                    #expect(answer.preference == expected, "\(token): \(answer.preference), not \(expected)")
                }
                #expect(answered == scenario.reviews.count - scenario.late.count)
                // Some answers were sent more than once (a lost reply, a kill mid-call), and Google kept one.
                #expect(answers.values.contains { $0.calls > 1 }, "no answer was sent again: the faults did not bite")
            }
        }
    }
}

/// The trigger's query (and its connection), handed to the watching thread while the test's task waits for
/// it: never used from two threads at once.
private struct TriggerProbe: @unchecked Sendable {
    let holds: () throws -> Bool
}
