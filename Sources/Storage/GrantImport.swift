public import Foundation
import Postgres
import Reconciliation

/// Loads grants from another system into `clawback.grants` (JSONL or CSV): every record validated (each
/// bad one reported with its line number and reason), nothing loaded if any is bad unless told to skip
/// them, COPY for speed, and idempotent (a transaction id already granted is left alone, so importing twice
/// adds nothing). Grants are inserted directly, not through `record_grant`: they are history, whatever age.
public enum GrantImport {
    public struct LineError: Sendable, Equatable, CustomStringConvertible {
        public let line: Int
        public let reason: String
        public var description: String { "line \(line): \(reason)" }
    }

    public struct Outcome: Sendable, Equatable {
        public var valid = 0
        public var inserted = 0
        public var alreadyPresent = 0
        public var invalid: [LineError] = []
    }

    /// The file formats `clawback grants import` reads.
    public enum Format: String, Sendable, CaseIterable {
        /// One JSON object per line, keys the grants table's column names.
        case jsonl
        /// RFC 4180 CSV with a header row of the grants table's column names.
        case csv

        /// The format a file name implies (.jsonl, .ndjson, .json; .csv), if any.
        public init?(path: String) {
            switch path.split(separator: ".").last?.lowercased() {
            case "jsonl", "ndjson", "json": self = .jsonl
            case "csv": self = .csv
            default: return nil
            }
        }
    }

    /// A file that cannot be opened or read, with the system's reason.
    public struct Unreadable: Error, Sendable, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    /// A file that cannot be imported at all (a CSV header naming unknown columns).
    public struct FileError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The grants table's columns a file may give. `store` is a registered store (the first, the App Store, by
    /// default); the fields one store's grants carry (its `StoreDescription.importRules.ownFields`: the App
    /// Store's app_account_token, storefront and receipt, Google Play's obfuscated_account_id) no other store's
    /// may, and a store whose grant's identity is its transaction id (a Google Play grant's purchase token)
    /// takes no other original_transaction_id.
    static let columns = [
        "transaction_id", "original_transaction_id", "bundle_id", "product_id", "environment", "player_id", "app_account_token", "quantity",
        "units_granted", "price_milli", "currency", "storefront", "purchased_at", "receipt", "store", "order_id", "obfuscated_account_id",
    ]
    static let required = ["transaction_id", "bundle_id", "product_id", "player_id", "units_granted", "purchased_at"]
    static let integerColumns: Set<String> = ["quantity", "units_granted", "price_milli"]

    /// A line's problems, as text for the report.
    struct Invalid: Error {
        let reason: String
    }

    /// A valid line as a COPY row, with its purchase date.
    struct Row {
        let values: [(any PostgresEncodable)?]
        let purchasedAt: Date
    }

