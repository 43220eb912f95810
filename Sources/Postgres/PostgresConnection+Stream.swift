internal import CLibPQ

extension PostgresConnection {
    /// Runs a query and hands its rows to `body` in chunks of at most `chunkSize`, never holding the whole
    /// result: libpq's single-row mode reads rows from the socket only as they are consumed, so memory stays
    /// bounded by one chunk however large the result. The client-side deadline applies to each wait for
    /// the next row, not to the whole stream.
    ///
    /// If `body` throws, the query is cancelled, the rest is drained, and `body`'s error is rethrown.
    /// - Returns: the number of rows delivered.
    @discardableResult
    public func stream(
        _ query: PostgresQuery, chunkSize: Int = 1000, _ body: ([PostgresRow]) throws -> Void
    ) throws -> Int {
        precondition(chunkSize > 0, "chunkSize must be positive")
        try send(query, operation: "stream")
        let connection = try liveHandle(operation: "stream")
        guard PQsetSingleRowMode(connection) == 1 else {
            // Cannot happen right after a successful send; drain so the session stays usable.
            _ = try? collect(operation: "stream", query: query.sql)
            throw PostgresError(.misuse, operation: "stream", message: "libpq refused single-row mode")
        }
        var chunk: [PostgresRow] = []
        chunk.reserveCapacity(chunkSize)
        var delivered = 0
        var columns: PostgresColumns?
        var serverError: PostgresError?
        var bodyError: (any Error)?
        var deadline = StatementDeadline(configuration)

        func deliver() {
            guard bodyError == nil, !chunk.isEmpty else { return }
            do {
                try body(chunk)
                delivered += chunk.count
            } catch {
                bodyError = error
                cancelStatement()  // stop the server producing rows nobody will read
            }
            chunk.removeAll(keepingCapacity: true)
        }

        while let result = try nextResult(&deadline, operation: "stream") {
            let status = result.status
            if status == PGRES_SINGLE_TUPLE {
                deadline = StatementDeadline(configuration)
                guard bodyError == nil, serverError == nil else { continue }
                let names = columns ?? PostgresColumns((0..<result.columnCount).map { result.columnName($0) })
                columns = names
                chunk.append(
                    PostgresRow(columns: names, values: (0..<result.columnCount).map { result.value(row: 0, column: $0) }))
                if chunk.count == chunkSize { deliver() }
            } else if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK {
                continue  // the empty result that ends a single-row stream
            } else if bodyError == nil {
                serverError = serverError ?? result.error(operation: "stream", query: query.sql)
            }
        }
        if serverError == nil { deliver() }
        if let bodyError { throw bodyError }
        if let serverError { throw serverError }
        return delivered
    }
}
