import HTTP
package import Logging
package import Storage

/// A job's failure type that can say "the configuration is wrong", "the schema is not this binary's" and "the
/// database (or the HTTP client) is unavailable": its enum cases are the witnesses, so each job keeps its own
/// failure type and one start serves them all.
package protocol JobStartFailure: Error {
    static func configuration(_ problem: ConfigurationProblem) -> Self
    static func schema(_ error: SchemaError) -> Self
    static func unavailable(_ reason: Unavailable) -> Self
    /// PostgreSQL refused or failed a statement: its error says whether a retry may help (69), a privilege is missing (77), or neither (70).
    static func database(_ error: DatabaseError) -> Self
}

extension JobStartFailure {
    /// A connection that could not be opened: a role refused the database's CONNECT privilege is the
    /// operator's to grant (77, naming it), anything else the database unavailable (69).
    package static func connecting(_ error: any Error) -> Self {
        if let refused = DatabaseError(error), case .permissionDenied = refused.kind { return .database(refused) }
        return .unavailable(Unavailable("cannot connect to PostgreSQL", cause: error))
    }

    /// A failure of the database's side of a job's start (its schema check, its lock): the database's own,
    /// classified (69, 77 or 70), or anything else as the database unavailable.
    package static func database(orUnavailable error: any Error) -> Self {
        DatabaseError(error).map { .database($0) } ?? .unavailable(Unavailable("PostgreSQL", cause: error))
    }
}

extension MonthlyRun.Failure: JobStartFailure {
    package static func database(_ error: DatabaseError) -> Self { .run(.database(error)) }
}

/// What every job starts from, whatever store it asks: a database session whose schema is this binary's.
package enum JobStart {
    package static func database<Failure: JobStartFailure>(_ database: DatabaseConfiguration, logger: Logger, failing _: Failure.Type)
        async throws(Failure) -> DatabaseSession
    {
        let session: DatabaseSession
        do {
            session = try DatabaseSession(database)
        } catch {
            logger.error("cannot connect to PostgreSQL", metadata: ["error": "\(error)"])
            throw .connecting(error)
        }
        try await session.requireCurrentSchema(Failure.self)
        return session
    }
}

extension DatabaseSession {
    /// Refuses a database that is not migrated (or was migrated by a newer clawback) before a job does anything.
    package func requireCurrentSchema<Failure: JobStartFailure>(_: Failure.Type) async throws(Failure) {
        do {
            try await run { try Migrator().requireCurrent(on: $0) }
        } catch let error as SchemaError {
            throw .schema(error)
        } catch {
            throw .database(orUnavailable: error)
        }
    }
}
