internal import CLibPQ
public import Logging

#if canImport(Glibc)
    internal import Glibc
#endif

/// One PostgreSQL session over libpq.
///
/// Calls block the calling thread (libpq is synchronous); every wait is bounded by the statement deadline.
/// A connection is used by one thread at a time and is deliberately not `Sendable`: the job gives each
/// worker its own. Every `PGresult` is cleared and every result drained to NULL on every path, so the
/// session never ends up with "another command is already in progress".
public final class PostgresConnection {
    public let configuration: PostgresConfiguration
    let logger: Logger
    /// nil once closed or given up as broken; `PQfinish` has then run.
    private var handle: OpaquePointer?
    var inTransaction = false

    /// Connects and applies the session settings this module relies on (UTC, ISO dates, statement timeout).
    public init(_ configuration: PostgresConfiguration = .init(), logger: Logger = Logger(label: "clawback.postgres"))
        throws(PostgresError)
    {
        self.configuration = configuration
        self.logger = logger
        handle = try Self.connect(configuration)
        clawback_pq_silence_notices(handle)
        try run(
            """
            SELECT set_config('statement_timeout', \(String(configuration.statementTimeout.roundedUpMilliseconds)), false),
                   set_config('TimeZone', 'UTC', false),
                   set_config('DateStyle', 'ISO, YMD', false),
                   set_config('client_encoding', 'UTF8', false)
            """, operation: "configure session")
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

    /// Ends the session now instead of at deinit. Further calls fail with `.connectionBroken`.
    public func close() {
        if let handle { PQfinish(handle) }
        handle = nil
    }

    /// Whether the session is still usable (not closed, not lost).
    public var isOpen: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// The server's backend process id (what `pg_terminate_backend` takes).
    public var backendPID: Int32 {
        guard let handle else { return 0 }
        return PQbackendPID(handle)
    }

    /// Connection parameters are handed to libpq as they are (`expand_dbname`), so every form libpq accepts
    /// works, and defaults come from libpq itself. Our defaults go before the string (it may override them)
    /// or use libpq's `fallback_` keyword.
    private static func connect(_ configuration: PostgresConfiguration) throws(PostgresError) -> OpaquePointer {
        let seconds = max(2, (configuration.connectTimeout.roundedUpMilliseconds + 999) / 1000)
        let parameters: [(String, String)] =
            [
                ("connect_timeout", String(seconds)),
                ("keepalives", "1"), ("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3"),
                ("dbname", configuration.connectionString),
                ("fallback_application_name", configuration.applicationName),
            ] + (configuration.database.map { [("dbname", $0)] } ?? [])  // only the first dbname is expanded
            + (configuration.password.map { [("password", $0)] } ?? [])  // after the string: it wins
        let connection = withCStringArray(parameters.map(\.0)) { keywords in
            withCStringArray(parameters.map(\.1)) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let connection else {
            throw PostgresError(.connectionFailed, operation: "connect", message: "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection)).trimmingTrailingNewlines()
            PQfinish(connection)  // a failed connection still owns memory
            // The server's refusal of the role's CONNECT privilege is 42501 like any privilege, but libpq hands
            // a failed connection's error over as text only: its SQLSTATE is recovered from its words.
            let refusedPrivilege = message.contains("permission denied for database")
            throw PostgresError(
                .connectionFailed, operation: "connect", message: redactingConnectionString(message, configuration),
                sqlState: refusedPrivilege ? "42501" : nil,
                hint: refusedPrivilege
                    ? "grant the role CONNECT on the database"
                    : "check the connection string or the PG* environment variables, and that the server is up")
        }
        return connection
    }

    /// libpq quotes the offending token when it cannot parse a connection string (`invalid percent-encoded
    /// token: "..."`, `missing "=" after "..."`, ...); that token may be a password. So when libpq cannot
    /// parse the string, none of its words are shown.
    private static func redactingConnectionString(_ message: String, _ configuration: PostgresConfiguration) -> String {
        guard !configuration.connectionString.isEmpty,
            message.contains("connection info string") || message.contains("URI")
                || !PostgresConfiguration.parses(configuration.connectionString)
        else { return message }
        return "the connection string could not be parsed (its text is not shown: it may contain a password)"
    }

    // MARK: - Executing

    /// Runs one statement with bind parameters and returns all its rows.
    @discardableResult
    public func query(_ query: PostgresQuery) throws(PostgresError) -> PostgresResult {
        try run(query, operation: "query")
    }

    /// Runs one statement with bind parameters; returns the number of rows it affected.
    @discardableResult
    public func execute(_ query: PostgresQuery) throws(PostgresError) -> Int {
        try run(query, operation: "execute").affectedRows
    }

    /// Runs SQL text that has no parameters and may hold several statements, such as a migration file.
    /// Only for trusted text shipped with this program: nothing from input may reach it.
    public func executeScript(unsafeSQL sql: String) throws(PostgresError) {
        let connection = try liveHandle(operation: "script")
        guard PQsendQuery(connection, sql) == 1 else { throw sendFailed(operation: "script") }
        _ = try collect(operation: "script", query: sql)
    }

    @discardableResult
    func run(_ query: PostgresQuery, operation: String) throws(PostgresError) -> PostgresResult {
        try send(query, operation: operation)
        return try collect(operation: operation, query: query.sql)
    }

    func send(_ query: PostgresQuery, operation: String) throws(PostgresError) {
        let connection = try liveHandle(operation: operation)
        logger.trace("postgres statement", metadata: ["db.operation": "\(operation)", "db.statement": "\(query.sql)"])
        // strdup would cut such a value at its NUL and send what is left as if it were the value.
        if let position = query.binds.firstIndex(where: { $0?.utf8.contains(0) == true }) {
            throw PostgresError(
                .unsendableValue, operation: operation,
                message: "bind value $\(position + 1) holds a NUL character, which text cannot hold: not sent",
                sqlState: "22021", query: query.sql)
        }
        let sent = withOptionalCStringArray(query.binds) { values in
            PQsendQueryParams(connection, query.sql, Int32(query.binds.count), nil, values, nil, nil, 0)
        }
        guard sent == 1 else { throw sendFailed(operation: operation) }
    }

    /// Reads every result of the statement in flight until libpq says NULL. The first error wins; the rest
    /// are still read so the session stays usable.
    func collect(operation: String, query: String?) throws(PostgresError) -> PostgresResult {
        var deadline = StatementDeadline(configuration)
        var outcome: PostgresResult?
        var failure: PostgresError?
        while let result = try nextResult(&deadline, operation: operation) {
            let status = result.status
            if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK || status == PGRES_EMPTY_QUERY {
                if failure == nil { outcome = copyResult(result) }
            } else if status == PGRES_COPY_IN {
                // Only copyIn expects this; end the copy so the session can carry on.
                _ = PQputCopyEnd(handle, "COPY FROM STDIN is only supported through copyIn")
                failure = failure ?? PostgresError(.misuse, operation: operation, message: "use copyIn for COPY FROM STDIN")
            } else if status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH {
                throw markBroken(operation: operation, reason: "COPY TO STDOUT is not supported by this module")
            } else {
                failure = failure ?? result.error(operation: operation, query: query)
            }
        }
        if var failure {
            // A server that ends the session (restart, pg_terminate_backend) answers with an error result
            // first; what matters to the caller is that the connection is gone.
            if let handle, PQstatus(handle) == CONNECTION_BAD {
                let broken = markBroken(operation: operation, reason: failure.message)
                failure.code = broken.code
                failure.hint = broken.hint
            }
            throw failure
        }
        return outcome ?? PostgresResult(rows: [], affectedRows: 0, commandTag: "")
    }

    /// The next result of the statement in flight, waiting at most until the deadline. On the deadline the
    /// statement is cancelled once; if the server does not answer the cancel in time, the session is dropped.
    func nextResult(_ deadline: inout StatementDeadline, operation: String) throws(PostgresError) -> ResultHandle? {
        let connection = try liveHandle(operation: operation)
        while true {
            // Read from the socket only when libpq has no complete result buffered: consuming input before
            // every row would make libpq compact an ever larger buffer (quadratic in single-row mode).
            if PQisBusy(connection) == 0 { return PQgetResult(connection).map { ResultHandle($0) } }
            let remaining = deadline.remainingMilliseconds
            if remaining <= 0 {
                if deadline.cancelSent {
                    throw markBroken(
                        operation: operation,
                        reason: "the statement did not finish within its deadline and did not answer a cancel",
                        code: .timedOut)
                }
                cancelStatement()
                deadline.startGrace()
                continue
            }
            let ready = clawback_pq_wait_socket(PQsocket(connection), 0, Int32(clamping: remaining))
            if ready < 0 && errno != EINTR { throw markBroken(operation: operation, reason: "poll failed, errno \(errno)") }
            if ready > 0 && PQconsumeInput(connection) != 1 { throw markBroken(operation: operation) }
        }
    }

    /// Asks the server to cancel the statement in flight (a separate connection, as libpq does it).
    func cancelStatement() {
        guard let handle, let cancel = PQgetCancel(handle) else { return }
        defer { PQfreeCancel(cancel) }
        var buffer = [CChar](repeating: 0, count: 256)
        if PQcancel(cancel, &buffer, Int32(buffer.count)) != 1 {
            let message = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            logger.warning("could not send a cancel request", metadata: ["db.error": "\(message)"])
        }
    }

    func copyResult(_ result: borrowing ResultHandle) -> PostgresResult {
        let columnCount = result.columnCount
        let columns = PostgresColumns((0..<columnCount).map { result.columnName($0) })
        var rows: [PostgresRow] = []
        rows.reserveCapacity(result.rowCount)
        for row in 0..<result.rowCount {
            rows.append(PostgresRow(columns: columns, values: (0..<columnCount).map { result.value(row: row, column: $0) }))
        }
        return PostgresResult(rows: rows, affectedRows: result.affectedRows, commandTag: result.commandTag)
    }

    // MARK: - Connection state

    func liveHandle(operation: String) throws(PostgresError) -> OpaquePointer {
        guard let handle else {
            throw PostgresError(.connectionBroken, operation: operation, message: "the connection is closed")
        }
        return handle
    }

    func sendFailed(operation: String) -> PostgresError {
        guard let handle else {
            return PostgresError(.connectionBroken, operation: operation, message: "the connection is closed")
        }
        let message = String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines()
        if PQstatus(handle) == CONNECTION_BAD { return markBroken(operation: operation, reason: message) }
        return PostgresError(.misuse, operation: operation, message: message)
    }

    /// Gives the session up: frees it and returns the error describing why.
    func markBroken(operation: String, reason: String? = nil, code: PostgresError.Code = .connectionBroken)
        -> PostgresError
    {
        let message = reason ?? handle.map { String(cString: PQerrorMessage($0)).trimmingTrailingNewlines() } ?? ""
        close()
        logger.warning("postgres connection given up", metadata: ["db.operation": "\(operation)", "db.error": "\(message)"])
        return PostgresError(
            code, operation: operation, message: message.isEmpty ? "the connection to the server was lost" : message,
            hint: "open a new connection; work not committed was rolled back by the server")
    }
}

/// The client-side deadline of one statement (or of one wait, while streaming).
struct StatementDeadline {
    private let clock = ContinuousClock()
    private var end: ContinuousClock.Instant
    private let grace: Duration
    private(set) var cancelSent = false

    init(_ configuration: PostgresConfiguration) {
        // A little longer than the server's own statement_timeout, so the server's clean error comes first.
        end = clock.now + configuration.statementTimeout + .seconds(1)
        grace = configuration.cancelGrace
    }

    var remainingMilliseconds: Int64 { (end - clock.now).roundedUpMilliseconds }

    mutating func startGrace() {
        cancelSent = true
        end = clock.now + grace
    }
}
