import AppStoreSimulator
import Foundation
import Job
import TestSupport
import Testing

/// Every job's metrics pushed to a real Prometheus Pushgateway (Debian's `prometheus-pushgateway`) by the
/// binary, with no textfile named: each job its own group, a sharded run's shards apart, a failed run's last
/// success kept at the Pushgateway, and a Pushgateway that cannot be reached never changing a run's exit
/// status.
@Suite("metrics pushed to a Pushgateway", .serialized)
struct PushgatewayTests {
    /// The first sample whose series starts with `prefix` (its name and the labels written first).
    static func sample(_ samples: [String: Double], _ prefix: String) -> Double? {
        samples.first { $0.key.hasPrefix(prefix) }?.value
    }

    @Test("each job pushes its own group; a run that did not succeed keeps the last success; an unreachable gateway fails only `ledger pending`")
    func everyJobPushes() async throws {
        let now = Date()
        var stripe = StripeWorldGenerator.generate(
            payments: 200, start: now - 40 * 86_400, end: now - 86_400, shop: "web.studio.game", disputeRate: 0.2, key: "rk_live_push", seed: 5)
        for (id, payment) in stripe.world.payments {
            for (index, refund) in payment.refunds.enumerated() where refund.status == "pending" || refund.status == "requires_action" {
                stripe.world.payments[id]?.refunds[index].status = "succeeded"
            }
        }
        let setup = try await RunCrashTests.Setup.make(purchases: 200, seed: 61, stripe: stripe)
        let gateway = try await TestPushgateway.start()
        defer { gateway.stop() }
        try await scoped(setup) {
            await $0.stop()
        } _: { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let environment = try setup.environment(database: database).merging(["CLAWBACK_PUSHGATEWAY_URL": gateway.url]) { $1 }
                func clawback(_ arguments: [String], _ extra: [String: String] = [:]) async throws -> CommandResult {
                    try await CommandRunner.run("clawback", arguments, environment: environment.merging(extra) { $1 })
                }

                let check = try await clawback(["config", "check"])
                #expect(
                    check.standardOutput.contains("metrics.pushgateway_url") && check.standardOutput.contains("\(gateway.url) ready"),
                    "\(check.standardOutput)")

                // A run that never succeeded, into an empty group: its last success is 0, so "no success for so long" fires.
                var malformed = FaultPlan()
                malformed.malformedShare = 1
                setup.server.simulator.setFaults(malformed)
                let never = try await clawback(setup.arguments)
                setup.server.simulator.setFaults(FaultPlan())
                #expect(never.status == 75, "\(never.standardError)")
                var samples = try await gateway.samples()
                #expect(Self.sample(samples, "clawback_last_success_timestamp_seconds{instance=\"\",job=\"clawback\"}") == 0)

                let run = try await clawback(setup.arguments)
                #expect(run.status == 0, "\(run.standardError)")
                samples = try await gateway.samples()
                let success = try #require(Self.sample(samples, "clawback_last_success_timestamp_seconds{instance=\"\",job=\"clawback\"}"))
                #expect(abs(success - Date().timeIntervalSince1970) < 600)
                #expect(Self.sample(samples, "clawback_ledger_pending_entries{instance=\"\",job=\"clawback\",source=\"run\"}") ?? 0 > 0)
                #expect(Self.sample(samples, "clawback_grants_checked{instance=\"\",job=\"clawback\"") ?? 0 > 0)

                let shard = try await clawback(setup.arguments + ["--shard", "1/2"])
                #expect(shard.status == 0, "\(shard.standardError)")
                samples = try await gateway.samples()
                #expect(Self.sample(samples, "clawback_grants_checked{instance=\"\",job=\"clawback\",shard=\"1\"") != nil, "\(samples.keys.sorted())")

                let web = try await clawback([
                    "run", "--strategy", "stripe-payments", "--from", setup.from, "--to", setup.to, "--log-level", "warning",
                ])
                #expect(web.status == 0, "\(web.standardError)")
                let disputes = try await clawback(["stripe", "disputes", "--log-level", "warning"])
                #expect([0, 75].contains(disputes.status), "\(disputes.standardError)")
                let pending = try await clawback(["ledger", "pending"])
                #expect(pending.status == 0, "\(pending.standardError)")
                samples = try await gateway.samples()
                #expect(Self.sample(samples, "clawback_stripe_grants_checked{instance=\"\",job=\"clawback_stripe\"") ?? 0 > 0)
                #expect(Self.sample(samples, "clawback_stripe_disputes_read{instance=\"\",job=\"clawback_stripe_disputes\"}") ?? 0 > 0)
                #expect(
                    Self.sample(samples, "clawback_ledger_pending_entries{instance=\"\",job=\"clawback_ledger_pending\",source=\"ledger_pending\"}")
                        != nil)

