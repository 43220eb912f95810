/// Everything that can go wrong talking to PostgreSQL, as one typed value.
///
/// `description` is what clawback logs: the operation, SQLSTATE, the primary message and the hint. It never
/// carries a password, a bind value this module formatted, the SQL text or the server's DETAIL, which can
/// quote a whole row ("Key (transaction_id)=(...) already exists"); those two are only in `debugDescription`,
/// as postgres-nio's `PSQLError` keeps its server fields out of its description. A primary message can still
/// name a value: PostgreSQL's input errors (22P02) quote the input, and clawback's own CB errors name the
/// transaction they refuse, which an operator needs to act on.
/// Equality is on `code` only, so tests can match on the kind of failure without caring about the wording.
public struct PostgresError: Error, Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of failure, open for new kinds without breaking callers' `switch`es.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case connectionFailed, connectionBroken, server, timedOut, decoding, copyFailed, misuse, unsendableValue
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The connection could not be established (unreachable, refused, authentication, bad conninfo).
        public static let connectionFailed = Code(.connectionFailed)
        /// An established connection was lost or left unusable (server restart, network, a cancelled
        /// query that never finished). Open a new connection.
        public static let connectionBroken = Code(.connectionBroken)
        /// The server rejected a statement; `sqlState` says why.
        public static let server = Code(.server)
        /// The statement deadline passed; the statement was cancelled.
        public static let timedOut = Code(.timedOut)
        /// A column's value could not be decoded into the requested Swift type.
        public static let decoding = Code(.decoding)
        /// `COPY ... FROM STDIN` failed while sending data.
        public static let copyFailed = Code(.copyFailed)
        /// The API was used in a way it does not support (for example a nested transaction).
        public static let misuse = Code(.misuse)
        /// A bind value cannot travel as text: it holds a NUL character, which libpq's C strings would cut
        /// short and PostgreSQL's text cannot hold. Nothing was sent (SQLSTATE 22021, as the server says).
        public static let unsendableValue = Code(.unsendableValue)

        public var description: String { base.rawValue }
    }

    public var code: Code
    /// What this module was doing: "connect", "query", "stream", "copy", "begin", "commit", "rollback", ...
    public var operation: String
    /// The server's five-character SQLSTATE, when the server sent one (for example "23505").
    public var sqlState: String?
    /// The primary message (server's or libpq's), one line.
    public var message: String
    /// The server's DETAIL, which may quote row values. Only in `debugDescription`.
    public var detail: String?
    public var hint: String?
    /// The SQL text that failed (never the bind values). Only in `debugDescription`.
    public var query: String?

    public init(
        _ code: Code, operation: String, message: String, sqlState: String? = nil, detail: String? = nil,
        hint: String? = nil, query: String? = nil
    ) {
        self.code = code
        self.operation = operation
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.hint = hint
        self.query = query
    }

    public static func == (lhs: PostgresError, rhs: PostgresError) -> Bool { lhs.code == rhs.code }

    /// SQLSTATE 23505: a unique constraint was violated.
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// The statement's values are at fault, not the connection or the SQL: a data exception (class 22: out of
    /// range, bad input, a character text cannot hold), an integrity constraint (class 23), or a program limit
    /// (54000: a value too large for an index).
    public var isDataError: Bool {
        guard let sqlState else { return false }
        return sqlState.hasPrefix("22") || sqlState.hasPrefix("23") || sqlState == "54000"
    }

    /// SQLSTATE 57014: the statement was cancelled (statement_timeout or a cancel request).
    public var isQueryCanceled: Bool { sqlState == "57014" }

    public var description: String {
        var text = "PostgreSQL \(operation) failed"
        if let sqlState { text += " [SQLSTATE \(sqlState)]" }
        text += ": \(message)"
        if let hint { text += " (hint: \(hint))" }
        return text
    }

    /// For a developer's eyes (a test's failure, a debugger): the description with the server's DETAIL and
    /// the SQL text. Never logged by clawback, since DETAIL can quote a player's row.
    public var debugDescription: String {
        var text = description
        if let detail { text += " (detail: \(detail))" }
        if let query { text += " in query: \(query)" }
        return text
    }
}

/// `withTransaction` failed in its body and the rollback failed too: both are kept, neither is swallowed.
public struct PostgresTransactionError: Error, Sendable, CustomStringConvertible {
    /// The error the transaction's body (or COMMIT) threw.
    public var bodyError: any Error
    /// The error ROLLBACK threw afterwards; the connection should be discarded.
    public var rollbackError: PostgresError

    public var description: String {
        "transaction failed: \(bodyError); then rollback failed too: \(rollbackError)"
    }
}
