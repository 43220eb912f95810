import Foundation
import Postgres

/// DDL on `clawback.grants` (creating or detaching a partition) needs a lock the grant path's inserts
/// queue behind while it waits. So it waits briefly (`lock_timeout`), gives way, and tries again a little
/// later: the game's purchases are held up for at most one timeout, never for as long as some long
/// transaction keeps the table.
public struct ShortLock: Sendable {
    public struct Busy: Error, Sendable, CustomStringConvertible {
        public let operation: String
        public let attempts: Int
        public var description: String {
            "\(operation): clawback.grants stayed locked by other transactions through \(attempts) attempts; nothing changed, rerun later"
        }
    }

    public var timeoutMilliseconds: Int
    public var attempts: Int

    public init(timeoutMilliseconds: Int = 2000, attempts: Int = 5) {
        self.timeoutMilliseconds = timeoutMilliseconds
        self.attempts = attempts
    }

    /// Runs `body` in a transaction whose lock waits time out; retries with growing pauses on a timeout.
    public func run<T>(_ operation: String, on connection: DatabaseConnection, _ body: (DatabaseConnection) throws -> T) throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try connection.withTransaction { connection in
                    try connection.execute("SET LOCAL lock_timeout = \(unescaped: String(timeoutMilliseconds))")
                    return try body(connection)
                }
            } catch let error as PostgresError where error.sqlState == "55P03" {
                guard attempt < attempts else { throw Busy(operation: operation, attempts: attempts) }
                Thread.sleep(forTimeInterval: Double(attempt) * 0.5)
            }
        }
    }
}
