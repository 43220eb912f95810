public import Storage

/// A command could not open its PostgreSQL connection: exit 69, retried by schedulers, with libpq's reason;
/// or 77 when the server refused the role the database's CONNECT privilege (the operator's to grant, not
/// retried), as every job's start classifies it (`JobStartFailure.connecting`).
public struct DatabaseUnreachable: ExitStatusCarrying {
    public let error: DatabaseError

    public init(_ error: DatabaseError) { self.error = error }

    public var exitStatus: ExitStatus {
        if case .permissionDenied = error.kind { return error.exitStatus }
        return .unavailable
    }

    public var description: String { "cannot connect to PostgreSQL: \(error)" }
}
