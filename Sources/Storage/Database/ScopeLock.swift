public import Logging
import Postgres

/// The lock that makes a job single-flight for its scope: an advisory lock held by a transaction left open
/// on a PostgreSQL connection of its own (`application_name` `clawback-lock`), so that it holds through a
/// transaction pooler such as PgBouncer, and ends with the process however it ends.
///
/// While the job runs, a watcher proves every `checkEvery` that the connection, and so the lock, is still
/// there; if it is lost (a network cut, a failover), the job is asked to stop at its next batch boundary,
/// since another run may now take the scope. What it committed stays, and the next run resumes it.
public final class ScopeLock: Sendable {
    private let session: DatabaseSession
    private let watcher: Task<Void, Never>
    /// What each batch checks before it commits: the lock is still this job's.
    public let fence: LockFence

    private init(session: DatabaseSession, watcher: Task<Void, Never>, fence: LockFence) {
        self.session = session
        self.watcher = watcher
        self.fence = fence
    }

    /// Takes `key` on a new connection to the database `database` is connected to; nil when another session
    /// holds it. `onLost` is called once if the lock's connection is lost while held.
    public static func acquire(
        _ key: LockKey, like database: DatabaseSession, checkEvery interval: Duration = .seconds(30), logger: Logger,
        onLost: @escaping @Sendable () -> Void
    ) async throws -> ScopeLock? {
        let session = try database.sibling(applicationName: "clawback-lock", label: "clawback.lock")
        guard try await session.run({ try $0.postgres.tryAdvisoryLockInOpenTransaction(key.advisory) }) else { return nil }
        let fence = LockFence(try await session.run { try $0.postgres.openTransactionLockFence(key.advisory) })
        let watcher = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { return }
                do {
                    try await session.run { try $0.postgres.confirmOpenTransactionLock() }
                } catch {
                    logger.error(
                        "lost the database connection that holds this job's lock; stopping at the next batch boundary (rerun to resume)",
                        metadata: ["error": "\(error)"])
                    onLost()
                    return
                }
            }
        }
        return ScopeLock(session: session, watcher: watcher, fence: fence)
    }

    /// Ends the lock's transaction (and so the lock); the connection closes when the lock is dropped.
    public func release() async {
        watcher.cancel()
        _ = try? await session.run { try $0.postgres.releaseOpenTransactionLock() }
    }
}
