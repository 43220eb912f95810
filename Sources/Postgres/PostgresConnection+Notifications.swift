internal import CLibPQ

/// A NOTIFY received on a channel this session LISTENs to.
public struct PostgresNotification: Sendable, Equatable {
    public var channel: String
    public var payload: String
    /// The notifying session's backend pid.
    public var pid: Int32
}

extension PostgresConnection {
    /// Starts listening on `channel` (its name is quoted as an identifier).
    public func listen(_ channel: String) throws(PostgresError) {
        try executeScript(unsafeSQL: "LISTEN " + PostgresQuery.quoteIdentifier(channel))
    }

    /// The notifications received so far (reads what the server has sent, without waiting). Every
    /// `PGnotify` is copied out and freed.
    public func notifications() throws(PostgresError) -> [PostgresNotification] {
        let connection = try liveHandle(operation: "notifications")
        guard PQconsumeInput(connection) == 1 else { throw markBroken(operation: "notifications") }
        var received: [PostgresNotification] = []
        while let notice = PQnotifies(connection) {
            received.append(
                PostgresNotification(
                    channel: String(cString: notice.pointee.relname), payload: String(cString: notice.pointee.extra),
                    pid: notice.pointee.be_pid))
            PQfreemem(notice)
        }
        return received
    }
}
