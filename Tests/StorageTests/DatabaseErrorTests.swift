import Storage
import Testing

@testable import Postgres

@Suite("How the database's failures are classified at Storage's edge")
struct DatabaseErrorTests {
    @Test("a killed session is the database interrupted (a retry may help), also when it surfaces as a transaction whose rollback failed too")
    func killedSessionIsInterrupted() {
        let commit = PostgresError(.connectionBroken, operation: "commit", message: "terminating connection due to administrator command")
        let rollback = PostgresError(.connectionBroken, operation: "rollback", message: "the connection is closed")
        #expect(DatabaseError(commit as any Error)?.message == commit.message)
        #expect(DatabaseError(commit as any Error)?.kind == .interrupted)
        let transaction = PostgresTransactionError(bodyError: commit, rollbackError: rollback)
        #expect(DatabaseError(transaction)?.message == commit.message)
        struct NotTheDatabase: Error {}
        let otherBody = PostgresTransactionError(bodyError: NotTheDatabase(), rollbackError: rollback)
        #expect(DatabaseError(otherBody)?.message == rollback.message)
        #expect(DatabaseError(NotTheDatabase()) == nil)
    }

    @Test(
        "each SQLSTATE class lands where a scheduler should act on it",
        arguments: [
            ("08006", DatabaseError.Kind.interrupted), ("53300", .interrupted), ("57P01", .interrupted), ("57014", .interrupted),
            ("40001", .interrupted), ("40P01", .interrupted), ("55P03", .interrupted), ("23505", .refused), ("CB001", .refused),
            ("42P01", .refused),
        ])
    func sqlStates(sqlState: String, kind: DatabaseError.Kind) {
        let error = DatabaseError(PostgresError(.server, operation: "query", message: "m", sqlState: sqlState))
        #expect(error.kind == kind)
        #expect(error.isClawbackRule == sqlState.hasPrefix("CB"))
    }

    @Test("a connection that could not be opened is unreachable")
    func unreachable() {
        #expect(DatabaseError(PostgresError(.connectionFailed, operation: "connect", message: "no route")).kind == .unreachable)
    }

    @Test("a refused privilege names the privilege the statement needs and the object the server named")
    func permissionDenied() {
        func denied(_ message: String, _ sql: String) -> DatabaseError {
            DatabaseError(PostgresError(.server, operation: "query", message: message, sqlState: "42501", query: sql))
        }
        let schema = denied("permission denied for schema clawback", "SELECT 1 FROM clawback.ledger")
        #expect(schema.kind == .permissionDenied(privilege: "USAGE", object: "schema clawback"))
        let select = denied("permission denied for table ledger", "SELECT entry_id FROM clawback.ledger ORDER BY 1")
        #expect(select.kind == .permissionDenied(privilege: "SELECT", object: "table ledger"))
        #expect("\(select)".contains("it needs SELECT on table ledger"))
        let insert = denied("permission denied for table grants", "INSERT INTO clawback.grants (transaction_id) VALUES ($1)")
        #expect(insert.kind == .permissionDenied(privilege: "INSERT", object: "table grants"))
        let delete = denied("permission denied for table ledger_queue", "DELETE FROM clawback.ledger_queue WHERE entry_id = $1")
        #expect(delete.kind == .permissionDenied(privilege: "DELETE", object: "table ledger_queue"))
        // A statement that writes one table and reads another: which one was refused, the verb cannot say.
        let copied = denied("permission denied for table grants", "WITH x AS (SELECT 1) INSERT INTO clawback.grants SELECT * FROM x")
        #expect(copied.kind == .permissionDenied(privilege: "probably INSERT", object: "table grants"))
        let column = denied("permission denied for column detail of relation checks", "UPDATE clawback.checks SET detail = $1")
        #expect(column.kind == .permissionDenied(privilege: "UPDATE", object: "column detail of relation checks"))
        let database = denied("permission denied for database clawback", "CREATE SCHEMA clawback")
        #expect(database.kind == .permissionDenied(privilege: nil, object: "database clawback"))
        #expect("\(database)".hasPrefix("the database role clawback connects as lacks a privilege (on database clawback): "))
        let owner = denied("must be owner of table grants", "ALTER TABLE clawback.grants DETACH PARTITION p")
        #expect(owner.kind == .permissionDenied(privilege: "ownership", object: "table grants"))
        let function = denied("permission denied for function record_grant", "SELECT clawback.record_grant($1)")
        #expect(function.kind == .permissionDenied(privilege: "EXECUTE", object: "function record_grant"))
    }
}
