import AppStoreSimulator
import Foundation
import Postgres
import TestSupport
import Testing

/// PostgreSQL going away mid-run: the run stops with 69 (systemd and Kubernetes retry it), nothing half
/// written is visible, and the next invocation resumes to the uninterrupted run's end state.
@Suite("Database outages", .serialized)
struct DatabaseOutageTests {
    static let grants = 6_000

    /// Every committed batch is whole: checks come in whole batches of 100, and every ledger entry has the
    /// check that decided it (same transaction), and every check that created an entry has it.
    static func expectNoPartialBatch(on connection: PostgresConnection, _ context: String) throws {
        let checks = try connection.query("SELECT count(*) FROM clawback.checks").first?.decode(Int.self, at: 0) ?? 0
        #expect(checks % 100 == 0, "\(context): \(checks) checks is not whole batches")
        let orphans = try connection.query(
            """
            SELECT (SELECT count(*) FROM clawback.ledger l
                    WHERE NOT EXISTS (SELECT 1 FROM clawback.checks c WHERE c.run_id = l.run_id AND c.transaction_id = l.transaction_id)),
                   (SELECT count(*) FROM clawback.checks c WHERE c.action = 'clawed_back'
                    AND NOT EXISTS (SELECT 1 FROM clawback.ledger l WHERE l.run_id = c.run_id AND l.transaction_id = c.transaction_id))
            """
        ).first
        #expect(try orphans?.decode(Int.self, at: 0) == 0, "\(context): a ledger entry without its check")
        #expect(try orphans?.decode(Int.self, at: 1) == 0, "\(context): a clawback check without its entry")
    }

    /// Starts `clawback run`, waits until it has committed something, does `fault`, and returns the exit.
    static func runWithFault(
        _ setup: RunCrashTests.Setup, environment: [String: String], reports: URL, monitor: () throws -> PostgresConnection,
        fault: () throws -> Void
    ) async throws -> (status: Int32, standardError: String) {
        // Apple a little slow (a few seconds for the run), so that the fault lands mid-run however loaded the
        // machine is when the first commit is seen.
        var slow = FaultPlan()
        slow.latencyMilliseconds = 5
        setup.server.simulator.setFaults(slow)
        defer { setup.server.simulator.setFaults(FaultPlan()) }
        let process = try ChildProcess.start(
            "clawback", setup.arguments + ["--report-dir", reports.path], environment: environment, capturingStandardError: true)
        let connection = try monitor()
        let deadline = ContinuousClock.now + .seconds(60)
        while process.isRunning && ContinuousClock.now < deadline,
            try connection.query("SELECT count(*) FROM clawback.checks").first?.decode(Int.self, at: 0) == 0
        {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(process.isRunning, "the run finished before the fault")
        try fault()
        let standardError = process.standardErrorToEnd()
        process.waitUntilExit()
        return (process.terminationStatus, standardError)
    }

    @Test(
        "a session killed with pg_terminate_backend mid-run: exit 69 naming the database, no partial batch; the rerun resumes to the clean end state")
    func terminatedBackend() async throws {
        try await RunCrashTests.Setup.with(purchases: Self.grants, seed: 31) { setup in
            let expected = try await CrashPointTests.EndState.uninterrupted(setup)
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let reports = setup.directory.appendingPathComponent("terminated")
                let admin = try TestPostgres.connect()
                let result = try await Self.runWithFault(
                    setup, environment: try setup.environment(database: database), reports: reports,
                    monitor: { try TestPostgres.connect(database: database) }
                ) {
                    let killed = try admin.query(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = \(database) AND application_name = 'clawback'"
                    ).first?.decode(Int.self, at: 0)
                    #expect(killed == 1)
                }
                #expect(result.status == 69, "\(result.standardError)")
                #expect(result.standardError.contains("database"), "\(result.standardError)")
                let connection = try TestPostgres.connect(database: database)
                try Self.expectNoPartialBatch(on: connection, "after pg_terminate_backend")
                let rerun = try await CommandRunner.run(
                    "clawback", setup.arguments + ["--report-dir", reports.path], environment: try setup.environment(database: database))
                #expect(rerun.status == 0, "\(rerun.standardError)")
                #expect(rerun.standardOutput.contains("resumed"))
                #expect(try CrashPointTests.EndState.read(on: connection, reports: reports) == expected)
            }
        }
    }

