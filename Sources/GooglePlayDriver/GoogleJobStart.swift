import HTTP
import Job
import Logging
import Storage

/// What Google Play's scheduled jobs (the sweep, the notifications) start from: an HTTP client with Google's
/// timeout, a database session whose schema is this binary's, and the job's lock, held (a second job exits
/// 85). The caller shuts the client down and releases the lock.
struct GoogleJobStart {
    let http: HTTPClient
    let session: DatabaseSession
    let lock: ScopeLock

    /// Each job commits as it goes, so a lost lock needs no stop: the watcher's log line says it.
    static func open<Outcome>(
        _ configuration: ClawbackConfiguration, database: DatabaseConfiguration, lockKey: LockKey, logger: Logger,
        failing _: ScheduledJobFailure<Outcome>.Type
    ) async throws(ScheduledJobFailure<Outcome>) -> GoogleJobStart {
        let http: HTTPClient
        do {
            http = try HTTPClients.start(for: "Google Play", timeout: configuration.google.timeout)
        } catch {
            throw .unavailable(Unavailable(cause: error))
        }
        do throws(ScheduledJobFailure<Outcome>) {
            let session = try await JobStart.database(database, logger: logger, failing: ScheduledJobFailure<Outcome>.self)
            let acquired: ScopeLock?
            do {
                acquired = try await ScopeLock.acquire(lockKey, like: session, logger: logger) {}
            } catch {
                throw .database(orUnavailable: error)
            }
            guard let lock = acquired else { throw .locked(try? await session.holder(of: lockKey)) }
            return GoogleJobStart(http: http, session: session, lock: lock)
        } catch {
            http.shutdown()
            throw error
        }
    }
}
