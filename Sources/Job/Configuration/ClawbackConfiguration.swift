public import Foundation
public import Reconciliation
import Storage
import Yams

extension NSNull: NSNullLike {}

/// clawback's settings: the database, how runs behave, the reports, the tail window, the refund questions'
/// policy, and each registered store driver's own sections (`settings(of:)`).
/// Read from a YAML file (see `Jobs/clawback.example.yaml`), then overridden by environment variables, then
/// by flags. Secrets come only from files or the environment, never from the file's text or from flags.
public struct ClawbackConfiguration: Sendable, Equatable {
    public struct Database: Sendable, Equatable {
        /// libpq connection string or URI without password; nil: libpq's PG* variables and ~/.pgpass.
        public var url: String?
        public var statementTimeoutSeconds = 300
        /// A file holding the database password (its first line), for platforms that mount secrets as files
        /// libpq's pgpass check refuses (Kubernetes Secrets are group-readable under `fsGroup`). Same rule
        /// as Apple's key files: owner read-write at most, group read at most, others nothing.
        public var passwordFile: String?
        /// The password read from `passwordFile` by `loadPassword()`.
        public var password: String?
    }

    /// Where every job's metrics go besides its textfile (docs/operations.md, monitoring).
    public struct Metrics: Sendable, Equatable {
        /// A Prometheus Pushgateway's base URL; nil: metrics only go to the textfiles named.
        public var pushgatewayURL: String?
        public var pushTimeoutSeconds = 10
    }

    public struct Run: Sendable, Equatable {
        /// The default window: this many calendar months before the current one.
        public var windowMonths = 3
        public var batchSize = 500
        public var rounding: RoundingRule = .nearestHalfUp
        public var metricsFile: String?
    }

    /// The tail window (docs/operations.md, the tail window): the grant path accepts only recent purchases, so grants older than
    /// the retention can be forgotten without reopening a replay hole.
    public struct TailWindow: Sendable, Equatable {
        /// How old a purchase `clawback.record_grant` still accepts.
        public var acceptanceWindowDays = 30
        /// How far in the future a purchase date may lie (clock skew).
        public var futureSkewSeconds = 300
        /// Months of grants kept; nil: the reconciliation window plus one month (a run on the last day of a
        /// month reads grants from that far back).
        public var grantRetentionMonths: Int?
        /// Years of runs, checks and (acknowledged) ledger entries kept: financial records.
        public var recordRetentionYears = 7
        /// `clawback run` prunes after a successful full run.
        public var pruneAfterRun = true

        public func grantRetention(windowMonths: Int) -> Int { grantRetentionMonths ?? windowMonths + 1 }
    }

    public struct Reports: Sendable, Equatable {
        /// Where `run` and `report` write the CSVs and the HTML summary.
        public var directory = "reports"
        /// Start the CSVs with a UTF-8 byte order mark (Excel needs it to read non-ASCII text right).
        public var excelByteOrderMark = false
        public var html = true
        /// Where the written reports are also delivered (nil: only the directory).
        public var s3: S3Delivery?
    }

    public var database = Database()
    public var run = Run()
    public var reports = Reports()
    public var tailWindow = TailWindow()
    public var refundRequests = RefundRequests()
    public var metrics = Metrics()
    /// The settings each registered store driver read from its own section, by store (`settings(of:)`).
    var storeSettings: [String: StoredSettings] = [:]
    /// Where the file was (relative paths in it are relative to its directory).
    public var sourcePath: String?

    public init() {}

