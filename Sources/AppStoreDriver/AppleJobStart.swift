import HTTP
import Job
import Logging
import Storage

/// What `clawback refund-requests answer` starts from: Apple's apps behind one HTTP client, and a database
/// session whose schema is this binary's. `close()` shuts the HTTP client down.
struct AppleJobStart {
    let http: HTTPClient
    let apps: AppleApps
    let session: DatabaseSession

    static func open<Failure: JobStartFailure>(
        _ configuration: ClawbackConfiguration, database: DatabaseConfiguration, maxConcurrentRequests: Int, shardCount: Int,
        logger: Logger, failing _: Failure.Type
    ) async throws(Failure) -> AppleJobStart {
        let http: HTTPClient
        do {
            http = try AppleAppsFactory.httpClient(configuration, maxConcurrentRequests: maxConcurrentRequests)
        } catch {
            throw .unavailable(Unavailable(cause: error))
        }
        let apps: AppleApps
        let session: DatabaseSession
        do throws(Failure) {
            do {
                apps = try AppleAppsFactory.make(configuration, shardCount: shardCount, http: http, logger: logger)
            } catch {
                throw .configuration(.invalid(error))
            }
            session = try await JobStart.database(database, logger: logger, failing: Failure.self)
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
