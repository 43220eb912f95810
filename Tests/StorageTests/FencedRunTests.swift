import Foundation
import Postgres
import Reconciliation
import Storage
import TestSupport
import Testing

@Suite("A run's bookkeeping under its scope lock")
struct FencedRunTests {
    @Test("a run that lost its lock writes nothing to its run row, on the failure path as on success; while held, it finishes")
    func finishIsFenced() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            let scope = RunScope(
                selection: GrantSelection(window: ReconciliationWindow.monthsBefore(Date(), months: 3)), strategy: .transactionInfo,
                dryRun: false)
            let run = try RunStore.create(
                scope, origin: RunOrigin(triggeredBy: "test", host: "localhost", arguments: []), on: connection.storage)
            let session = try DatabaseSession(try TestPostgres.configuration(database: database).storage)
            let lock = try #require(try await ScopeLock.acquire(scope.lockKey, like: session, logger: .init(label: "test")) {})
            let fence = lock.fence
            await lock.release()
            try await TestPostgres.waitUntilUnlocked(scope.lockKey, database: database)
            // Another run takes the scope meanwhile: its row must not be touched by the one that lost the lock.
            let other = try #require(try await ScopeLock.acquire(scope.lockKey, like: session, logger: .init(label: "test")) {})
            for status in [RunStatus.failed, .succeeded] {
                #expect(throws: ScopeLockLost.self) {
                    try RunStore.finish(run.runID, status: status, counters: RunCounters(), error: "lost", fence: fence, on: connection.storage)
                }
            }
            let status = try connection.query("SELECT status::text, finished_at IS NULL FROM clawback.runs WHERE run_id = \(run.runID)").first
            #expect(try status?.decode(String.self, at: 0) == "running")
            #expect(try status?.decode(Bool.self, at: 1) == true)
            try RunStore.finish(run.runID, status: .failed, counters: RunCounters(), error: "x", fence: other.fence, on: connection.storage)
            let finished = try connection.query("SELECT status::text FROM clawback.runs WHERE run_id = \(run.runID)").first
            #expect(try finished?.decode(String.self, at: 0) == "failed")
            await other.release()
        }
    }
}
