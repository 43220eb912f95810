import Foundation
import Postgres
import TestSupport
import Testing

@Suite("Transactions")
struct TransactionTests {
    struct Boom: Error {}

    @Test("commits when the body returns")
    func commits() throws {
        let connection = try TestPostgres.connect()
        try connection.executeScript(unsafeSQL: "CREATE TEMP TABLE committed (id int)")
        let value = try connection.withTransaction { tx in
            try tx.execute("INSERT INTO committed VALUES (\(1))")
            return "done"
        }
        #expect(value == "done")
        #expect(try connection.query("SELECT count(*) FROM committed").first?.decode(Int.self, at: 0) == 1)
    }

    @Test("rolls back and rethrows when the body throws")
    func rollsBack() throws {
        let connection = try TestPostgres.connect()
        try connection.executeScript(unsafeSQL: "CREATE TEMP TABLE rolled (id int)")
        #expect(throws: Boom.self) {
            try connection.withTransaction { tx in
                try tx.execute("INSERT INTO rolled VALUES (\(1))")
                throw Boom()
            }
        }
        #expect(try connection.query("SELECT count(*) FROM rolled").first?.decode(Int.self, at: 0) == 0)
    }

    @Test("a swallowed statement error makes COMMIT fail instead of silently rolling back")
    func failedCommit() throws {
        let connection = try TestPostgres.connect()
        try connection.executeScript(unsafeSQL: "CREATE TEMP TABLE doomed (id int PRIMARY KEY)")
        let error = try #require(throws: PostgresError.self) {
            try connection.withTransaction { tx in
                try tx.execute("INSERT INTO doomed VALUES (\(1))")
                _ = try? tx.execute("INSERT INTO doomed VALUES (\(1))")  // fails, error ignored
            }
        }
        #expect(error.operation == "commit")
        #expect(try connection.query("SELECT count(*) FROM doomed").first?.decode(Int.self, at: 0) == 0)
    }

    @Test("when the rollback fails too, both errors are reported")
    func rollbackFails() throws {
        let connection = try TestPostgres.connect()
        let killer = try TestPostgres.connect()
        let pid = connection.backendPID
        let error = try #require(throws: PostgresTransactionError.self) {
            try connection.withTransaction { _ in
                try killer.query("SELECT pg_terminate_backend(\(pid))")
                throw Boom()
            }
        }
        #expect(error.bodyError is Boom)
        #expect(error.rollbackError.code == .connectionBroken)
        #expect(error.description.contains("rollback failed"))
    }

    @Test("a nested transaction is refused, and the outer one still works")
    func nested() throws {
        let connection = try TestPostgres.connect()
        try connection.withTransaction { tx in
            let error = try #require(throws: PostgresError.self) { try tx.withTransaction { _ in } }
            #expect(error.code == .misuse)
        }
        #expect(try connection.query("SELECT 1").first != nil)
    }
}

@Suite("Advisory locks")
struct AdvisoryLockTests {
    @Test("one session at a time holds the lock; the other is told at once and can name the holder")
    func exclusive() throws {
        let first = try TestPostgres.connect()
        let second = try TestPostgres.connect()
        let key = AdvisoryLockKey(name: "test.exclusive.\(UUID())")
        let outcome = try first.withAdvisoryLock(key) { () -> String in
            let inner = try second.withAdvisoryLock(key) { "second ran" }
            guard case .busy = inner else {
                Issue.record("the second session took a held lock")
                return ""
            }
            let holder = try #require(try second.advisoryLockHolder(key))
            // Held by a transaction open on a connection of the first session's own, named after it.
            #expect(holder.pid != first.backendPID && holder.pid != second.backendPID)
            #expect(holder.applicationName == "clawback-tests-lock")
            return "first ran"
        }
        guard case .acquired(let value) = outcome else {
            Issue.record("the first session did not get the lock")
            return
        }
        #expect(value == "first ran")
        // Released on return: now the second session gets it.
        guard case .acquired = try second.withAdvisoryLock(key, { () }) else {
            Issue.record("the lock was not released")
            return
        }
        #expect(try second.advisoryLockHolder(key) == nil)
    }

    @Test("the same key held in another database of the cluster is another lock: not named as the holder, not in the way")
    func otherDatabase() throws {
        let key = AdvisoryLockKey(name: "test.database.\(UUID())")
        try TestPostgres.withScratchDatabase { database in
            let elsewhere = try TestPostgres.connect(database: database)
            defer { elsewhere.close() }
            _ = try elsewhere.query("SELECT pg_advisory_lock(\(key.value))")
            let here = try TestPostgres.connect()
            defer { here.close() }
            #expect(try here.advisoryLockHolder(key) == nil)
            #expect(try elsewhere.advisoryLockHolder(key)?.pid == elsewhere.backendPID)
            let outcome = try here.withAdvisoryLock(key) { "ran" }
            guard case .acquired(let value) = outcome else {
                Issue.record("the lock of another database kept this one from running")
                return
            }
            #expect(value == "ran")
        }
    }

