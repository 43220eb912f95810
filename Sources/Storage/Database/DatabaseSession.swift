import Dispatch
import Postgres

/// One database connection used from async code: every call runs on a serial dispatch queue of its own, so
/// libpq's blocking calls never occupy Swift's cooperative threads, and the connection (which is not
/// thread-safe) is only ever touched by that queue. A failure of the database leaves `run` as a
/// `DatabaseError`; any other error as it was thrown.
public final class DatabaseSession: Sendable {
    /// The connection, confined to `queue`: nothing else reads or writes it, which is what makes handing
    /// the box to the queue's closures safe.
    private struct Confined: @unchecked Sendable {
        let connection: DatabaseConnection
    }

    private let confined: Confined
    private let queue: DispatchQueue
    public let configuration: DatabaseConfiguration

    /// Connects; a failure is a `DatabaseError` (`.unreachable` when the server could not be reached).
    public init(_ configuration: DatabaseConfiguration, label: String = "clawback.database") throws(DatabaseError) {
        do {
            let postgres = try PostgresConnection(configuration.postgres)
            confined = Confined(connection: DatabaseConnection(postgres))
        } catch {
            throw DatabaseError(error)
        }
        queue = DispatchQueue(label: label)
        self.configuration = configuration
    }

    /// A second session to the same database, reported to the server as `applicationName` (unless the
    /// connection string names one), so that two statements of one job can run at once.
    public func sibling(applicationName: String, label: String) throws(DatabaseError) -> DatabaseSession {
        var configuration = self.configuration
        configuration.applicationName = applicationName
        return try DatabaseSession(configuration, label: label)
    }

    /// Runs `body` with the connection on the session's queue.
    public func run<T: Sendable>(_ body: @escaping @Sendable (DatabaseConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { [confined] in
                continuation.resume(
                    with: Result { try body(confined.connection) }.mapError { (error: any Error) -> any Error in DatabaseError(error) ?? error })
            }
        }
    }
}
