import Dispatch
public import Postgres

/// One PostgreSQL connection used from async code: every call runs on a serial dispatch queue of its own,
/// so libpq's blocking calls never occupy Swift's cooperative threads, and the connection (which is not
/// thread-safe) is only ever touched by that queue.
public final class DatabaseSession: Sendable {
    /// The connection, confined to `queue`: nothing else reads or writes it, which is what makes handing
    /// the box to the queue's closures safe.
    private struct Confined: @unchecked Sendable {
        let connection: PostgresConnection
    }

    private let confined: Confined
    private let queue: DispatchQueue
    public let configuration: PostgresConfiguration

    public init(_ configuration: PostgresConfiguration, label: String = "clawback.database") throws {
        confined = Confined(connection: try PostgresConnection(configuration))
        queue = DispatchQueue(label: label)
        self.configuration = configuration
    }

    /// A second session to the same database, reported to the server as `applicationName` (unless the
    /// connection string names one), so that two statements of one job can run at once.
    public func sibling(applicationName: String, label: String) throws -> DatabaseSession {
        var configuration = self.configuration
        configuration.applicationName = applicationName
        return try DatabaseSession(configuration, label: label)
    }

    /// Runs `body` with the connection on the session's queue.
    public func run<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { [confined] in continuation.resume(with: Result { try body(confined.connection) }) }
        }
    }
}