                // Every answer of Apple's malformed: the run does not succeed; the Pushgateway keeps the last success.
                setup.server.simulator.setFaults(malformed)
                let failed = try await clawback(setup.arguments)
                setup.server.simulator.setFaults(FaultPlan())
                #expect(failed.status == 75, "\(failed.standardError)")
                samples = try await gateway.samples()
                #expect(Self.sample(samples, "clawback_last_success_timestamp_seconds{instance=\"\",job=\"clawback\"}") == success)
                #expect(
                    Self.sample(samples, "clawback_last_run_status{instance=\"\",job=\"clawback\",status=\"incomplete\"") == 1,
                    "\(samples.filter { $0.key.hasPrefix("clawback_last_run_status") })")

                // A Pushgateway that cannot be reached: logged by a run (whose status stands), exit 73 for `ledger pending`.
                let unreachable = ["CLAWBACK_PUSHGATEWAY_URL": "http://127.0.0.1:9"]
                let quiet = try await clawback(setup.arguments, unreachable)
                #expect(quiet.status == 0 && quiet.standardError.contains("cannot deliver the metrics"), "\(quiet.standardError)")
                let refused = try await clawback(["ledger", "pending"], unreachable)
                #expect(refused.status == 73 && refused.standardError.contains("Pushgateway"), "\(refused.standardError)")
                let down = try await clawback(["config", "check"], unreachable)
                #expect(down.status == 78 && down.standardOutput.contains("/-/ready could not be reached"), "\(down.standardOutput)")
                let bad = try await clawback(["ledger", "pending"], ["CLAWBACK_PUSHGATEWAY_URL": "pushgateway:9091"])
                #expect(bad.status == 78 && bad.standardError.contains("metrics.pushgateway_url"), "\(bad.standardError)")
            }
        }
    }

    @Test("a push replaces its group whole; a job that did not succeed keeps its own group's last success, or 0; any label value arrives as it is")
    func groups() async throws {
        let gateway = try await TestPushgateway.start()
        defer { gateway.stop() }
        func lines(_ success: Int, extra: Bool) -> [String] {
            [
                "# HELP t_last_success_timestamp_seconds When it last succeeded.", "# TYPE t_last_success_timestamp_seconds gauge",
                "t_last_success_timestamp_seconds \(success)", "# TYPE t_runs gauge", "t_runs 1",
            ] + (extra ? ["# TYPE t_extra gauge", "t_extra 5"] : [])
        }
        let hostile = "a/b \"c\""
        let shard = MetricsTarget(file: nil, pushgateway: .init(url: gateway.url, grouping: ["shard": hostile]))
        let whole = MetricsTarget(file: nil, pushgateway: .init(url: gateway.url))
        let shardKey = "{instance=\"\",job=\"t\",shard=\"a/b \\\"c\\\"\"}"
        let wholeKey = "{instance=\"\",job=\"t\"}"

        try await shard.deliver(lines(0, extra: false), job: "t", succeeded: false)
        #expect(try await gateway.samples(prefix: "t_")["t_last_success_timestamp_seconds" + shardKey] == 0, "nothing before: 0")
        try await shard.deliver(lines(1_795_000_000, extra: true), job: "t", succeeded: true)
        #expect(try await gateway.samples(prefix: "t_")["t_extra" + shardKey] == 5)
        try await shard.deliver(lines(0, extra: false), job: "t", succeeded: false)
        var samples = try await gateway.samples(prefix: "t_")
        #expect(samples["t_last_success_timestamp_seconds" + shardKey] == 1_795_000_000, "\(samples)")
        #expect(samples["t_extra" + shardKey] == nil, "a series no longer written is gone")

        // Another group of the same job is its own: neither reads the other's last success.
        try await whole.deliver(lines(42, extra: false), job: "t", succeeded: true)
        try await whole.deliver(lines(0, extra: false), job: "t", succeeded: false)
        try await shard.deliver(lines(0, extra: false), job: "t", succeeded: false)
        samples = try await gateway.samples(prefix: "t_")
        #expect(
            samples["t_last_success_timestamp_seconds" + wholeKey] == 42 && samples["t_last_success_timestamp_seconds" + shardKey] == 1_795_000_000)
    }
}