    /// Parses YAML; every problem is collected and reported at once, each naming its field.
    public static func parse(yaml text: String, baseDirectory: String? = nil) throws(ConfigurationErrors) -> ClawbackConfiguration {
        let loaded: Any?
        do {
            loaded = try Yams.load(yaml: text)
        } catch {
            throw ConfigurationErrors(errors: [ConfigurationError(field: "file", problem: "not valid YAML: \(error)")])
        }
        var errors: [ConfigurationError] = []
        var configuration = ClawbackConfiguration()
        let root = ConfigNode(value: loaded ?? [String: Any](), path: "")
        guard loaded == nil || loaded is [String: Any] else {
            throw ConfigurationErrors(errors: [ConfigurationError(field: "file", problem: "must be a mapping of settings")])
        }
        root.rejectUnknownKeys(
            Set(["database", "run", "reports", "tail_window", "refund_requests", "metrics"]).union(storeSectionKeys), into: &errors)
        func resolve(_ path: String?) -> String? {
            guard let path, let baseDirectory, !path.hasPrefix("/") else { return path }
            return URL(fileURLWithPath: baseDirectory).appendingPathComponent(path).standardizedFileURL.path
        }

        let database = root.child("database")
        database.rejectUnknownKeys(["url", "statement_timeout_seconds", "password_file"], into: &errors)
        configuration.database.url = database.child("url").string(into: &errors)
        configuration.database.passwordFile = resolve(database.child("password_file").string(into: &errors))
        if let url = configuration.database.url, Self.carriesPassword(url) || DatabaseConfiguration.containsPassword(url) {
            errors.append(
                ConfigurationError(
                    field: "database.url",
                    problem: "carries a password; secrets never come from this file: use database.password_file, PGPASSWORD or ~/.pgpass"))
        }
        if let timeout = database.child("statement_timeout_seconds").int(into: &errors) {
            if timeout > 0 {
                configuration.database.statementTimeoutSeconds = timeout
            } else {
                errors.append(ConfigurationError(field: "database.statement_timeout_seconds", problem: "must be positive"))
            }
        }

        let run = root.child("run")
        run.rejectUnknownKeys(Set(["window_months", "batch_size", "rounding", "metrics_file"]).union(storeSharedKeys("run")), into: &errors)
        if let months = run.child("window_months").int(into: &errors) {
            if (1...24).contains(months) {
                configuration.run.windowMonths = months
            } else {
                errors.append(ConfigurationError(field: "run.window_months", problem: "must be between 1 and 24"))
            }
        }
        if let size = run.child("batch_size").int(into: &errors) {
            if (1...10_000).contains(size) {
                configuration.run.batchSize = size
            } else {
                errors.append(ConfigurationError(field: "run.batch_size", problem: "must be between 1 and 10000"))
            }
        }
        if let rounding = run.child("rounding").string(into: &errors) {
            if let rule = RoundingRule(rawValue: rounding) {
                configuration.run.rounding = rule
            } else {
                errors.append(
                    ConfigurationError(
                        field: "run.rounding",
                        problem: "must be one of \(RoundingRule.allCases.map(\.rawValue).joined(separator: ", "))"))
            }
        }
        configuration.run.metricsFile = resolve(run.child("metrics_file").string(into: &errors))

        let reports = root.child("reports")
        reports.rejectUnknownKeys(["directory", "excel_bom", "html", "delivery"], into: &errors)
        if let directory = reports.child("directory").string(into: &errors) {
            if directory.isEmpty {
                errors.append(ConfigurationError(field: "reports.directory", problem: "must not be empty"))
            } else {
                configuration.reports.directory = resolve(directory) ?? directory
            }
        }
        if let flag = reports.child("excel_bom").bool(into: &errors) { configuration.reports.excelByteOrderMark = flag }
        if let flag = reports.child("html").bool(into: &errors) { configuration.reports.html = flag }
        parseReportDelivery(reports.child("delivery"), into: &configuration.reports, errors: &errors, resolve: resolve)

        parseTailWindow(root.child("tail_window"), windowMonths: configuration.run.windowMonths, into: &configuration.tailWindow, errors: &errors)
        parseRefundRequests(root.child("refund_requests"), into: &configuration.refundRequests, errors: &errors)
        parseMetrics(root.child("metrics"), into: &configuration.metrics, errors: &errors)
        parseStoreSections(root, into: &configuration, errors: &errors, resolve: resolve)

        guard errors.isEmpty else { throw ConfigurationErrors(errors: errors) }
        return configuration
    }

    static func parseTailWindow(_ node: ConfigNode, windowMonths: Int, into tail: inout TailWindow, errors: inout [ConfigurationError]) {
        node.rejectUnknownKeys(
            [
                "acceptance_window_days", "future_skew_seconds", "grant_retention_months", "record_retention_years",
                "prune_after_run",
            ], into: &errors)
        func bounded(_ key: String, _ range: ClosedRange<Int>) -> Int? {
            guard let value = node.child(key).int(into: &errors) else { return nil }
            guard range.contains(value) else {
                errors.append(ConfigurationError(field: "tail_window.\(key)", problem: "must be between \(range.lowerBound) and \(range.upperBound)"))
                return nil
            }
            return value
        }
        if let days = bounded("acceptance_window_days", 1...365) { tail.acceptanceWindowDays = days }
        if let seconds = bounded("future_skew_seconds", 0...86_400) { tail.futureSkewSeconds = seconds }
        if let months = bounded("grant_retention_months", 1...120) { tail.grantRetentionMonths = months }
        if let years = bounded("record_retention_years", 1...100) { tail.recordRetentionYears = years }
        if let flag = node.child("prune_after_run").bool(into: &errors) { tail.pruneAfterRun = flag }
        // Pruning must never take grants a run still reads, nor ones the grant path could still be asked to
        // grant again (which would reopen the replay hole).
        let retention = tail.grantRetention(windowMonths: windowMonths)
        if retention < windowMonths + 1 {
            errors.append(
                ConfigurationError(
                    field: "tail_window.grant_retention_months",
                    problem:
                        "\(retention) is shorter than the reconciliation window: it must be at least run.window_months + 1 = \(windowMonths + 1), "
                        + "since a run late in a month reads grants from that many months back"))
        }
        if tail.acceptanceWindowDays > retention * 28 {
            errors.append(
                ConfigurationError(
                    field: "tail_window.acceptance_window_days",
                    problem: "\(tail.acceptanceWindowDays) days is longer than the grant retention of \(retention) months: "
                        + "pruned grants could then be granted again"))
        }
    }

