public import Storage

/// A command could not open its PostgreSQL connection: exit 69, retried by schedulers, with libpq's reason.
public struct DatabaseUnreachable: ExitStatusCarrying {
    public let error: DatabaseError

    public init(_ error: DatabaseError) { self.error = error }

    public var exitStatus: ExitStatus { .unavailable }
    public var description: String { "cannot connect to PostgreSQL: \(error)" }
}
