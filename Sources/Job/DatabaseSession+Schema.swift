import Storage

/// A job's failure type that can say "the schema is not this binary's" and "the database is unavailable":
/// its enum cases are the witnesses, so each job keeps its own failure type and one check serves them all.
protocol SchemaRefusing: Error {
    static func schema(_ error: SchemaError) -> Self
    static func unavailable(_ reason: String) -> Self
}

extension MonthlyRun.Failure: SchemaRefusing {}
extension RefundRequestRun.Failure: SchemaRefusing {}

extension DatabaseSession {
    /// Refuses a database that is not migrated (or was migrated by a newer clawback) before a job does anything.
    func requireCurrentSchema<Failure: SchemaRefusing>(_: Failure.Type) async throws(Failure) {
        do {
            try await run { try Migrator().requireCurrent(on: $0) }
        } catch let error as SchemaError {
            throw .schema(error)
        } catch {
            throw .unavailable("PostgreSQL: \(error)")
        }
    }
}
