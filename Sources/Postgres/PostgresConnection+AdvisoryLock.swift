public import Foundation

/// The 64-bit key of a PostgreSQL advisory lock.
public struct AdvisoryLockKey: Hashable, Sendable, CustomStringConvertible {
    public let value: Int64

    public init(_ value: Int64) { self.value = value }

    /// A key derived from a name (FNV-1a, 64 bits): stable across processes, hosts and releases, unlike
    /// Swift's `hashValue`, so every shard and every machine computes the same key for the same scope.
    public init(name: String) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        value = Int64(bitPattern: hash)
    }

    public var description: String { String(value) }
}

/// What `withAdvisoryLock` did.
public enum AdvisoryLockOutcome<Value> {
    /// The lock was taken, `body` ran and returned this; the lock has been released.
    case acquired(Value)
    /// Another session holds the lock; `body` did not run.
    case busy
}

/// The session holding an advisory lock, as the server reports it.
public struct AdvisoryLockHolder: Sendable, Equatable {
    public var pid: Int32
    public var applicationName: String
    /// The client's address, nil for a unix-socket connection.
    public var clientAddress: String?
    public var backendStart: Date?
}

extension PostgresConnection {
    /// Takes the advisory lock `key` without waiting, runs `body`, and releases it, also when `body` throws.
    /// The lock is held by a transaction left open on a second connection of its own (see
    /// `tryAdvisoryLockInOpenTransaction`), so a transaction pooler cannot lose it; it also ends with the
    /// process, so a killed process never leaves it behind.
    public func withAdvisoryLock<T>(_ key: AdvisoryLockKey, _ body: () throws -> T) throws -> AdvisoryLockOutcome<T> {
        var lockConfiguration = configuration
        lockConfiguration.applicationName = configuration.applicationName + "-lock"
        let holder = try PostgresConnection(lockConfiguration, logger: logger)
        defer { holder.close() }
        guard try holder.tryAdvisoryLockInOpenTransaction(key) else { return .busy }
        defer {
            // A lost session has already released the lock; nothing to report then.
            try? holder.releaseOpenTransactionLock()
        }
        return .acquired(try body())
    }

    /// Takes the advisory lock `key` if no other session holds it, inside a transaction this call opens and
    /// leaves open (`pg_try_advisory_xact_lock`): the lock lasts until `releaseOpenTransactionLock()`, or until
    /// the connection ends.
    ///
    /// Why a transaction: a session-level lock belongs to a server connection, and a transaction pooler
    /// (PgBouncer in transaction mode) hands each transaction of a client to whichever server connection is
    /// free, so a second client could run on the server connection that holds a first client's session lock,
    /// and take it again (session locks are re-entrant). While a transaction is open the pooler pins its server
    /// connection to this client alone, so this lock holds through any pooler. The connection must do nothing
    /// else while it holds the lock. `idle_in_transaction_session_timeout` is switched off for the transaction,
    /// which holds no snapshot between statements (READ COMMITTED, no writes), so it does not hold back vacuum.
    public func tryAdvisoryLockInOpenTransaction(_ key: AdvisoryLockKey) throws(PostgresError) -> Bool {
        guard !inTransaction else {
            throw PostgresError(.misuse, operation: "begin", message: "a transaction is already open on this connection")
        }
        try run("BEGIN", operation: "begin")
        inTransaction = true
        do {
            try run("SET LOCAL idle_in_transaction_session_timeout = 0", operation: "lock")
            let taken = try query("SELECT pg_try_advisory_xact_lock(\(key.value))").first?.decode(Bool.self, at: 0) ?? false
            if !taken { try releaseOpenTransactionLock() }
            return taken
        } catch {
            try? releaseOpenTransactionLock()
            throw error
        }
    }

    /// Proves the connection, and so the lock its open transaction holds, is still there.
    public func confirmOpenTransactionLock() throws(PostgresError) {
        _ = try run("SELECT 1", operation: "lock")
    }

    /// Ends the transaction `tryAdvisoryLockInOpenTransaction` opened, and with it the lock.
    public func releaseOpenTransactionLock() throws(PostgresError) {
        inTransaction = false
        _ = try run("ROLLBACK", operation: "rollback")
    }

    /// Takes the session-level advisory lock `key` if no other session holds it (`pg_try_advisory_lock`).
    /// Not safe through a transaction pooler: jobs use `tryAdvisoryLockInOpenTransaction`.
    public func tryAdvisoryLock(_ key: AdvisoryLockKey) throws(PostgresError) -> Bool {
        try query("SELECT pg_try_advisory_lock(\(key.value))").first?.decode(Bool.self, at: 0) ?? false
    }

    /// Releases the session-level advisory lock `key`; false when this session did not hold it.
    @discardableResult
    public func advisoryUnlock(_ key: AdvisoryLockKey) throws(PostgresError) -> Bool {
        try query("SELECT pg_advisory_unlock(\(key.value))").first?.decode(Bool.self, at: 0) ?? false
    }

    /// The server's version, the database and the role this session runs as.
    public func serverIdentity() throws(PostgresError) -> (version: String, database: String, user: String) {
        let row = try query("SELECT current_setting('server_version'), current_database(), current_user").first
        return (try row?.decode(String.self, at: 0) ?? "?", try row?.decode(String.self, at: 1) ?? "?", try row?.decode(String.self, at: 2) ?? "?")
    }

    /// Who holds the advisory lock `key`, if anyone (from `pg_locks` and `pg_stat_activity`).
    public func advisoryLockHolder(_ key: AdvisoryLockKey) throws(PostgresError) -> AdvisoryLockHolder? {
        // A bigint key is stored as classid = high 32 bits, objid = low 32 bits, objsubid = 1.
        let row = try query(
            """
            SELECT a.pid, coalesce(a.application_name, ''), host(a.client_addr), a.backend_start
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
              AND l.classid = ((\(key.value)::bigint >> 32) & 4294967295)::oid
              AND l.objid = (\(key.value)::bigint & 4294967295)::oid
            LIMIT 1
            """
        ).first
        guard let row else { return nil }
        return AdvisoryLockHolder(
            pid: try row.decode(Int32.self, at: 0), applicationName: try row.decode(String.self, at: 1),
            clientAddress: try row.decode(String?.self, at: 2), backendStart: try row.decode(Date?.self, at: 3))
    }
}
