extension PostgresConnection {
    /// Runs `body` in a transaction: COMMIT when it returns, ROLLBACK when it throws (then rethrows its
    /// error). If the rollback fails too, both errors are reported in a `PostgresTransactionError`.
    /// A COMMIT the server turns into a rollback (an earlier statement failed and the error was caught)
    /// is an error, never a silent success.
    public func withTransaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        guard !inTransaction else {
            throw PostgresError(.misuse, operation: "begin", message: "a transaction is already open on this connection")
        }
        try run("BEGIN", operation: "begin")
        inTransaction = true
        defer { inTransaction = false }
        let value: T
        do {
            value = try body(self)
        } catch {
            try rollback(after: error)
            throw error
        }
        do {
            let commit = try run("COMMIT", operation: "commit")
            if commit.commandTag == "ROLLBACK" {
                throw PostgresError(
                    .server, operation: "commit",
                    message: "the server rolled the transaction back because a statement in it had failed")
            }
        } catch {
            try rollback(after: error)
            throw error
        }
        return value
    }

    private func rollback(after bodyError: any Error) throws(PostgresTransactionError) {
        do {
            try run("ROLLBACK", operation: "rollback")
        } catch {
            throw PostgresTransactionError(bodyError: bodyError, rollbackError: error)
        }
    }
}
