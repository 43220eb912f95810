public import Logging
package import Postgres

/// One connection to clawback's database, as Storage's operations take it. What is behind it (a libpq
/// session, its queries and transactions) is Storage's own: the jobs and commands hold this handle and call
/// Storage's named operations with it, and depend on no PostgreSQL module themselves (the import check holds
/// Job to that). Not `Sendable`, like the connection: async code reaches one through a `DatabaseSession`.
public struct DatabaseConnection {
    package let postgres: PostgresConnection

    package init(_ postgres: PostgresConnection) { self.postgres = postgres }

    /// Connects. A failure is a `DatabaseError` naming libpq's reason (`.unreachable`: a later try may succeed).
    public static func open(_ configuration: DatabaseConfiguration, logger: Logger) throws(DatabaseError) -> DatabaseConnection {
        do {
            return DatabaseConnection(try PostgresConnection(configuration.postgres, logger: logger))
        } catch {
            throw DatabaseError(error)
        }
    }

    /// Closes the connection now (it also closes when the last handle goes).
    public func close() { postgres.close() }
}

// What Storage's operations do with a connection, under the names they have always used. Internal: nothing
// outside Storage sends SQL.
extension DatabaseConnection {
    @discardableResult
    func query(_ query: PostgresQuery) throws(PostgresError) -> PostgresResult { try postgres.query(query) }

    @discardableResult
    func execute(_ query: PostgresQuery) throws(PostgresError) -> Int { try postgres.execute(query) }

    func executeScript(unsafeSQL sql: String) throws(PostgresError) { try postgres.executeScript(unsafeSQL: sql) }

    @discardableResult
    func stream(_ query: PostgresQuery, chunkSize: Int = 1000, _ body: ([PostgresRow]) throws -> Void) throws -> Int {
        try postgres.stream(query, chunkSize: chunkSize, body)
    }

    @discardableResult
    func copyIn(table: String, columns: [String], _ produce: (inout PostgresCopyWriter) throws -> Void) throws -> Int {
        try postgres.copyIn(table: table, columns: columns, produce)
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    func withTransaction<T>(_ body: (DatabaseConnection) throws -> T) throws -> T {
        try postgres.withTransaction { _ in try body(self) }
    }

    func withAdvisoryLock<T>(_ key: LockKey, _ body: () throws -> T) throws -> AdvisoryLockOutcome<T> {
        try postgres.withAdvisoryLock(key.advisory, body)
    }
}

extension DatabaseConnection {
    /// Makes every later transaction of this session read-only: a preview's guarantee that nothing it runs,
    /// the studio's hooks included, writes (a write then fails with SQLSTATE 25006, which the preview reports).
    public func forbidWrites() throws { try execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY") }

    /// The server's version, the database and the role this session runs as (for `config check`).
    public func serverIdentity() throws -> (version: String, database: String, user: String) { try postgres.serverIdentity() }
}
