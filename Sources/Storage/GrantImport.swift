public import Foundation
public import Postgres

/// Loads grants from another system into `clawback.grants`: every line validated (each bad one reported
/// with its number and reason), nothing loaded if any line is bad unless told to skip them, COPY for speed,
/// and idempotent (a transaction id already granted is left alone, so importing twice adds nothing).
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

    struct Line: Decodable {
        let transaction_id: String?
        let original_transaction_id: String?
        let bundle_id: String?
        let product_id: String?
        let environment: String?
        let player_id: String?
        let app_account_token: String?
        let quantity: Int32?
        let units_granted: Int64?
        let price_milli: Int64?
        let currency: String?
        let storefront: String?
        let purchased_at: String?
        let receipt: String?
    }

    static let columns = [
        "transaction_id", "original_transaction_id", "bundle_id", "product_id", "environment", "player_id", "app_account_token", "quantity",
        "units_granted", "price_milli", "currency", "storefront", "purchased_at", "receipt",
    ]

    /// Validates one JSONL line into a row, or says why not.
    /// A line's problems, as text for the report.
    struct Invalid: Error {
        let reason: String
    }

    static func row(_ text: Substring, decoder: JSONDecoder) -> Result<[(any PostgresEncodable)?], Invalid> {
        guard let line = try? decoder.decode(Line.self, from: Data(text.utf8)) else {
            return .failure(Invalid(reason: "not a JSON object of grant fields"))
        }
        var problems: [String] = []
        for (value, name) in [(line.transaction_id, "transaction_id"), (line.bundle_id, "bundle_id"), (line.product_id, "product_id"),
            (line.player_id, "player_id"), (line.purchased_at, "purchased_at")] where value?.isEmpty ?? true {
            problems.append("\(name) is missing")
        }
        let environment = line.environment ?? "Production"
        if !["Production", "Sandbox"].contains(environment) { problems.append("environment must be Production or Sandbox") }
        if let currency = line.currency, !(currency.count == 3 && currency.allSatisfy { $0.isASCII && $0.isUppercase }) {
            problems.append("currency must be an ISO 4217 code like USD")
        }
        if let storefront = line.storefront, !(storefront.count == 3 && storefront.allSatisfy { $0.isASCII && $0.isUppercase }) {
            problems.append("storefront must be an ISO 3166-1 alpha-3 code like USA")
        }
        if let quantity = line.quantity, quantity < 1 { problems.append("quantity must be at least 1") }
        if line.units_granted == nil { problems.append("units_granted is missing") } else if (line.units_granted ?? 0) < 0 {
            problems.append("units_granted must not be negative")
        }
        if let price = line.price_milli, price < 0 { problems.append("price_milli must not be negative") }
        var token: UUID?
        if let text = line.app_account_token {
            token = UUID(uuidString: text)
            if token == nil { problems.append("app_account_token is not a UUID") }
        }
        let purchased = line.purchased_at.flatMap(PostgresTimestamp.parse) ?? line.purchased_at.flatMap { text -> Date? in
            let formatter = ISO8601DateFormatter()
            return formatter.date(from: text)
        }
        if line.purchased_at != nil && purchased == nil { problems.append("purchased_at is not an RFC 3339 timestamp") }
        guard problems.isEmpty, let id = line.transaction_id, let purchased else {
            return .failure(Invalid(reason: problems.joined(separator: "; ")))
        }
        return .success([
            id, line.original_transaction_id ?? id, line.bundle_id, line.product_id, environment, line.player_id, token,
            line.quantity ?? 1, line.units_granted, line.price_milli, line.currency, line.storefront, purchased, line.receipt,
        ])
    }

    /// Imports JSONL `data`. With `skipInvalid` false, any bad line means nothing is loaded.
    public static func importJSONLines(_ data: Data, skipInvalid: Bool, on connection: PostgresConnection) throws -> Outcome {
        var outcome = Outcome()
        var rows: [[(any PostgresEncodable)?]] = []
        let decoder = JSONDecoder()
        var number = 0
        for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            guard let text = String(bytes: line, encoding: .utf8) else {
                outcome.invalid.append(LineError(line: number, reason: "not UTF-8"))
                continue
            }
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            switch row(Substring(trimmed), decoder: decoder) {
            case .success(let row): rows.append(row)
            case .failure(let invalid): outcome.invalid.append(LineError(line: number, reason: invalid.reason))
            }
        }
        outcome.valid = rows.count
        guard outcome.invalid.isEmpty || skipInvalid else { return outcome }
        try connection.withTransaction { connection in
            try connection.executeScript(unsafeSQL: """
                CREATE TEMP TABLE IF NOT EXISTS grants_import (LIKE clawback.grants INCLUDING DEFAULTS) ON COMMIT DELETE ROWS;
                """)
            try connection.copyIn(table: "grants_import", columns: columns) { writer in
                for row in rows { try writer.appendRow(row) }
            }
            try connection.query(
                """
                SELECT clawback.ensure_grant_partitions(min(purchased_at), max(purchased_at) + interval '1 month')
                FROM grants_import HAVING count(*) > 0
                """)
            let columnList = columns.joined(separator: ", ")
            outcome.inserted = try connection.execute(
                """
                INSERT INTO clawback.grants (\(unescaped: columnList))
                SELECT DISTINCT ON (i.transaction_id) \(unescaped: columns.map { "i." + $0 }.joined(separator: ", "))
                FROM grants_import i
                WHERE NOT EXISTS (SELECT 1 FROM clawback.grants g WHERE g.transaction_id = i.transaction_id)
                ORDER BY i.transaction_id
                ON CONFLICT DO NOTHING
                """)
        }
        outcome.alreadyPresent = outcome.valid - outcome.inserted
        return outcome
    }
}
