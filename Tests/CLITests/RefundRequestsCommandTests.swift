import AppStoreSimulator
import Foundation
import Postgres
import Storage
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `clawback refund-requests answer` as the hourly cron runs it: the real binary against PostgreSQL and the
/// simulator over loopback, killed at every crash point and at random moments, run twice at once, rerun.
@Suite("clawback refund-requests, end to end", .serialized)
struct RefundRequestsCommandTests {
    static let consented = "com.studio.game"
    static let silent = "com.studio.quiet"

    /// A world of purchases in two apps (only the first has the customers' consent), `open` refund requests
    /// still within their 12 hours, and older requests Apple already decided.
    struct Setup {
        let server: SimulatorServer
        let output: WorldGenerator.Output
        let directory: URL

        /// `grantsComplete`: the consented app says its grants are complete since before the first purchase.
        /// `undeliveredAfterHours`: 0 answers "not delivered" at once; Apple's requests here are up to 11 hours old.
        static func make(open: Int, seed: UInt64, grantsComplete: Bool = true, undeliveredAfterHours: Int = 0) async throws -> Setup {
            let now = Date()
            var options = WorldGenerator.Options(start: now - 86_400 * 50, end: now - 7200, now: now)
            options.purchases = max(2000, open * 5)
            options.bundleIDs = [consented, silent]
            options.refundRate = 0.05
            options.reversalShare = 0
            options.refundRequestShare = 0.5
            options.declinedRequestShare = 0.3
            options.openRefundRequests = open
            options.undeliveredShare = 0.1
            options.sandboxShare = 0.05
            options.seed = seed
            let output = WorldGenerator.generate(options)
            let chain = try SigningChain()
            let simulator = Simulator(world: output.world, chain: chain, configuration: .init(rateLimits: nil))
            let server = try await SimulatorServer.start(simulator: simulator, threads: 1)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-refund-requests-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try GeneratedFiles.write(output, to: directory.path)
            try chain.rootPEM().write(to: directory.appendingPathComponent("root.pem"), atomically: true, encoding: .utf8)
            let day = ISO8601DateFormatter()
            day.formatOptions = [.withFullDate]
            var apps = "apps:\n"
            for app in output.apps {
                apps += """
                      - bundle_id: \(app.record.bundleId)
                        app_apple_id: \(app.record.appAppleId)
                        issuer_id: \(app.record.issuerId)
                        key_id: \(app.keyID)
                        key_file: keys/AuthKey_\(app.keyID).p8
                        refund_requests:
                          customer_consented: \(app.record.bundleId == consented)
                          sample_content_products: [gems_100]
                    \(grantsComplete ? "      grants_complete_since: \(day.string(from: now - 86_400 * 60))" : "")

                    """
            }
            try """
            apple:
              production_url: http://127.0.0.1:\(server.port)
              sandbox_url: http://127.0.0.1:\(server.port)/sandbox
              trusted_roots: [root.pem]
              rate_limits: {notification_history: 100000, send_consumption_information: 100000}
              timeout_seconds: 5
            refund_requests:
              lookback_hours: 1500
              undelivered_after_hours: \(undeliveredAfterHours)
              metrics_file: refund-requests.prom
            \(apps)
            """.write(to: directory.appendingPathComponent("clawback.yaml"), atomically: true, encoding: .utf8)
            return Setup(server: server, output: output, directory: directory)
        }

        /// Migrates, loads the grants, and installs a studio hook: units consumed known for most purchases.
        func prepare(database: String) throws {
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            _ = try GrantImport.importJSONLines(
                try Data(contentsOf: directory.appendingPathComponent("grants.jsonl")), skipInvalid: false, on: connection.storage)
            try connection.execute(
                """
                CREATE OR REPLACE FUNCTION clawback.units_consumed(p_transaction_id text, p_player_id text, p_product_id text, p_units_granted bigint)
                RETURNS bigint LANGUAGE sql STABLE AS $$
                    SELECT CASE WHEN right(p_transaction_id, 1) IN ('0', '5') THEN NULL
                                ELSE p_units_granted * right(p_transaction_id, 2)::bigint / 99 END
                $$
                """)
        }

