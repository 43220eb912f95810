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

/// Proof that a lock is still held: the key and the server process that took it. Checked from any session
/// inside a transaction that must only commit while the lock holds (`holds(_:)`), so that work done after
/// the lock was lost (a network cut, a failover) rolls back instead of racing a second holder.
public struct AdvisoryLockFence: Sendable, Equatable {
    public let key: AdvisoryLockKey
    /// The holder's server process id, as the server reports it (`pg_backend_pid()`: through a pooler the
    /// client's `PQbackendPID` is the pooler's).
    public let holderPID: Int32
    /// When that server process started (`pg_stat_activity.backend_start`, in microseconds since 1970): the
    /// operating system reuses process ids, so a later session that took the lock under the same pid is not
    /// the holder this fence was made for.
    public let holderStartMicroseconds: Int64

    public init(key: AdvisoryLockKey, holderPID: Int32, holderStartMicroseconds: Int64) {
        self.key = key
        self.holderPID = holderPID
        self.holderStartMicroseconds = holderStartMicroseconds
    }
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
    /// else while it holds the lock. `idle_in_transaction_session_timeout` and (PostgreSQL 17 and later)
    /// `transaction_timeout` are switched off for the transaction alone, so a server-wide or role-wide setting
    /// cannot end it; it holds no snapshot between statements (READ COMMITTED, no writes), so it does not hold
    /// back vacuum.
    public func tryAdvisoryLockInOpenTransaction(_ key: AdvisoryLockKey) throws(PostgresError) -> Bool {
        guard !inTransaction else {
            throw PostgresError(.misuse, operation: "begin", message: "a transaction is already open on this connection")
        }
        try run("BEGIN", operation: "begin")
        inTransaction = true
        do {
            // PostgreSQL 17 added transaction_timeout; set only where the server knows it (15 and 16 do not).
            try run(
                """
                SELECT set_config(name, '0', true) FROM pg_settings
                WHERE name IN ('idle_in_transaction_session_timeout', 'transaction_timeout')
                """, operation: "lock")
            let taken = try query("SELECT pg_try_advisory_xact_lock(\(key.value))").first?.decode(Bool.self, at: 0) ?? false
            if !taken { try releaseOpenTransactionLock() }
            return taken
        } catch {
            try? releaseOpenTransactionLock()
            throw error
        }
    }

    /// The fence of the lock this connection's open transaction holds (see `tryAdvisoryLockInOpenTransaction`).
    public func openTransactionLockFence(_ key: AdvisoryLockKey) throws(PostgresError) -> AdvisoryLockFence {
        let row = try query(
            "SELECT pid, \(unescaped: Self.startMicroseconds) FROM pg_stat_activity WHERE pid = pg_backend_pid()"
        ).first
        guard let row else {
            throw PostgresError(.server, operation: "lock fence", message: "pg_stat_activity does not list this session")
        }
        return AdvisoryLockFence(
            key: key, holderPID: try row.decode(Int32.self, at: 0), holderStartMicroseconds: try row.decode(Int64.self, at: 1))
    }

    /// Whether the lock of `fence` is still granted to the process that took it: the same pid, started at the
    /// same instant. A session of another role whose start the server hides from this one does not pass.
    public func holds(_ fence: AdvisoryLockFence) throws(PostgresError) -> Bool {
        try query(
            """
            SELECT EXISTS (
                SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.pid = \(fence.holderPID)
                  AND \(unescaped: Self.startMicroseconds) = \(fence.holderStartMicroseconds)
                  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                  AND l.classid = ((\(fence.key.value)::bigint >> 32) & 4294967295)::oid
                  AND l.objid = (\(fence.key.value)::bigint & 4294967295)::oid)
            """
        ).first?.decode(Bool.self, at: 0) ?? false
    }

    /// A session's start in whole microseconds since 1970, exact (`extract` answers numeric).
    private static let startMicroseconds = "(extract(epoch FROM backend_start) * 1000000)::bigint"

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
        // A bigint key is stored as classid = high 32 bits, objid = low 32 bits, objsubid = 1. Advisory locks
        // belong to a database, while pg_locks lists the whole cluster's: the same key held in another database
        // (another studio's clawback, or a test beside this one) is not this lock.
        let row = try query(
            """
            SELECT a.pid, coalesce(a.application_name, ''), host(a.client_addr), a.backend_start
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
              AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
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
