import AppStoreSimulator
import Foundation
import Postgres
import TestSupport
import Testing

/// Apple failing in every way at once. The run must finish; every grant is either decided from a verified
/// answer (and then decided exactly as in a clean run) or `unverified` with its reason; and once Apple is
/// well again, the rerun leaves nothing unverified and the clean run's ledger.
@Suite("Apple outages and abuse", .serialized)
struct AppleOutageTests {
    static let bundles = ["com.studio.game", "com.studio.other"]

    static var mix: FaultPlan {
        var plan = FaultPlan()
        plan.internalErrorShare = 0.10
        plan.retryableErrorShare = 0.05
        plan.resetShare = 0.02
        plan.truncatedShare = 0.01
        plan.malformedShare = 0.01
        plan.stallShare = 0.005
        plan.stallSeconds = 4  // past the client's 2 s timeout: the same as a 30 s stall, faster
        plan.rateLimitBurstEverySeconds = 3
        plan.rateLimitBurstMilliseconds = 300
        plan.unauthorizedBundles = [bundles[1]]
        plan.seed = 5
        return plan
    }

    @Test(
        "Apple refuses the production credentials: every production grant is unverified with the 401, exit 75, no ledger entry for it; the sandbox's are decided"
    )
    func productionRefused() async throws {
        try await RunCrashTests.Setup.with(purchases: 400, seed: 43, sandboxShare: 0.3) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                var plan = FaultPlan()
                plan.unauthorizedEnvironments = ["Production"]
                setup.server.simulator.setFaults(plan)
                let result = try await CommandRunner.run(
                    "clawback",
                    setup.arguments + ["--report-dir", setup.directory.appendingPathComponent("refused").path],
                    environment: try setup.environment(database: database))
                #expect(result.status == 75, "\(result.standardError)")
                let connection = try TestPostgres.connect(database: database)
                var seen: [String: Int] = [:]
                for row in try connection.query("SELECT environment, verdict, coalesce(detail, '') FROM clawback.checks").rows {
                    let environment = try row.decode(String.self, at: 0)
                    let verdict = try row.decode(String.self, at: 1)
                    seen[environment + " " + verdict, default: 0] += 1
                    if environment == "Production" {
                        #expect(verdict == "unverified")
                        #expect(try row.decode(String.self, at: 2).contains("HTTP 401"))
                    }
                }
                #expect(seen["Production unverified", default: 0] > 200, "\(seen)")
                #expect(seen.filter { $0.key.hasPrefix("Sandbox") && !$0.key.hasSuffix("unverified") }.values.reduce(0, +) > 50, "\(seen)")
                #expect(
                    try connection.query("SELECT count(*) FROM clawback.ledger WHERE environment = 'Production'").first?
                        .decode(Int.self, at: 0) == 0)
            }
        }
    }

    @Test(
        "the fault mix: the run finishes (75), verified answers match a clean run, the rest is unverified with a reason; the rerun after the faults ends like a clean run"
    )
    func faultMix() async throws {
        let grants = FaultScale.pick(short: 3_000, long: 30_000)
        try await RunCrashTests.Setup.with(purchases: grants, seed: 41, bundles: Self.bundles, apple: ["timeout_seconds: 2"]) { setup in
            func run(_ database: String, _ reports: String) async throws -> CommandResult {
                try await CommandRunner.run(
                    "clawback", setup.arguments + ["--report-dir", setup.directory.appendingPathComponent(reports).path],
                    environment: try setup.environment(database: database))
            }
            let expected = try await CrashPointTests.EndState.uninterrupted(setup)
            let cleanVerdicts = Dictionary(
                uniqueKeysWithValues: expected.checks.map { line in
                    (String(line.split(separator: "|")[0]), line)
                })

            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                setup.server.simulator.stats.reset()
                setup.server.simulator.setFaults(Self.mix)
                let faulty = try await run(database, "faulty")
                #expect(faulty.status == 75, "\(faulty.standardError)")
                let injected = setup.server.simulator.stats.snapshot.filter { $0.key.hasPrefix("fault.") }
                for kind in ["internalError", "retryableError", "reset", "truncated", "malformed", "stall", "unauthorized", "rateLimitBurst"] {
                    #expect(injected["fault." + kind, default: 0] > 0, "no \(kind) injected: \(injected)")
                }
                print("fault mix: \(grants) grants, \(injected.values.reduce(0, +)) faults injected \(injected.sorted { $0.key < $1.key })")

                let connection = try TestPostgres.connect(database: database)
                let checks = try connection.query("SELECT transaction_id, bundle_id, verdict, detail, units_clawed_back FROM clawback.checks").rows
                #expect(checks.count == grants, "every grant has a check")
                var unverified = 0
                var reasons: [String: Int] = [:]
                for row in checks {
                    let id = try row.decode(String.self, at: 0)
                    let bundle = try row.decode(String.self, at: 1)
                    let verdict = try row.decode(String.self, at: 2)
                    let detail = try row.decode(String?.self, at: 3) ?? ""
                    if verdict == "unverified" {
                        unverified += 1
                        #expect(!detail.isEmpty, "\(id): unverified without a reason")
                        let reason =
                            detail.contains("401")
                            ? "401"
                            : detail.contains("timed out") || detail.contains("timeout")
                                ? "timeout"
                                : detail.contains("JSON") || detail.contains("decode") ? "malformed" : "other"
                        reasons[reason, default: 0] += 1
                    } else {
                        #expect(bundle != Self.bundles[1], "\(id): decided although Apple refused the app's key")
                        let units = try row.decode(Int64.self, at: 4)
                        #expect(cleanVerdicts[id] == "\(id)|\(verdict)|\(units)", "\(id): decided differently under faults")
                    }
                }
                let refusedApp = checks.filter { (try? $0.decode(String.self, at: 1)) == Self.bundles[1] }.count
                #expect(unverified >= refusedApp && refusedApp > grants / 3)
                #expect(reasons["401"] == refusedApp, "\(reasons)")
                #expect(unverified > refusedApp, "the other faults left nothing unverified: \(reasons)")
                print("fault mix: \(unverified) unverified after the faulty run \(reasons.sorted { $0.key < $1.key })")
                #expect(
                    faulty.standardOutput.contains("Apple requests") && !faulty.standardOutput.contains("(rate-limited: 0,"),
                    "the summary counts Apple's 429s")

                setup.server.simulator.setFaults(.none)
                let rerun = try await run(database, "faulty")
                #expect(rerun.status == 0, "\(rerun.standardError)")
                let actual = try CrashPointTests.EndState.read(database: database, reports: setup.directory.appendingPathComponent("faulty"))
                #expect(actual.checks.allSatisfy { !$0.contains("|unverified|") })
                #expect(actual == expected)
            }
        }
    }

    /// What the check's detail must say for each kind of hostile signed data: the verifier's own reason.
    static let hostileReasons: [String: String] = [
        "tampered": "signature does not verify", "wrongRoot": "not trusted", "algNone": "unsupported JWS algorithm \"none\"",
        "hs256": "unsupported JWS algorithm \"HS256\"", "shortChain": "it holds 2", "longChain": "it holds 4",
        "noLeafOID": "leaf certificate lacks Apple's extension", "noIntermediateOID": "intermediate certificate lacks Apple's extension",
        "swappedOIDs": "lacks Apple's extension", "expiredLeaf": "not valid when the data was signed",
        "notYetValidLeaf": "not valid when the data was signed", "selfSignedLeaf": "not trusted", "hugeX5C": "larger than",
        "otherBundle": "bundle id is \"com.hostile.other\"", "otherEnvironment": "environment is \"Sandbox\"",
    ]

    @Test("hostile signed data of every kind: every grant unverified with the verifier's reason, no ledger entry; honest answers then verify all")
    func hostileSignedData() async throws {
        #expect(Set(Self.hostileReasons.keys) == Set(FaultPlan.hostileKinds))
        try await RunCrashTests.Setup.with(purchases: 40, seed: 43) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let connection = try TestPostgres.connect(database: database)
                for kind in FaultPlan.hostileKinds {
                    var plan = FaultPlan()
                    plan.hostileShare = 1
                    plan.hostileKind = kind
                    setup.server.simulator.setFaults(plan)
                    // Each run resumes the same incomplete run and asks again about every unverified grant.
                    let result = try await CommandRunner.run("clawback", setup.arguments, environment: try setup.environment(database: database))
                    #expect(result.status == 75, "\(kind): \(result.standardError)")
                    let details = try connection.query("SELECT verdict, coalesce(detail, '') FROM clawback.checks").rows.map {
                        (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1))
                    }
                    #expect(details.count == 40)
                    let reason = Self.hostileReasons[kind] ?? "?"
                    #expect(details.allSatisfy { $0.0 == "unverified" && $0.1.contains(reason) }, "\(kind): \(details.first.map { "\($0)" } ?? "")")
                    #expect(try connection.query("SELECT count(*) FROM clawback.ledger").first?.decode(Int.self, at: 0) == 0)
                }
                setup.server.simulator.setFaults(.none)
                let honest = try await CommandRunner.run("clawback", setup.arguments, environment: try setup.environment(database: database))
                #expect(honest.status == 0, "\(honest.standardError)")
                #expect(try connection.query("SELECT count(*) FROM clawback.checks WHERE verdict = 'unverified'").first?.decode(Int.self, at: 0) == 0)
                #expect(try connection.query("SELECT count(*) FROM clawback.ledger").first?.decode(Int.self, at: 0) ?? 0 > 0)
            }
        }
    }
}