    @Test(
        "the lock's own session killed mid-run: the next batch rolls back, exit 75 naming the lost lock, the run's row left to the rerun, which resumes to the clean end state"
    )
    func lockSessionKilled() async throws {
        try await RunCrashTests.Setup.with(purchases: Self.grants, seed: 32) { setup in
            let expected = try await CrashPointTests.EndState.uninterrupted(setup)
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let reports = setup.directory.appendingPathComponent("lock-lost")
                let admin = try TestPostgres.connect()
                let result = try await Self.runWithFault(
                    setup, environment: try setup.environment(database: database), reports: reports,
                    monitor: { try TestPostgres.connect(database: database) }
                ) {
                    let killed = try admin.query(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = \(database) AND application_name = 'clawback-lock'"
                    ).first?.decode(Int.self, at: 0)
                    #expect(killed == 1)
                }
                #expect(result.status == 75, "\(result.standardError)")
                #expect(result.standardError.contains("lost its scope lock"), "\(result.standardError)")
                let connection = try TestPostgres.connect(database: database)
                try Self.expectNoPartialBatch(on: connection, "after the lock was lost")
                let status = try connection.query("SELECT status FROM clawback.runs").rows.map { try $0.decode(String.self, at: 0) }
                #expect(status == ["running"], "the row is left for whoever holds the scope next")
                let rerun = try await CommandRunner.run(
                    "clawback", setup.arguments + ["--report-dir", reports.path], environment: try setup.environment(database: database))
                #expect(rerun.status == 0, "\(rerun.standardError)")
                #expect(rerun.standardOutput.contains("resumed"))
                #expect(try CrashPointTests.EndState.read(on: connection, reports: reports) == expected)
            }
        }
    }

    @Test(
        "the server stopped mid-run (immediate, like a crash or failover): exit 69; while down exit 69 again; once back, the rerun resumes to the clean end state"
    )
    func serverRestart() async throws {
        try await RunCrashTests.Setup.with(purchases: Self.grants, seed: 31) { setup in
            let expected = try await CrashPointTests.EndState.uninterrupted(setup)

            let server = try PrivatePostgres.start()
            defer { server.destroy() }
            func connect() throws -> PostgresConnection {
                try PostgresConnection(PostgresConfiguration(connectionString: server.connectionString, applicationName: "clawback-tests"))
            }
            try setup.prepare(on: try connect())
            let environment = ["CLAWBACK_CONFIG": setup.configPath, "CLAWBACK_DATABASE_URL": server.connectionString]
            let reports = setup.directory.appendingPathComponent("restarted")
            let result = try await Self.runWithFault(setup, environment: environment, reports: reports, monitor: connect) {
                try server.stopServer()
            }
            #expect(result.status == 69, "\(result.standardError)")

            let whileDown = try await CommandRunner.run("clawback", setup.arguments + ["--report-dir", reports.path], environment: environment)
            #expect(whileDown.status == 69, "\(whileDown.standardError)")

            try server.startServer()
            let connection = try connect()
            try Self.expectNoPartialBatch(on: connection, "after the server stopped")
            let rerun = try await CommandRunner.run("clawback", setup.arguments + ["--report-dir", reports.path], environment: environment)
            #expect(rerun.status == 0, "\(rerun.standardError)")
            #expect(rerun.standardOutput.contains("resumed"))
            #expect(try CrashPointTests.EndState.read(on: connection, reports: reports) == expected)
        }
    }
}
