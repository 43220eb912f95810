import AppStoreSimulator
import Foundation
import Job
import Postgres
import Storage
import StripeDriver
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `clawback stripe disputes` as cron runs it: the real binary against PostgreSQL and the simulator's Stripe
/// side over loopback with 429s and 500s, killed (SIGKILL, its own crash points) after evidence is stored,
/// before a submit is sent and after one was sent but before it was recorded, then run again until it
/// finishes: every dispute the game can answer is submitted exactly once, the others never, none accepted;
/// then every inquiry is escalated to a chargeback, and each the game can answer is submitted once more.
@Suite("clawback stripe disputes, end to end", .serialized)
struct StripeDisputesCrashTests {
    static let shop = "web.studio.game"
    static let key = "rk_live_disputes"

    /// `count` payments, each with one dispute awaiting a response (a chargeback or an inquiry), due in a week;
    /// every third one has no grant.
    static func world(count: Int, now: Date) -> (StripeWorld, granted: [String]) {
        var payments: [StripePaymentRecord] = []
        var granted: [String] = []
        for index in 0..<count {
            let created = now - Double(10 + index % 20) * 86_400
            let dispute = StripeDisputeRecord(
                id: "dp_\(index)", amount: 500, status: index % 4 == 0 ? "warning_needs_response" : "needs_response", created: created + 86_400,
                dueBy: now + 7 * 86_400)
            payments.append(
                StripePaymentRecord(
                    id: "pi_\(index)", amount: 500, currency: "eur", created: created, livemode: true, status: "succeeded", disputes: [dispute]))
            if index % 3 != 0 { granted.append("pi_\(index)") }
        }
        return (StripeWorld(keys: [key], payments: payments), granted)
    }

    @Test(
        "SIGKILL after evidence is stored, before a submit and after one, with 5% of Stripe's answers 429 or 500: each answerable dispute is submitted once, the others never, none accepted"
    )
    func killedAndRunAgain() async throws {
        let now = Date()
        let (world, granted) = Self.world(count: 40, now: now)
        let simulator = Simulator(world: World(apps: [], transactions: []), chain: try SigningChain(), stripe: world)
        let stripe = try #require(simulator.stripe)
        stripe.setFaults(StripeFaults(rateLimitedShare: 0.025, serverErrorShare: 0.025))
        let server = try await SimulatorServer.start(simulator: simulator, threads: 1)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-disputes-crash-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("stripe.key").path
        #expect(FileManager.default.createFile(atPath: keyFile, contents: Data(Self.key.utf8), attributes: [.posixPermissions: 0o600]))
        try "stripe:\n  api_key_file: \(keyFile)\n  api_url: http://127.0.0.1:\(server.port)\n  shops:\n    - name: \(Self.shop)\n".write(
            to: directory.appendingPathComponent("clawback.yaml"), atomically: true, encoding: .utf8)
        try await TestPostgres.withScratchDatabaseAsync { name in
            StoreDrivers.register(StripeDriver())
            let connection = try TestPostgres.connect(database: name)
            try Migrator().migrate(on: connection.storage)
            var lines = Data()
            for (index, id) in granted.enumerated() {
                let line: [String: Any] = [
                    "store": "stripe", "transaction_id": id, "bundle_id": Self.shop, "product_id": "gems_500", "environment": "Production",
                    "player_id": "player-\(index % 5)", "units_granted": 500,
                    "purchased_at": ISO8601DateFormatter().string(from: now - 30 * 86_400 + Double(index) * 3_600),
                ]
                lines += try JSONSerialization.data(withJSONObject: line) + Data("\n".utf8)
            }
            _ = try GrantImport.importJSONLines(lines, skipInvalid: false, on: connection.storage)
            let environment = [
                "CLAWBACK_CONFIG": directory.appendingPathComponent("clawback.yaml").path,
                "CLAWBACK_DATABASE_URL": try TestPostgres.connectionString(database: name),
            ]
            let arguments = ["stripe", "disputes", "--log-level", "warning"]
            var random = SeededGenerator(seed: 23)
            let points = ["stripe-disputes.after-store", "stripe-disputes.before-submit", "stripe-disputes.after-submit"]
            for round in 0..<6 {
                var armed = environment
                armed["CLAWBACK_CRASH_AT"] = "\(points[round % points.count]):\(Int.random(in: 1...4, using: &random))"
                let killed = try await CommandRunner.run("clawback", arguments, environment: armed)
                #expect(killed.killedBySignal && killed.status == SIGKILL, "round \(round): \(killed.status) \(killed.standardError)")
            }
            var status: Int32 = 75
            for _ in 0..<6 where status != 0 { status = try await CommandRunner.run("clawback", arguments, environment: environment).status }
            #expect(status == 0)

            let disputes = stripe.world.payments.values.flatMap(\.disputes)
            let answerable = Set(granted.map { "dp_" + $0.dropFirst(3) })
            for dispute in disputes {
                let want = answerable.contains(dispute.id) ? 1 : 0
                #expect((dispute.submissionCount ?? 0) == want, "\(dispute.id): \(dispute.submissionCount ?? 0) submissions, expected \(want)")
                #expect(dispute.closedByMerchant != true, "\(dispute.id) accepted")
            }
            #expect(stripe.stats.snapshot["requests.stripe.disputes.submit"] == answerable.count, "one submit sent per answerable dispute")
            let states = try connection.query("SELECT state, count(*)::bigint FROM clawback.stripe_disputes GROUP BY state").rows.map {
                "\(try $0.decode(String.self, at: 0))=\(try $0.decode(Int.self, at: 1))"
            }
            #expect(Set(states) == ["submitted=\(answerable.count)", "left=\(disputes.count - answerable.count)"])

            // The issuer escalates every inquiry to a chargeback, every other one with Stripe counting its
            // submissions again: each the game can answer is answered once more, through the same kills.
            let inquiries = disputes.filter { $0.status.hasPrefix("warning_") }.map(\.id).sorted()
            #expect(inquiries.count == 10)
            var resetting: Set<String> = []
            for (index, id) in inquiries.enumerated() {
                if index % 2 == 0 { resetting.insert(id) }
                #expect(stripe.escalate(id, dueBy: now + 10 * 86_400, at: Date(), resettingSubmissions: index % 2 == 0))
            }
            for point in points {
                var armed = environment
                armed["CLAWBACK_CRASH_AT"] = "\(point):1"
                let killed = try await CommandRunner.run("clawback", arguments, environment: armed)
                #expect(killed.killedBySignal && killed.status == SIGKILL, "\(point): \(killed.status) \(killed.standardError)")
            }
            status = 75
            for _ in 0..<6 where status != 0 { status = try await CommandRunner.run("clawback", arguments, environment: environment).status }
            #expect(status == 0)
            let escalated = Set(inquiries).intersection(answerable)
            for dispute in stripe.world.payments.values.flatMap(\.disputes) {
                let want = !answerable.contains(dispute.id) ? 0 : !escalated.contains(dispute.id) || resetting.contains(dispute.id) ? 1 : 2
                #expect((dispute.submissionCount ?? 0) == want, "\(dispute.id): \(dispute.submissionCount ?? 0) submissions, expected \(want)")
                #expect(dispute.closedByMerchant != true, "\(dispute.id) accepted")
            }
            #expect(stripe.stats.snapshot["requests.stripe.disputes.submit"] == answerable.count + escalated.count, "one more per escalated one")
        }
        await server.stop()
    }
}