    @Test("the lock is released when the body throws, and when the session dies")
    func releasedOnFailure() throws {
        struct Fail: Error {}
        let key = AdvisoryLockKey(name: "test.release.\(UUID())")
        let first = try TestPostgres.connect()
        #expect(throws: Fail.self) { try first.withAdvisoryLock(key) { throw Fail() } }
        let other = try TestPostgres.connect()
        guard case .acquired = try other.withAdvisoryLock(key, { () }) else {
            Issue.record("not released after a throw")
            return
        }
        let dying = try TestPostgres.connect()
        _ = try dying.query("SELECT pg_advisory_lock(\(key.value))")
        #expect(try other.advisoryLockHolder(key)?.pid == dying.backendPID)
        dying.close()
        // The server notices the closed session asynchronously; give it a moment.
        var freed = false
        for _ in 0..<500 where !freed {
            if case .acquired = try other.withAdvisoryLock(key, { () }) { freed = true } else { usleep(20_000) }
        }
        #expect(freed)
    }

    @Test("a lock held by an open transaction outlives the database's idle-in-transaction and (17+) transaction timeouts")
    func outlivesServerTimeouts() throws {
        try TestPostgres.withScratchDatabase { database in
            let admin = try TestPostgres.connect(database: database)
            let version = try admin.query("SELECT current_setting('server_version_num')::int").first?.decode(Int.self, at: 0) ?? 0
            try admin.execute("ALTER DATABASE \(unescaped: database) SET idle_in_transaction_session_timeout = '1s'")
            if version >= 170_000 { try admin.execute("ALTER DATABASE \(unescaped: database) SET transaction_timeout = '1s'") }
            let key = AdvisoryLockKey(name: "test.timeouts.\(UUID())")
            let holder = try TestPostgres.connect(database: database)
            // The database's settings reach new sessions: without the lock's own, this one would end in a second.
            #expect(try holder.query("SELECT current_setting('idle_in_transaction_session_timeout')").first?.decode(String.self, at: 0) == "1s")
            #expect(try holder.tryAdvisoryLockInOpenTransaction(key))
            usleep(2_500_000)
            try holder.confirmOpenTransactionLock()
            let other = try TestPostgres.connect(database: database)
            guard case .busy = try other.withAdvisoryLock(key, { () }) else {
                Issue.record("the lock was lost to a server timeout")
                return
            }
            try holder.releaseOpenTransactionLock()
            guard case .acquired = try other.withAdvisoryLock(key, { () }) else {
                Issue.record("not released")
                return
            }
        }
    }

    @Test("a fence passes only for the very session that took the lock: the same pid with another start time does not")
    func fenceNamesTheSession() throws {
        try TestPostgres.withScratchDatabase { database in
            let key = AdvisoryLockKey(name: "test.fence.\(UUID())")
            let holder = try TestPostgres.connect(database: database)
            #expect(try holder.tryAdvisoryLockInOpenTransaction(key))
            let fence = try holder.openTransactionLockFence(key)
            let writer = try TestPostgres.connect(database: database)
            #expect(try writer.holds(fence))
            // What a later session reusing the holder's pid would look like: it holds the lock, but it
            // started at another instant, so it is not the session this fence was made for.
            for shift: Int64 in [-1, 1, 1_000_000] {
                let reused = AdvisoryLockFence(
                    key: key, holderPID: fence.holderPID, holderStartMicroseconds: fence.holderStartMicroseconds + shift)
                #expect(try !writer.holds(reused), "shifted by \(shift) µs")
            }
            try holder.releaseOpenTransactionLock()
            #expect(try !writer.holds(fence))
        }
    }

    @Test("keys derived from names are stable and distinct")
    func keys() {
        #expect(AdvisoryLockKey(name: "clawback.run:a") == AdvisoryLockKey(name: "clawback.run:a"))
        #expect(AdvisoryLockKey(name: "clawback.run:a") != AdvisoryLockKey(name: "clawback.run:b"))
        // FNV-1a 64 of the empty string is its offset basis: a fixed point that pins the algorithm.
        #expect(AdvisoryLockKey(name: "").value == Int64(bitPattern: 0xcbf2_9ce4_8422_2325))
    }
}
