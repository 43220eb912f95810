import Testing

@testable import Job
@testable import Postgres

@Suite("How a run's failures are classified")
struct RunFailureTests {
    @Test("a killed session is a database failure (exit 69), also when it surfaces as a transaction whose rollback failed too")
    func killedSessionIsTheDatabase() {
        let commit = PostgresError(.connectionBroken, operation: "commit", message: "terminating connection due to administrator command")
        let rollback = PostgresError(.connectionBroken, operation: "rollback", message: "the connection is closed")
        #expect(CheckingPipeline.databaseFailure(commit)?.operation == "commit")
        let transaction = PostgresTransactionError(bodyError: commit, rollbackError: rollback)
        #expect(CheckingPipeline.databaseFailure(transaction)?.operation == "commit")
        struct NotTheDatabase: Error {}
        let otherBody = PostgresTransactionError(bodyError: NotTheDatabase(), rollbackError: rollback)
        #expect(CheckingPipeline.databaseFailure(otherBody)?.operation == "rollback")
        #expect(CheckingPipeline.databaseFailure(NotTheDatabase()) == nil)
    }
}
