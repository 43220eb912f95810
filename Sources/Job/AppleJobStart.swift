import HTTP
import Logging
import Postgres
import Storage

/// A job's failure type that can say "the configuration is wrong", "the schema is not this binary's" and "the
/// database (or the HTTP client) is unavailable": its enum cases are the witnesses, so each job keeps its own
/// failure type and one start serves them all.
protocol JobStartFailure: Error {
    static func configuration(_ reason: String) -> Self
    static func schema(_ error: SchemaError) -> Self
    static func unavailable(_ reason: String) -> Self
    /// PostgreSQL refused or failed a statement: its error says whether a retry may help (69) or not (70).
    static func database(_ error: PostgresError) -> Self
}

extension MonthlyRun.Failure: JobStartFailure {
    static func database(_ error: PostgresError) -> Self { .run(.database(error)) }
}
extension RefundRequestRun.Failure: JobStartFailure {}

/// What `clawback run` and `clawback refund-requests answer` both start from: Apple's apps behind one HTTP
/// client, and a database session whose schema is this binary's. `close()` shuts the HTTP client down.
struct AppleJobStart {
    let http: HTTPClient
    let apps: AppleApps
    let session: DatabaseSession

    static func open<Failure: JobStartFailure>(
        _ configuration: ClawbackConfiguration, database: PostgresConfiguration, maxConcurrentRequests: Int, shardCount: Int,
        logger: Logger, failing _: Failure.Type
    ) async throws(Failure) -> AppleJobStart {
        let http: HTTPClient
        do {
            http = try AppleAppsFactory.httpClient(configuration, maxConcurrentRequests: maxConcurrentRequests)
        } catch {
            throw .unavailable("cannot start the HTTP client: \(error)")
        }
        let apps: AppleApps
        let session: DatabaseSession
        do throws(Failure) {
            do {
                apps = try AppleAppsFactory.make(configuration, shardCount: shardCount, http: http, logger: logger)
            } catch {
                throw .configuration("\(error)")
            }
            do {
                session = try DatabaseSession(database)
            } catch {
                logger.error("cannot connect to PostgreSQL", metadata: ["error": "\(error)"])
                throw .unavailable("cannot connect to PostgreSQL: \(error)")
            }
            try await session.requireCurrentSchema(Failure.self)
        } catch {
            http.shutdown()
            throw error
        }
        return AppleJobStart(http: http, apps: apps, session: session)
    }

    func close() { http.shutdown() }

    /// The apps without `app_apple_id` (as `apps[i]`): production notifications are verified against it, as
    /// Apple's libraries require, so a job that reads notifications refuses to start without it.
    static func appsWithoutAppleID(_ configuration: ClawbackConfiguration) -> [String] {
        configuration.apps.enumerated().filter { $0.element.appAppleID == nil }.map { "apps[\($0.offset)]" }
    }
}

extension DatabaseSession {
    /// Refuses a database that is not migrated (or was migrated by a newer clawback) before a job does anything.
    func requireCurrentSchema<Failure: JobStartFailure>(_: Failure.Type) async throws(Failure) {
        do {
            try await run { try Migrator().requireCurrent(on: $0) }
        } catch let error as SchemaError {
            throw .schema(error)
        } catch let error as PostgresError {
            throw .database(error)
        } catch {
            throw .unavailable("PostgreSQL: \(error)")
        }
    }
}
