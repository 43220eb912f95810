public import Foundation
package import Postgres

/// The name of a lock that makes a job single-flight for its scope (a PostgreSQL advisory lock's key).
public struct LockKey: Hashable, Sendable, CustomStringConvertible {
    package let advisory: AdvisoryLockKey

    public init(name: String) { advisory = AdvisoryLockKey(name: name) }

    package var value: Int64 { advisory.value }
    public var description: String { advisory.description }
}

/// The session holding a lock, as the server reports it: for "another run is running (pid …)".
public struct LockHolder: Sendable, Equatable {
    public var pid: Int32
    public var applicationName: String
    /// The client's address, nil for a unix-socket connection.
    public var clientAddress: String?
    public var backendStart: Date?

    init(_ holder: AdvisoryLockHolder) {
        pid = holder.pid
        applicationName = holder.applicationName
        clientAddress = holder.clientAddress
        backendStart = holder.backendStart
    }
}

/// Proof that a job's lock is still its own: its writes commit only while `holds` says so (in the same
/// transaction), so that work done after the lock was lost rolls back instead of racing a second holder.
public struct LockFence: Sendable, Equatable {
    package let advisory: AdvisoryLockFence

    package init(_ advisory: AdvisoryLockFence) { self.advisory = advisory }
}

extension DatabaseConnection {
    func holds(_ fence: LockFence) throws(PostgresError) -> Bool { try postgres.holds(fence.advisory) }

    func lockHolder(_ key: LockKey) throws(PostgresError) -> LockHolder? {
        try postgres.advisoryLockHolder(key.advisory).map(LockHolder.init)
    }
}

extension DatabaseSession {
    /// Who holds `key`, if anyone.
    public func holder(of key: LockKey) async throws -> LockHolder? {
        try await run { try $0.lockHolder(key) }
    }
}