        func environment(database: String) throws -> [String: String] {
            [
                "CLAWBACK_CONFIG": directory.appendingPathComponent("clawback.yaml").path,
                "CLAWBACK_DATABASE_URL": try TestPostgres.connectionString(database: database),
            ]
        }

        var openRequests: [TransactionRecord] {
            output.transactions.filter { $0.refundRequest != nil && $0.refundRequest?.decision == nil }
        }

        func stop() async {
            await server.stop()
            try? FileManager.default.removeItem(at: directory)
        }

        /// A setup for the length of `body`, stopped (awaited) however the body ends.
        static func with<T>(
            open: Int, seed: UInt64, grantsComplete: Bool = true, undeliveredAfterHours: Int = 0, _ body: (Setup) async throws -> T
        ) async throws -> T {
            try await scoped(
                try await make(open: open, seed: seed, grantsComplete: grantsComplete, undeliveredAfterHours: undeliveredAfterHours),
                stop: { await $0.stop() }, body)
        }
    }

    static let arguments = ["refund-requests", "answer", "--log-level", "warning"]

    /// Starts the command, armed to kill itself at `crashAt` when given (and never otherwise).
    static func start(_ setup: Setup, database: String, crashAt: String? = nil) throws -> ChildProcess {
        var environment = try setup.environment(database: database)
        environment["CLAWBACK_CRASH_AT"] = crashAt
        return try ChildProcess.start(
            "clawback", arguments, environment: environment, removing: crashAt == nil ? ["CLAWBACK_CRASH_AT"] : [], directory: setup.directory)
    }