    /// Validates one record's fields into a row, or says everything wrong with it.
    static func row(_ fields: [String: GrantRecordReader.Value]) -> Result<Row, Invalid> {
        var problems: [String] = []
        for key in fields.keys.sorted() where !columns.contains(key) { problems.append("unknown field \(key)") }
        func text(_ name: String) -> String? {
            guard let value = fields[name] else { return nil }
            if value.isNumber && !integerColumns.contains(name) {
                problems.append("\(name) must be a string (a JSON number can lose digits)")
                return nil
            }
            return value.text
        }
        func integer(_ name: String, minimum: Int64) -> Int64? {
            guard let value = fields[name] else { return nil }
            guard let number = Int64(value.text) else {
                problems.append("\(name) must be an integer, not \"\(value.text.prefix(40))\"")
                return nil
            }
            if number < minimum { problems.append("\(name) must be at least \(minimum)") }
            return number
        }
        let id = text("transaction_id")
        for name in required where fields[name] == nil || fields[name]?.text.isEmpty == true { problems.append("\(name) is missing") }
        let environment = text("environment") ?? "Production"
        if !["Production", "Sandbox"].contains(environment) { problems.append("environment must be Production or Sandbox") }
        let currency = text("currency")
        if let currency, !(currency.count == 3 && currency.allSatisfy { $0.isASCII && $0.isUppercase }) {
            problems.append("currency must be an ISO 4217 code like USD")
        }
        let storefront = text("storefront")
        if let storefront, !(storefront.count == 3 && storefront.allSatisfy { $0.isASCII && $0.isUppercase }) {
            problems.append("storefront must be an ISO 3166-1 alpha-3 code like USA")
        }
        let quantity = integer("quantity", minimum: 1)
        if let quantity, quantity > Int64(Int32.max) { problems.append("quantity is too large") }
        let units = integer("units_granted", minimum: 0)
        let price = integer("price_milli", minimum: 0)
        var token: UUID?
        if let tokenText = text("app_account_token") {
            token = UUID(uuidString: tokenText)
            if token == nil { problems.append("app_account_token is not a UUID") }
        }
        // Read once into the core's Store: the rest of the import follows its description, never its spelling.
        let storeText = text("store") ?? StoreCatalog.importDefault.rawValue
        if let store = StoreCatalog.description(named: storeText) {
            for other in StoreCatalog.descriptions where other.store != store.store {
                for name in other.importRules.ownFields where fields[name] != nil && !store.importRules.ownFields.contains(name) {
                    problems.append("\(name) is for store \(other.store.rawValue) only")
                }
            }
            if store.importRules.originalIsTransactionID, let original = fields["original_transaction_id"]?.text,
                original != fields["transaction_id"]?.text
            {
                problems.append("original_transaction_id of a \(storeText) grant must be its transaction_id, or left out")
            }
            if let rule = store.importRules.transactionIDPattern, let id = fields["transaction_id"]?.text,
                id.range(of: rule.pattern, options: .regularExpression) == nil
            {
                problems.append("transaction_id of a \(storeText) grant must be \(rule.naming)")
            }
        } else {
            problems.append("store must be " + StoreCatalog.descriptions.map(\.store.rawValue).joined(separator: " or "))
        }
        let orderID = text("order_id")
        if orderID?.isEmpty == true { problems.append("order_id is empty: leave it out where the store gave none") }
        let purchasedText = text("purchased_at")
        let purchased = purchasedText.flatMap(PostgresTimestamp.parse)
        if let purchasedText, !purchasedText.isEmpty, purchased == nil {
            problems.append("purchased_at is not an RFC 3339 timestamp with a time zone, like 2026-11-20T10:00:00Z")
        }
        guard problems.isEmpty, let id, let purchased else { return .failure(Invalid(reason: problems.joined(separator: "; "))) }
        return .success(
            Row(
                values: [
                    id, text("original_transaction_id") ?? id, text("bundle_id"), text("product_id"), environment, text("player_id"), token,
                    quantity.map { Int32($0) } ?? 1, units, price, currency, storefront, purchased, text("receipt"), storeText, orderID,
                    text("obfuscated_account_id"),
                ], purchasedAt: purchased))
    }

    /// Imports `data` in `format`: a first pass validates every record and finds the months it spans; when
    /// nothing is bad (or bad lines are skipped), the months' partitions are created under a short lock, and
    /// then one transaction COPYs the valid records into a table of its own and inserts the grants not yet
    /// present. One transaction, so that a transaction pooler (PgBouncer) keeps the table, its rows and the
    /// insert on one server connection, and the table goes with the commit (`ON COMMIT DROP`), leaving
    /// nothing on a pooled connection for the next client. Any bad record with `skipInvalid` false means
    /// nothing is loaded.
    public static func importData(_ data: Data, format: Format, skipInvalid: Bool, on connection: DatabaseConnection) throws -> Outcome {
        try importBytes(GrantFileBytes(copying: data), format: format, skipInvalid: skipInvalid, on: connection)
    }