    /// Reads the file at `path`.
    public static func load(path: String) throws(ConfigurationErrors) -> ClawbackConfiguration {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationErrors(errors: [ConfigurationError(field: path, problem: "cannot read the configuration file")])
        }
        var configuration = try parse(yaml: text, baseDirectory: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        configuration.sourcePath = path
        return configuration
    }

    /// The one rule for where the database is: $CLAWBACK_DATABASE_URL, else $DATABASE_URL, else the file's
    /// URL; nil leaves it to libpq's PG* variables and ~/.pgpass. (A `--database` flag goes before all.)
    public static func databaseURL(environment: [String: String], file: String?) -> String? {
        for name in ["CLAWBACK_DATABASE_URL", "DATABASE_URL"] {
            if let url = environment[name], !url.isEmpty { return url }
        }
        return file
    }

    /// Environment variables override the file: CLAWBACK_DATABASE_URL (else DATABASE_URL), CLAWBACK_REPORT_DIR,
    /// CLAWBACK_METRICS_FILE, CLAWBACK_PUSHGATEWAY_URL (empty: none), and each registered store's own (`StoreDriver.applyEnvironment`: the App Store's
    /// CLAWBACK_APPLE_PRODUCTION_URL and CLAWBACK_APPLE_SANDBOX_URL, Google Play's CLAWBACK_GOOGLE_API_URL and
    /// CLAWBACK_GOOGLE_TOKEN_URL).
    public mutating func applyEnvironment(_ environment: [String: String]) {
        database.url = Self.databaseURL(environment: environment, file: database.url)
        for driver in StoreDrivers.all { driver.applyEnvironment(environment, to: &self) }
        if let directory = environment["CLAWBACK_REPORT_DIR"] { reports.directory = directory }
        if let file = environment["CLAWBACK_METRICS_FILE"] { run.metricsFile = file }
        if let url = environment["CLAWBACK_PUSHGATEWAY_URL"] { metrics.pushgatewayURL = url.isEmpty ? nil : url }
    }

    /// Checks what only the final configuration (file and environment together) can show, each registered
    /// store's (`StoreDriver.finalProblems`): its endpoints use TLS unless they are on this machine (the
    /// simulator), since a bearer token, an assertion or a shared secret must never travel in clear text;
    /// and the Pushgateway's URL, which `CLAWBACK_PUSHGATEWAY_URL` may have set.
    public func validateFinal() throws(ConfigurationErrors) {
        var errors = StoreDrivers.all.flatMap { $0.finalProblems(self) }
        if let url = metrics.pushgatewayURL, let problem = Self.pushgatewayURLProblem(url) {
            errors.append(ConfigurationError(field: "metrics.pushgateway_url", problem: problem))
        }
        guard errors.isEmpty else { throw ConfigurationErrors(errors: errors) }
    }

    /// The problem of `url` as `field`'s value, where it would carry a credential in clear text (nil: none).
    public static func transportProblem(field: String, _ url: String) -> ConfigurationError? {
        transportProblem(url).map { ConfigurationError(field: field, problem: $0) }
    }

    /// Why `url` may not carry credentials, or nil: https anywhere; plain http only to a loopback host.
    static func transportProblem(_ url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(), let host = components.host,
            !host.isEmpty
        else { return "\(url) is not an absolute URL" }
        switch scheme {
        case "https": return nil
        case "http":
            let loopback = host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
            return loopback
                ? nil
                : "plain http to \(host) would send the bearer token or shared secret in clear text: use https (plain http is for a simulator on this machine only)"
        default: return "\(scheme) is not http or https"
        }
    }

    /// Whether a libpq URI or key=value connection string names a password.
    static func carriesPassword(_ connection: String) -> Bool {
        if connection.hasPrefix("postgres://") || connection.hasPrefix("postgresql://") {
            if let components = URLComponents(string: connection), components.password != nil { return true }
            if let at = connection.firstIndex(of: "@"), connection[..<at].dropFirst(connection.hasPrefix("postgres://") ? 11 : 13).contains(":") {
                return true
            }
            return connection.range(of: "password=", options: .caseInsensitive) != nil
        }
        return connection.range(of: #"(^|\s)password\s*="#, options: [.regularExpression, .caseInsensitive]) != nil
    }
}
