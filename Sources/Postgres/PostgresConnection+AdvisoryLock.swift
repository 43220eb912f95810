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
    /// Takes a session-level advisory lock without waiting (`pg_try_advisory_lock`), runs `body`, and
    /// releases it, also when `body` throws. The lock also ends with the session, so a killed process
    /// never leaves it behind.
    public func withAdvisoryLock<T>(_ key: AdvisoryLockKey, _ body: () throws -> T) throws -> AdvisoryLockOutcome<T> {
        guard try tryAdvisoryLock(key) else { return .busy }
        defer {
            // A lost session has already released the lock; nothing to report then.
            _ = try? advisoryUnlock(key)
        }
        return .acquired(try body())
    }

    /// Takes the session-level advisory lock `key` if no other session holds it (`pg_try_advisory_lock`).
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
