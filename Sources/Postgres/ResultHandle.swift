internal import CLibPQ

/// Sole owner of one `PGresult`: `PQclear` runs exactly once, whichever path the caller takes.
/// Values are copied out into Swift (`String`) before the handle dies, never referenced after it.
struct ResultHandle: ~Copyable {
    let raw: OpaquePointer

    init(_ raw: OpaquePointer) { self.raw = raw }

    deinit { PQclear(raw) }

    var status: ExecStatusType { PQresultStatus(raw) }

    var rowCount: Int { Int(PQntuples(raw)) }

    var columnCount: Int { Int(PQnfields(raw)) }

    func columnName(_ column: Int) -> String { String(cString: PQfname(raw, Int32(column))) }

    /// The value at (row, column); `nil` is SQL NULL, which libpq distinguishes from an empty string only
    /// through `PQgetisnull`.
    func value(row: Int, column: Int) -> String? {
        if PQgetisnull(raw, Int32(row), Int32(column)) == 1 { return nil }
        guard let text = PQgetvalue(raw, Int32(row), Int32(column)) else { return nil }
        return String(cString: text)
    }

    /// Rows affected by INSERT/UPDATE/DELETE/COPY (PQcmdTuples), 0 when not applicable.
    var affectedRows: Int {
        guard let text = PQcmdTuples(raw) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }

    /// The command tag, e.g. "COMMIT" or "ROLLBACK" (a COMMIT of a failed transaction answers ROLLBACK).
    var commandTag: String {
        guard let text = PQcmdStatus(raw) else { return "" }
        return String(cString: text)
    }

    func errorField(_ field: Int32) -> String? {
        guard let text = PQresultErrorField(raw, field) else { return nil }
        return String(cString: text)
    }

    /// The server's error as a typed value, read before the result is cleared.
    func error(_ code: PostgresError.Code = .server, operation: String, query: String?) -> PostgresError {
        let primary = errorField(Int32(UInt8(ascii: "M")))  // PG_DIAG_MESSAGE_PRIMARY
        let fallback = PQresultErrorMessage(raw).map { String(cString: $0) } ?? "unknown error"
        let sqlState = errorField(Int32(UInt8(ascii: "C")))  // PG_DIAG_SQLSTATE
        var code = code
        if sqlState == "57014" { code = .timedOut }
        return PostgresError(
            code, operation: operation,
            message: (primary ?? fallback).trimmingTrailingNewlines(),
            sqlState: sqlState,
            detail: errorField(Int32(UInt8(ascii: "D"))),  // PG_DIAG_MESSAGE_DETAIL
            hint: errorField(Int32(UInt8(ascii: "H"))),  // PG_DIAG_MESSAGE_HINT
            query: query)
    }
}

extension String {
    func trimmingTrailingNewlines() -> String {
        var text = Substring(self)
        while let last = text.last, last == "\n" || last == "\r" || last == " " { text = text.dropLast() }
        return String(text)
    }
}
