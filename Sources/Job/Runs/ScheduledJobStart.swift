public import HTTP
public import Logging
public import Storage

/// What a store's scheduled job other than a run (Google Play's sweep and notifications, Stripe's disputes)
/// starts from: an HTTP client for its store, a database session whose schema is this binary's, and the
/// job's lock, held (a second job exits 85). The caller shuts the client down and releases the lock.
public struct ScheduledJobStart: Sendable {
    public let http: HTTPClient
    public let session: DatabaseSession
    public let lock: ScopeLock

    /// Each job commits as it goes, so a lost lock needs no stop: the watcher's log line says it.
    public static func open<Outcome>(
        store: String, timeout: Duration, database: DatabaseConfiguration, lockKey: LockKey, logger: Logger,
        failing _: ScheduledJobFailure<Outcome>.Type
    ) async throws(ScheduledJobFailure<Outcome>) -> ScheduledJobStart {
        let http: HTTPClient
        do {
            http = try HTTPClients.start(for: store, timeout: timeout)
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
            return ScheduledJobStart(http: http, session: session, lock: lock)
        } catch {
            http.shutdown()
            throw error
        }
    }

    /// Runs the job's work holding its lock, and releases the lock however the work ends: a database
    /// failure is the database's (69, 77 or 70), anything else what was being done, unavailable (69).
    public func holdingLock<Outcome>(doing: String? = nil, _ work: () async throws -> Outcome) async throws(ScheduledJobFailure<Outcome>)
        -> Outcome
    {
        do {
            let outcome = try await work()
            await lock.release()
            return outcome
        } catch let error as DatabaseError {
            await lock.release()
            throw .database(error)
        } catch {
            await lock.release()
            throw .unavailable(Unavailable(doing, cause: error))
        }
    }
}
