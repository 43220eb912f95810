import Foundation
public import Postgres
public import Storage

/// The PostgreSQL the test script started. Integration tests fail, never skip, when it is missing: a
/// green run without a database would be a lie.
public enum TestPostgres {
    public struct NotConfigured: Error, CustomStringConvertible {
        public var description: String {
            "no test database: DATABASE_URL is not set. Run the suite through Jobs/local/test.sh, which starts a "
                + "throwaway PostgreSQL (or export DATABASE_URL for one you started)."
        }
    }

    /// The connection string of the test database (a URI without password).
    public static func connectionString() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty else { throw NotConfigured() }
        return url
    }

    /// The test connection string pointed at another database of the same server.
    public static func connectionString(database: String) throws -> String {
        let base = try connectionString()
        guard let slash = base.range(of: "/", options: .backwards), base[..<slash.lowerBound].hasSuffix("//") == false
        else { return base }
        return base[..<slash.upperBound] + database
    }

    public static func configuration(
        database: String? = nil, statementTimeout: Duration = .seconds(60)
    ) throws -> PostgresConfiguration {
        PostgresConfiguration(
            connectionString: try connectionString(), database: database, applicationName: "clawback-tests",
            statementTimeout: statementTimeout)
    }

    public static func connect(database: String? = nil, statementTimeout: Duration = .seconds(60)) throws
        -> PostgresConnection
    {
        try PostgresConnection(try configuration(database: database, statementTimeout: statementTimeout))
    }

    /// Creates an empty database for one test, hands its name to `body`, and drops it afterwards (also when
    /// `body` throws). Tests that migrate the `clawback` schema each get their own, so they can run in parallel.
    public static func withScratchDatabase<T>(_ body: (String) throws -> T) throws -> T {
        let name = "clawback_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let admin = try connect()
        try admin.execute("CREATE DATABASE \(identifier: name)")
        defer { _ = try? admin.execute("DROP DATABASE IF EXISTS \(identifier: name) WITH (FORCE)") }
        return try body(name)
    }
}

extension TestPostgres {
    /// `withScratchDatabase` for async bodies.
    public static func withScratchDatabaseAsync<T>(_ body: (String) async throws -> T) async throws -> T {
        let name = "clawback_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let admin = try connect()
        try admin.execute("CREATE DATABASE \(identifier: name)")
        defer { _ = try? admin.execute("DROP DATABASE IF EXISTS \(identifier: name) WITH (FORCE)") }
        return try await body(name)
    }
}

extension TestPostgres {
    /// A login role of its own for `body`, named `prefix` and a random number, with `grants` run for it first
    /// (`ROLE` in them stands for its name: `GRANT USAGE ON SCHEMA clawback TO ROLE`), then dropped with what it
    /// was granted. `body` gets the role and `database`'s connection string as that role.
    public static func withRole<T>(
        database: String, prefix: String, grants: [String] = [], _ body: (_ role: String, _ connectionString: String) async throws -> T
    ) async throws -> T {
        let role = "\(prefix)_\(UInt32.random(in: 0..<UInt32.max))"
        let admin = try connect(database: database)
        try admin.execute("CREATE ROLE \(identifier: role) LOGIN")
        defer {
            _ = try? admin.execute("DROP OWNED BY \(identifier: role)")
            _ = try? admin.execute("DROP ROLE \(identifier: role)")
        }
        for grant in grants { try admin.executeScript(unsafeSQL: grant.replacingOccurrences(of: "ROLE", with: role)) }
        let url = try connectionString(database: database)
        guard let user = url.range(of: "//")?.upperBound, let at = url.range(of: "@", range: user..<url.endIndex) else {
            throw NotConfigured()
        }
        return try await body(role, url.replacingCharacters(in: user..<at.lowerBound, with: role))
    }
}

extension TestPostgres {
    /// Waits (up to 10 s) until no session holds advisory lock `key`: a closed session's locks are released
    /// when the server notices the disconnect, which a loaded machine can delay.
    public static func waitUntilUnlocked(_ key: LockKey, database: String) async throws {
        let probe = try connect(database: database)
        let deadline = ContinuousClock.now + .seconds(10)
        while try probe.advisoryLockHolder(key.advisory) != nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// The process's memory, from /proc (Linux).
public enum ProcessMemory {
    /// Set by Jobs/local/test.sh for the test run built with `--sanitize=address`.
    public static var underAddressSanitizer: Bool { ProcessInfo.processInfo.environment["CLAWBACK_SANITIZER"] == "address" }

    /// Resident set size now, in bytes.
    public static func residentBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

extension TestPostgres {
    public struct SessionsStillConnected: Error, CustomStringConvertible {
        public let description: String
    }

    /// Waits until no session but the tests' own is connected to `database`: a killed client's last COMMIT may
    /// still be running on the server after the client is gone, and what a test reads before it ends is not
    /// what the client left.
    public static func waitForOtherSessionsToEnd(database: String, timeout: Duration = .seconds(30)) async throws {
        let admin = try connect()
        let deadline = ContinuousClock.now + timeout
        while true {
            let others = try admin.query(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = \(database) AND backend_type = 'client backend' AND pid <> pg_backend_pid()
                  AND application_name <> 'clawback-tests'
                """
            ).first?.decode(Int.self, at: 0)
            if others == 0 { return }
            guard ContinuousClock.now < deadline else {
                throw SessionsStillConnected(description: "\(others ?? -1) sessions still connected to \(database) after \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
