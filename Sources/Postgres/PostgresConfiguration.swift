internal import CLibPQ

/// How to reach PostgreSQL and how long a statement may take.
public struct PostgresConfiguration: Sendable {
    /// A libpq connection string (`host=… dbname=…`) or URI (`postgresql://…`). Empty means libpq's own
    /// defaults: the `PG*` environment variables, `~/.pgpass` and the service file, as for `psql`.
    public var connectionString: String
    /// Connects to this database instead of the one the connection string names (host, user and the rest
    /// stay as the string says). Lets one connection string reach several databases, as tests need.
    public var database: String?
    /// Reported to the server as `application_name` unless the connection string sets one.
    public var applicationName: String
    /// How long establishing the connection may take (libpq `connect_timeout`), unless the string sets one.
    public var connectTimeout: Duration
    /// The longest a statement may run. Enforced twice: by the server (`statement_timeout`, which answers
    /// SQLSTATE 57014) and, as a safety net for a silent network, by this client, which then cancels the
    /// statement and, if the server does not answer the cancel within `cancelGrace`, drops the connection.
    public var statementTimeout: Duration
    /// How long to wait after a client-side cancel before giving the connection up.
    public var cancelGrace: Duration
    /// The password, when it comes from a file clawback read itself (a Kubernetes Secret, whose files
    /// libpq's own `passfile` check refuses as group-readable); it overrides the connection string's and
    /// `~/.pgpass`'s. Handed to libpq as a parameter of its own, never formatted into text.
    public var password: String?

    public init(
        connectionString: String = "", database: String? = nil, applicationName: String = "clawback", connectTimeout: Duration = .seconds(10),
        statementTimeout: Duration = .seconds(300), cancelGrace: Duration = .seconds(5)
    ) {
        self.connectionString = connectionString
        self.database = database
        self.applicationName = applicationName
        self.connectTimeout = connectTimeout
        self.statementTimeout = statementTimeout
        self.cancelGrace = cancelGrace
    }
}

extension Duration {
    /// Whole milliseconds, rounded up so that a tiny positive duration never becomes "no time at all".
    var roundedUpMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }
}

extension PostgresConfiguration {
    /// Whether libpq can parse `connectionString` (URI or key=value form).
    public static func parses(_ connectionString: String) -> Bool {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &error) else {
            PQfreemem(error)
            return false
        }
        PQconninfoFree(options)
        return true
    }

    /// Whether a connection string carries a password (parsed by libpq itself, URI or key=value form).
    /// Used to refuse passwords on command lines, where every user of the machine can read them.
    public static func containsPassword(_ connectionString: String) -> Bool {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &error) else {
            PQfreemem(error)
            return false
        }
        defer { PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "password", let value = option.pointee.val, value.pointee != 0 { return true }
            option += 1
        }
        return false
    }
}