    @Test(
        "500 open requests: killed at every crash point and at random moments, run twice at once, then rerun: every consented request answered once within its deadline, none of the other app's, nothing sent again"
    )
    func exactlyOnce() async throws {
        try await Setup.with(open: 500, seed: 23) { setup in
            let open = setup.openRequests
            #expect(open.count == 500)
            let consentedOpen = Set(open.filter { $0.bundleId == Self.consented }.map(\.transactionId))
            #expect(consentedOpen.count > 150 && consentedOpen.count < 350)
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let monitor = try TestPostgres.connect(database: database)
                var afterSendKills = 0
                // Crash points, each where it hurts most; then SIGKILL at random moments.
                for point in [
                    "refund-requests.after-record", "refund-requests.before-send:30", "refund-requests.after-send:40",
                    "refund-requests.before-send:30", "refund-requests.after-send:30",
                ] {
                    let process = try Self.start(setup, database: database, crashAt: point)
                    try await process.waitUntilExit(thenForSessionsOn: database)
                    #expect(process.terminationReason == .uncaughtSignal, "\(point) did not kill the run: exit \(process.terminationStatus)")
                    if point.contains("after-send") { afterSendKills += 1 }
                }
                var random = SeededGenerator(seed: 5)
                for _ in 0..<3 {
                    let process = try Self.start(setup, database: database)
                    try await Task.sleep(for: .milliseconds(Int64.random(in: 30...300, using: &random)))
                    kill(process.processIdentifier, SIGKILL)
                    try await process.waitUntilExit(thenForSessionsOn: database)
                }
                // Two at once: one runs, the other finds the lock taken (85) or, if the first is already done, has nothing to do.
                async let first = CommandRunner.run("clawback", Self.arguments, environment: try setup.environment(database: database))
                async let second = CommandRunner.run("clawback", Self.arguments, environment: try setup.environment(database: database))
                let statuses = [try await first, try await second].map(\.status)
                #expect(statuses.contains(0), "\(statuses)")
                #expect(statuses.allSatisfy { [0, 85].contains($0) }, "\(statuses)")

                let answers = setup.server.simulator.consumptionAnswers
                let byTransaction = Dictionary(grouping: answers, by: \.transactionId)
                #expect(Set(byTransaction.keys) == consentedOpen, "answered a request it should not have, or missed one")
                #expect(answers.allSatisfy { $0.bundleId == Self.consented && $0.solicited && !$0.late })
                // Each request got one answer; the same body again only where a run died after Apple's 202.
                for (id, sent) in byTransaction { #expect(Set(sent.map(\.body)).count == 1, "\(id) got different answers") }
                let duplicates = byTransaction.values.map { $0.count - 1 }.reduce(0, +)
                #expect(duplicates <= afterSendKills * 8 + 3 * 8, "\(duplicates) answers sent twice")
                let attempts = try monitor.query(
                    "SELECT transaction_id, attempts FROM clawback.refund_requests WHERE state = 'answered'"
                ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(Int.self, at: 1)) }
                for (id, count) in attempts { #expect((byTransaction[id]?.count ?? 0) <= count, "\(id) sent more often than attempted") }

                let states = try monitor.query(
                    """
                    SELECT bundle_id, state, count(*), count(*) FILTER (WHERE answered_at > deadline)
                    FROM clawback.refund_requests WHERE requested_at > now() - interval '12 hours' GROUP BY 1, 2
                    """
                ).rows.map {
                    "\(try $0.decode(String.self, at: 0)) \(try $0.decode(String.self, at: 1)) \(try $0.decode(Int.self, at: 2)) late \(try $0.decode(Int.self, at: 3))"
                }
                #expect(
                    Set(states) == [
                        "\(Self.consented) answered \(consentedOpen.count) late 0",
                        "\(Self.silent) not_consented \(500 - consentedOpen.count) late 0",
                    ])

                // A rerun finds nothing to send.
                let rerun = try await CommandRunner.run(
                    "clawback", Self.arguments + ["--json"], environment: try setup.environment(database: database))
                #expect(rerun.status == 0, "\(rerun.standardError)")
                #expect(setup.server.simulator.consumptionAnswers.count == answers.count)
                let summary = try JSONSerialization.jsonObject(with: Data(rerun.standardOutput.utf8)) as? [String: Any]
                #expect(summary?["answered"] as? Int == 0)
                #expect(summary?["open"] as? Int == 0)
            }
        }
    }

    @Test(
        "a role that may only read: refund-requests answer and run exit 77 naming the table they could not write, not 69, which schedulers would retry every hour"
    )
    func readOnlyRole() async throws {
        try await Setup.with(open: 20, seed: 29) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let readOnly = ["GRANT USAGE ON SCHEMA clawback TO ROLE", "GRANT SELECT ON ALL TABLES IN SCHEMA clawback TO ROLE"]
                try await TestPostgres.withRole(database: database, prefix: "read_only", grants: readOnly) { _, asRole in
                    var environment = try setup.environment(database: database)
                    environment["CLAWBACK_DATABASE_URL"] = asRole
                    let answer = try await CommandRunner.run("clawback", Self.arguments, environment: environment)
                    #expect(answer.status == 77, "\(answer.standardError)")
                    #expect(answer.standardError.contains("lacks a privilege"), "\(answer.standardError)")
                    #expect(answer.standardError.contains("on table refund_request"), "\(answer.standardError)")
                    let day = ISO8601DateFormatter()
                    day.formatOptions = [.withFullDate]
                    let run = try await CommandRunner.run(
                        "clawback", ["run", "--from", day.string(from: Date() - 86_400 * 60), "--to", day.string(from: Date() + 86_400)],
                        environment: environment)
                    #expect(run.status == 77, "\(run.standardError)")
                    #expect(run.standardError.contains("lacks a privilege"), "\(run.standardError)")
                }
                let connection = try TestPostgres.connect(database: database)
                let written = try connection.query("SELECT (SELECT count(*) FROM clawback.refund_requests) + (SELECT count(*) FROM clawback.runs)")
                #expect(try written.first?.decode(Int.self, at: 0) == 0, "nothing written by a role that may not write")
            }
        }
    }

    @Test(
        "--dry-run prints each request's answer as the job would send it and changes nothing (no request recorded, no cursor moved, nothing sent); the job then sends exactly those answers"
    )
    func dryRun() async throws {
        try await Setup.with(open: 30, seed: 31) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let environment = try setup.environment(database: database)
                let monitor = try TestPostgres.connect(database: database)
                func snapshot() throws -> [String] {
                    try monitor.query(
                        """
                        SELECT 'r ' || notification_uuid || ' ' || state FROM clawback.refund_requests
                        UNION ALL SELECT 'c ' || bundle_id || ' ' || environment || ' ' || read_until FROM clawback.refund_request_cursors
                        ORDER BY 1
                        """
                    ).rows.map { try $0.decode(String.self, at: 0) }
                }
                let before = try snapshot()
                let preview = try await CommandRunner.run("clawback", Self.arguments + ["--dry-run", "--json"], environment: environment)
                #expect(preview.status == 0, "\(preview.standardError)")
                #expect(try snapshot() == before, "nothing recorded, no cursor moved")
                #expect(setup.server.simulator.consumptionAnswers.isEmpty, "nothing sent")
                struct Shown: Decodable {
                    struct Line: Decodable {
                        var transactionID: String
                        var action: String
                        var deliveryStatus: String?
                        var consumptionPercentage: Int?
                        var refundPreference: String?
                    }
                    var requests: [Line]
                }
                let shown = try JSONDecoder().decode(Shown.self, from: Data(preview.standardOutput.utf8))
                let sends = shown.requests.filter { $0.action == "send" }
                #expect(!sends.isEmpty)

                let result = try await CommandRunner.run("clawback", Self.arguments, environment: environment)
                #expect(result.status == 0, "\(result.standardError)")
                let answers = Dictionary(setup.server.simulator.consumptionAnswers.map { ($0.transactionId, $0.body) }) { first, _ in first }
                #expect(answers.count == sends.count, "the job sends what the preview showed, no more")
                for line in sends {
                    let sent = answers[line.transactionID]
                    #expect(sent?.deliveryStatus == line.deliveryStatus && sent?.refundPreference == line.refundPreference, "\(line.transactionID)")
                    #expect(sent?.consumptionPercentage.map(Int.init) == line.consumptionPercentage, "\(line.transactionID)")
                }
            }
        }
    }

    @Test("the answers say what the grants and the studio's hook say; Apple's decisions are joined to the requests they answer")
    func answersAndOutcomes() async throws {
        try await Setup.with(open: 60, seed: 29) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let result = try await CommandRunner.run("clawback", Self.arguments, environment: try setup.environment(database: database))
                #expect(result.status == 0, "\(result.standardError)")
                let granted = Set(setup.output.grants.map(\.transaction_id))
                let units = Dictionary(setup.output.grants.map { ($0.transaction_id, $0.units_granted) }) { first, _ in first }
                let answers = setup.server.simulator.consumptionAnswers
                #expect(!answers.isEmpty)
                var undelivered = 0
                for answer in answers {
                    let id = answer.transactionId
                    guard granted.contains(id), let units = units[id] else {
                        undelivered += 1
                        #expect(answer.body.deliveryStatus == "UNDELIVERED_OTHER")
                        #expect(answer.body.refundPreference == "GRANT_FULL")
                        continue
                    }
                    #expect(answer.body.deliveryStatus == "DELIVERED")
                    if ["0", "5"].contains(id.suffix(1)) {
                        #expect(answer.body.consumptionPercentage == nil)
                        #expect(answer.body.refundPreference == nil)
                    } else {
                        let consumed = units * (Int64(id.suffix(2)) ?? 0) / 99
                        let expected = Int32((Double(consumed) * 100_000 / Double(units)).rounded())
                        #expect(answer.body.consumptionPercentage == expected, "\(id)")
                        let preference = expected == 0 ? "GRANT_FULL" : expected >= 50_000 ? "DECLINE" : "GRANT_PRORATED"
                        #expect(answer.body.refundPreference == preference, "\(id)")
                    }
                }
                #expect(undelivered > 0)
                // Every request Apple already decided has the decision Apple announced.
                let decided = setup.output.transactions.filter { $0.refundRequest?.decision != nil }
                let monitor = try TestPostgres.connect(database: database)
                let outcomes = Dictionary(
                    try monitor.query("SELECT transaction_id, coalesce(outcome, ''), state FROM clawback.refund_requests").rows.map {
                        (try $0.decode(String.self, at: 0), (try $0.decode(String.self, at: 1), try $0.decode(String.self, at: 2)))
                    }
                ) { first, _ in first }
                let withinReach = decided.filter { $0.refundRequest.map { $0.date > Date() - 1400 * 3600 } ?? false }
                #expect(!withinReach.isEmpty)
                for record in withinReach {
                    #expect(outcomes[record.transactionId]?.0 == record.refundRequest?.decision, "\(record.transactionId)")
                    // Too late to answer: never sent.
                    #expect(["expired", "not_consented"].contains(outcomes[record.transactionId]?.1 ?? ""))
                }
                #expect(answers.allSatisfy { answer in !decided.contains { $0.transactionId == answer.transactionId } })

                // Staff see one request and the answer sent, by transaction id or notificationUUID.
                let answered = try #require(answers.first)
                let shown = try await CommandRunner.run(
                    "clawback", ["refund-requests", "show", answered.transactionId, "--json"], environment: try setup.environment(database: database))
                #expect(shown.status == 0, "\(shown.standardError)")
                let objects = try #require(try JSONSerialization.jsonObject(with: Data(shown.standardOutput.utf8)) as? [[String: String]])
                #expect(objects.count == 1)
                #expect(objects.first?["state"] == "answered")
                #expect(objects.first?["answered_in_time"] == "yes")
                #expect(objects.first?["answer"]?.contains(answered.body.deliveryStatus) == true)
                let uuid = try #require(objects.first?["notification_uuid"])
                let byUUID = try await CommandRunner.run(
                    "clawback", ["refund-requests", "show", uuid.uppercased()], environment: try setup.environment(database: database))
                #expect(byUUID.status == 0)
                #expect(byUUID.standardOutput.contains(answered.transactionId))
                let missing = try await CommandRunner.run(
                    "clawback", ["refund-requests", "show", "999"], environment: try setup.environment(database: database))
                #expect(missing.status == 66)
                #expect(missing.standardError.contains("no refund request"))
            }
        }
    }

    @Test("without grants known complete, a purchase with no grant is not answered at all (unanswerable, said, exit 0); one with a grant is")
    func deliveryUnknown() async throws {
        try await Setup.with(open: 60, seed: 37, grantsComplete: false) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let result = try await CommandRunner.run(
                    "clawback", Self.arguments + ["--json"], environment: try setup.environment(database: database))
                #expect(result.status == 0, "\(result.standardError)")
                let granted = Set(setup.output.grants.map(\.transaction_id))
                let open = setup.openRequests.filter { $0.bundleId == Self.consented }
                let ungranted = open.filter { !granted.contains($0.transactionId) }
                #expect(!ungranted.isEmpty)
                let answered = Set(setup.server.simulator.consumptionAnswers.map(\.transactionId))
                #expect(answered == Set(open.filter { granted.contains($0.transactionId) }.map(\.transactionId)))
                let summary = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
                #expect(summary?["unanswerable"] as? Int == ungranted.count)
                #expect(summary?["open"] as? Int == 0)
                let monitor = try TestPostgres.connect(database: database)
                let states = try monitor.query(
                    "SELECT transaction_id FROM clawback.refund_requests WHERE state = 'unanswerable' AND last_error LIKE '%whether it was delivered%'"
                ).rows.map { try $0.decode(String.self, at: 0) }
                #expect(Set(states) == Set(ungranted.map(\.transactionId)))
            }
        }
    }

    @Test(
        "consent withdrawn after answers were stored (some perhaps sent): they are not sent again nor called not_consented; the unanswered become not_consented; exit 0"
    )
    func consentWithdrawnAfterStoring() async throws {
        try await Setup.with(open: 60, seed: 43) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let killed = try Self.start(setup, database: database, crashAt: "refund-requests.before-send:3")
                try await killed.waitUntilExit(thenForSessionsOn: database)
                #expect(killed.terminationReason == .uncaughtSignal)
                let monitor = try TestPostgres.connect(database: database)
                let stored = Set(
                    try monitor.query("SELECT transaction_id FROM clawback.refund_requests WHERE state = 'sending'").rows.map {
                        try $0.decode(String.self, at: 0)
                    })
                #expect(!stored.isEmpty, "the kill left answers stored but unconfirmed")
                let sentBefore = Dictionary(grouping: setup.server.simulator.consumptionAnswers, by: \.transactionId).mapValues(\.count)

                let config = try String(contentsOf: setup.directory.appendingPathComponent("clawback.yaml"), encoding: .utf8)
                let withdrawn = setup.directory.appendingPathComponent("withdrawn.yaml")
                try config.replacingOccurrences(of: "customer_consented: true", with: "customer_consented: false")
                    .write(to: withdrawn, atomically: true, encoding: .utf8)
                var environment = try setup.environment(database: database)
                environment["CLAWBACK_CONFIG"] = withdrawn.path
                let result = try await CommandRunner.run("clawback", Self.arguments + ["--json"], environment: environment)
                #expect(result.status == 0, "\(result.standardError)")
                let summary = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
                #expect(summary?["open"] as? Int == 0, "held back, not open")

                let sentAfter = Dictionary(grouping: setup.server.simulator.consumptionAnswers, by: \.transactionId).mapValues(\.count)
                #expect(sentAfter == sentBefore, "nothing was sent after consent was withdrawn")
                let states = Dictionary(
                    uniqueKeysWithValues: try monitor.query(
                        "SELECT transaction_id, state FROM clawback.refund_requests WHERE bundle_id = \(Self.consented) AND requested_at > now() - interval '12 hours'"
                    ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1)) })
                for id in stored { #expect(states[id] == "sending", "\(id): a stored answer is never called not_consented") }
                // The rest: answered before the kill, settled before it (unanswerable), or, unanswered, not_consented now.
                let others = states.filter { !stored.contains($0.key) && !["answered", "unanswerable", "refused"].contains($0.value) }
                #expect(!others.isEmpty && others.values.allSatisfy { $0 == "not_consented" }, "\(Set(others.values))")
            }
        }
    }

    @Test("an answer decided less than five minutes before Apple's deadline is neither stored nor sent; the others are answered")
    func noAnswerStoredAtTheDeadline() async throws {
        try await Setup.with(open: 40, seed: 44) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                // Record the requests, then bring one's deadline within the last five minutes.
                let recorder = try Self.start(setup, database: database, crashAt: "refund-requests.after-record")
                try await recorder.waitUntilExit(thenForSessionsOn: database)
                let monitor = try TestPostgres.connect(database: database)
                let late = try #require(
                    try monitor.query(
                        """
                        UPDATE clawback.refund_requests SET deadline = now() + interval '4 minutes'
                        WHERE notification_uuid = (SELECT notification_uuid FROM clawback.refund_requests
                                                   WHERE bundle_id = \(Self.consented) AND state = 'received' ORDER BY deadline LIMIT 1)
                        RETURNING transaction_id
                        """
                    ).first?.decode(String.self, at: 0))
                let result = try await CommandRunner.run("clawback", Self.arguments, environment: try setup.environment(database: database))
                #expect(result.status == 75, "the request is still open, so the run says so: \(result.standardError)")
                let row = try #require(
                    try monitor.query("SELECT state, answer IS NULL, last_error FROM clawback.refund_requests WHERE transaction_id = \(late)").first)
                #expect(try row.decode(String.self, at: 0) == "received")
                #expect(try row.decode(Bool.self, at: 1), "no answer stored")
                #expect(try row.decode(String?.self, at: 2)?.contains("less than 5 minutes before") == true)
                let answered = Set(setup.server.simulator.consumptionAnswers.map(\.transactionId))
                #expect(!answered.contains(late))
                #expect(!answered.isEmpty, "the others were answered")
            }
        }
    }

    @Test("a purchase without a grant waits undelivered_after_hours before it is answered not delivered: not open, not sent, exit 0")
    func waitsForLateGrants() async throws {
        try await Setup.with(open: 80, seed: 41, undeliveredAfterHours: 6) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let result = try await CommandRunner.run(
                    "clawback", Self.arguments + ["--json"], environment: try setup.environment(database: database))
                #expect(result.status == 0, "\(result.standardError)")
                let granted = Set(setup.output.grants.map(\.transaction_id))
                let ungranted = setup.openRequests.filter { $0.bundleId == Self.consented && !granted.contains($0.transactionId) }
                let young = ungranted.filter { ($0.refundRequest?.date ?? .distantPast) > Date() - 6 * 3600 + 60 }
                let old = ungranted.filter { ($0.refundRequest?.date ?? .distantFuture) < Date() - 6 * 3600 - 60 }
                let answered = Set(setup.server.simulator.consumptionAnswers.map(\.transactionId))
                #expect(!young.isEmpty)
                #expect(young.allSatisfy { !answered.contains($0.transactionId) }, "answered not delivered before the grant path had its time")
                #expect(old.allSatisfy { answered.contains($0.transactionId) })
                let summary = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
                #expect((summary?["waiting"] as? Int ?? 0) >= young.count)
                #expect(summary?["open"] as? Int == 0)
                #expect((summary?["oldestOpenAgeSeconds"] as? NSNumber)?.doubleValue == 0, "waiting is not late")
                // The game grants one of them late: it is answered DELIVERED, never UNDELIVERED.
                let late = try #require(young.first)
                let connection = try TestPostgres.connect(database: database)
                try connection.execute(
                    """
                    INSERT INTO clawback.grants (transaction_id, original_transaction_id, bundle_id, product_id, environment, player_id, units_granted,
                        purchased_at)
                    VALUES (\(late.transactionId), \(late.originalTransactionId), \(late.bundleId), \(late.productId), \(late.environment), 'late-player',
                        100, \(late.purchaseDate))
                    """)
                let facts = try RefundRequestStore.facts(
                    transactionID: late.transactionId, originalTransactionID: late.originalTransactionId, bundleID: late.bundleId,
                    purchasedAt: late.purchaseDate, grantsCompleteSince: Date.distantPast, on: connection.storage)
                #expect(facts.delivery == .delivered)
            }
        }
    }

    @Test("forged notifications in the feed are never acted on (exit 75, nothing recorded); the next run, the feed clean, answers")
    func forgedFeed() async throws {
        try await Setup.with(open: 30, seed: 43) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let simulator = setup.server.simulator
                for kind in ["tampered", "wrongRoot", "otherBundle"] {
                    var faults = FaultPlan()
                    faults.hostileShare = 1
                    faults.hostileKind = kind
                    simulator.setFaults(faults)
                    let forged = try await CommandRunner.run(
                        "clawback", Self.arguments + ["--json"], environment: try setup.environment(database: database))
                    #expect(forged.status == 75, "\(kind): \(forged.standardError)")
                    let summary = try JSONSerialization.jsonObject(with: Data(forged.standardOutput.utf8)) as? [String: Any]
                    #expect((summary?["rejectedNotifications"] as? Int ?? 0) > 0, "\(kind)")
                    #expect(summary?["newRequests"] as? Int == 0, "\(kind)")
                    #expect(simulator.consumptionAnswers.isEmpty, "\(kind)")
                }
                simulator.setFaults(FaultPlan())
                let clean = try await CommandRunner.run("clawback", Self.arguments, environment: try setup.environment(database: database))
                #expect(clean.status == 0, "\(clean.standardError)")
                #expect(
                    Set(simulator.consumptionAnswers.map(\.transactionId))
                        == Set(setup.openRequests.filter { $0.bundleId == Self.consented }.map(\.transactionId)))
            }
        }
    }

    @Test("a hook answering outside 0...units granted is a hook error: the request stays open with the reason (exit 75), nothing is sent")
    func hookOutOfRange() async throws {
        try await Setup.with(open: 30, seed: 47) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let connection = try TestPostgres.connect(database: database)
                try connection.execute(
                    """
                    CREATE OR REPLACE FUNCTION clawback.units_consumed(p_transaction_id text, p_player_id text, p_product_id text, p_units_granted bigint)
                    RETURNS bigint LANGUAGE sql STABLE AS $$ SELECT CASE WHEN right(p_transaction_id, 1) < '5' THEN -1 ELSE p_units_granted + 1 END $$
                    """)
                let result = try await CommandRunner.run(
                    "clawback", Self.arguments + ["--json"], environment: try setup.environment(database: database))
                #expect(result.status == 75, "\(result.standardError)")
                let granted = Set(setup.output.grants.map(\.transaction_id))
                let answered = setup.server.simulator.consumptionAnswers
                #expect(answered.allSatisfy { !granted.contains($0.transactionId) }, "a purchase with a grant was answered from a bad hook")
                let reasons = try connection.query(
                    "SELECT count(*) FROM clawback.refund_requests WHERE state = 'received' AND last_error LIKE '%clawback.units_consumed returned%'"
                ).first?.decode(Int.self, at: 0)
                let summary = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
                #expect(reasons == summary?["open"] as? Int)
                #expect((reasons ?? 0) > 0)
            }
        }
    }

    @Test("Apple refusing every call: exit 75, the requests stay open with the reason, metrics say so; the next run answers them")
    func appleDown() async throws {
        try await Setup.with(open: 40, seed: 31) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let environment = try setup.environment(database: database)
                // Record the requests, then die before answering any.
                let recorded = try await CommandRunner.run(
                    "clawback", Self.arguments, environment: environment.merging(["CLAWBACK_CRASH_AT": "refund-requests.after-record"]) { $1 })
                #expect(recorded.killedBySignal)
                let simulator = setup.server.simulator
                var faults = FaultPlan()
                faults.unauthorizedBundles = [Self.consented]
                simulator.setFaults(faults)
                let failing = try await CommandRunner.run("clawback", Self.arguments + ["--json"], environment: environment)
                #expect(failing.status == 75, "\(failing.standardError)")
                #expect(failing.standardError.contains("still unanswered"))
                #expect(simulator.consumptionAnswers.isEmpty)
                let summary = try JSONSerialization.jsonObject(with: Data(failing.standardOutput.utf8)) as? [String: Any]
                let open = summary?["open"] as? Int ?? 0
                #expect(open > 0)
                #expect(summary?["answered"] as? Int == 0)
                let monitor = try TestPostgres.connect(database: database)
                let reasons = try monitor.query(
                    "SELECT count(*) FROM clawback.refund_requests WHERE state = 'sending' AND last_error LIKE '%HTTP 401%'"
                ).first?.decode(Int.self, at: 0)
                let errors = try monitor.query("SELECT state || ': ' || coalesce(last_error, '') FROM clawback.refund_requests LIMIT 3").rows.map {
                    try $0.decode(String.self, at: 0)
                }
                #expect(reasons == open, "\(errors)")
                let metrics = try String(contentsOf: setup.directory.appendingPathComponent("refund-requests.prom"), encoding: .utf8)
                #expect(metrics.contains("clawback_refund_requests_open \(open)\n"))
                #expect(metrics.contains("clawback_refund_requests_last_success_timestamp_seconds 0\n"))

                simulator.setFaults(FaultPlan())
                let recovered = try await CommandRunner.run("clawback", Self.arguments, environment: environment)
                #expect(recovered.status == 0, "\(recovered.standardError)")
                #expect(Set(simulator.consumptionAnswers.map(\.transactionId)).count == open)
                let after = try String(contentsOf: setup.directory.appendingPathComponent("refund-requests.prom"), encoding: .utf8)
                #expect(after.contains("clawback_refund_requests_open 0\n"))
            }
        }
    }
}