    /// `importData` for the file at `path`, read in place however large (see `GrantFileBytes`); a file that
    /// cannot be opened or mapped throws `Unreadable`.
    public static func importFile(_ path: String, format: Format, skipInvalid: Bool, on connection: DatabaseConnection) throws -> Outcome {
        try importBytes(try GrantFileBytes(path: path), format: format, skipInvalid: skipInvalid, on: connection)
    }

    private static func importBytes(_ source: GrantFileBytes, format: Format, skipInvalid: Bool, on connection: DatabaseConnection) throws
        -> Outcome
    {
        func reader() throws -> GrantRecordReader {
            do {
                return try GrantRecordReader(source, format: format, columns: columns, required: required)
            } catch {
                throw FileError(description: error.description)
            }
        }
        var outcome = Outcome()
        var earliest: Date?
        var latest: Date?
        var validation = try reader()
        while let record = validation.next() {
            switch record {
            case .unreadable(let line, let reason):
                outcome.invalid.append(LineError(line: line, reason: reason))
            case .fields(let line, let fields):
                switch row(fields) {
                case .failure(let invalid):
                    outcome.invalid.append(LineError(line: line, reason: invalid.reason))
                case .success(let row):
                    outcome.valid += 1
                    earliest = min(earliest ?? row.purchasedAt, row.purchasedAt)
                    latest = max(latest ?? row.purchasedAt, row.purchasedAt)
                }
            }
        }
        guard outcome.invalid.isEmpty || skipInvalid, let earliest, let latest else { return outcome }
        try ShortLock().run("creating grant partitions for the import", on: connection) { connection in
            _ = try connection.query("SELECT clawback.ensure_grant_partitions(\(earliest), \(latest)::timestamptz + interval '1 second')")
        }
        let columnList = columns.joined(separator: ", ")
        var records = try reader()
        outcome.inserted = try connection.withTransaction { connection in
            try connection.execute("CREATE TEMP TABLE clawback_grants_import (LIKE clawback.grants INCLUDING DEFAULTS) ON COMMIT DROP")
            _ = try connection.copyIn(table: "clawback_grants_import", columns: columns) { writer in
                while let record = records.next() {
                    if case .fields(_, let fields) = record, case .success(let row) = row(fields) { try writer.appendRow(row.values) }
                }
            }
            // The grant path's record_grant takes ROW EXCLUSIVE first, so this waits for the grants being recorded
            // to commit (and holds new ones back), and the existence check sees each of them: an id the game is
            // granting right now is never imported again with another purchase date.
            try connection.execute("LOCK TABLE clawback.grants IN SHARE ROW EXCLUSIVE MODE")
            // The second pass read what the first validated only if the file did not change in between.
            guard source.isUnchanged else {
                throw Unreadable(reason: "the file changed while it was being imported; nothing was imported")
            }
            return try connection.execute(
                """
                INSERT INTO clawback.grants (\(unescaped: columnList))
                SELECT DISTINCT ON (i.transaction_id) \(unescaped: columns.map { "i." + $0 }.joined(separator: ", "))
                FROM clawback_grants_import i
                WHERE NOT EXISTS (SELECT 1 FROM clawback.grants g WHERE g.transaction_id = i.transaction_id)
                ORDER BY i.transaction_id
                ON CONFLICT DO NOTHING
                """)
        }
        outcome.alreadyPresent = outcome.valid - outcome.inserted
        // PostgreSQL's advice after a bulk load: fresh statistics, so that the next run's page query is
        // planned for the rows now there (see GrantPartitions.refreshStaleStatistics).
        if outcome.inserted > 0 { try connection.execute("ANALYZE clawback.grants") }
        return outcome
    }

    /// `importData` for JSONL.
    public static func importJSONLines(_ data: Data, skipInvalid: Bool, on connection: DatabaseConnection) throws -> Outcome {
        try importData(data, format: .jsonl, skipInvalid: skipInvalid, on: connection)
    }
}
