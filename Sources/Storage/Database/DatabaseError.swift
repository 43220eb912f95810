import Foundation
package import Postgres

/// A failure of the database, classified once at Storage's edge: whether a later try may succeed, whether the
/// role clawback connects as lacks a privilege (the operator's to grant), or whether the server refused a
/// statement that would fail the same way again. Its description is the server's own words (never DETAIL,
/// which can quote a player's row).
public struct DatabaseError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The connection could not be opened: the server is down, unreachable or refused the login.
        case unreachable
        /// The connection was lost, the server is overloaded or shutting down, a statement timed out, a lock
        /// wait was given up or a transaction could not be serialized: a later try may succeed.
        case interrupted
        /// SQLSTATE 42501: the role lacks a privilege (`privilege` on `object`, as far as the server says).
        case permissionDenied(privilege: String?, object: String?)
        /// Any other refusal (a constraint, one of clawback's own `CB` errors, a row this version cannot read):
        /// the same statement would fail again.
        case refused
    }

    public let kind: Kind
    /// The server's SQLSTATE, when the server answered.
    public let sqlState: String?
    /// What the server (or libpq) said, without its DETAIL.
    public let message: String
    private let text: String

    package init(_ error: PostgresError) {
        sqlState = error.sqlState
        message = error.message
        text = error.description
        kind = Self.kind(of: error)
    }

    /// The database failure inside `error`, if it is one: Storage's operations throw what the connection
    /// threw; a transaction whose rollback failed too is classified by its body's failure.
    public init?(_ error: any Error) {
        switch error {
        case let error as DatabaseError: self = error
        case let error as PostgresError: self.init(error)
        case let error as PostgresTransactionError:
            if let body = DatabaseError(error.bodyError) { self = body } else { self.init(error.rollbackError) }
        default: return nil
        }
    }

    /// A failure a studio's hook function can cause for one call while the database is well: a refusal (its
    /// RAISE, a bad cast, a division by zero, a missing relation it reads) or the statement timeout it ran
    /// into. Not a lost connection, a server short of space or connections, a serialization failure or a
    /// missing privilege, which are the database's and end a job as such.
    public var isHookFailure: Bool {
        switch kind {
        case .refused: true
        case .interrupted: sqlState == "57014"
        case .unreachable, .permissionDenied: false
        }
    }

    /// One of clawback's own refusals (SQLSTATE class CB, raised by its functions and triggers).
    public var isClawbackRule: Bool { sqlState?.hasPrefix("CB") == true }

    public var description: String {
        guard case .permissionDenied(let privilege, let object) = kind else { return text }
        let needed: String
        switch (privilege, object) {
        case (let privilege?, let object?): needed = " (it needs \(privilege) on \(object))"
        case (nil, let object?): needed = " (on \(object))"
        case (let privilege?, nil): needed = " (it needs \(privilege))"
        case (nil, nil): needed = ""
        }
        return
            "the database role clawback connects as lacks a privilege\(needed): \(text); grant it, or connect as the role `clawback migrate` ran as"
    }

    /// The error a transaction's body threw, when `error` is a transaction whose rollback failed too: what
    /// the body said (a schema refused, a migration changed) decides the exit, as it would have without the
    /// failed rollback; any other error as it is.
    public static func transactionBody(of error: any Error) -> any Error {
        (error as? PostgresTransactionError)?.bodyError ?? error
    }

    private static func kind(of error: PostgresError) -> Kind {
        // A login refused for the CONNECT privilege is the operator's to grant (77), not an outage to retry.
        if error.code == .connectionFailed { return error.sqlState == "42501" ? permission(error) : .unreachable }
        if error.code == .connectionBroken || error.code == .timedOut { return .interrupted }
        guard let sqlState = error.sqlState else { return .refused }
        if sqlState == "42501" { return permission(error) }
        let transient = ["08", "53", "57P"].contains { sqlState.hasPrefix($0) } || ["57014", "40001", "40P01", "55P03"].contains(sqlState)
        return transient ? .interrupted : .refused
    }

    /// The privilege and object a 42501 is about. The server names the object ("permission denied for table
    /// grants", "… for schema clawback", "… for column x of relation grants", "must be owner of table
    /// grants"); the privilege follows from the object's kind (a schema's USAGE, a function's EXECUTE) or,
    /// for a table or a column, from the statement's verb: a guess only where the statement reads one table
    /// and writes another (`INSERT … SELECT`), which the message then says.
    private static func permission(_ error: PostgresError) -> Kind {
        let message = error.message
        if let range = message.range(of: "must be owner of ") {
            return .permissionDenied(privilege: "ownership", object: String(message[range.upperBound...]))
        }
        guard let range = message.range(of: "permission denied for ") else { return .permissionDenied(privilege: nil, object: nil) }
        // The object alone: a refused login's message goes on with the server's DETAIL on lines of its own.
        let object = String(message[range.upperBound...].prefix { $0 != "\n" })
        let privilege: String? =
            switch object.split(separator: " ").first {
            case "schema", "sequence", "type", "domain", "language": "USAGE"
            case "function", "procedure", "routine": "EXECUTE"
            // A refused login is the CONNECT privilege; a statement's (CREATE SCHEMA) is another, which the verb names.
            case "database": error.code == .connectionFailed ? "CONNECT" : nil
            case "table", "relation", "view", "materialized", "column": verb(error.query)
            default: nil
            }
        return .permissionDenied(privilege: privilege, object: object)
    }

    /// The privilege a statement's verb needs on a table: its first writing verb (a `WITH … INSERT` needs
    /// INSERT), else SELECT; "probably" when the writing statement also reads (a SELECT, a JOIN, UPDATE's
    /// FROM, DELETE's USING), whose SELECT may be the one refused.
    private static func verb(_ sql: String?) -> String? {
        guard let sql else { return nil }
        let words = sql.uppercased().split { !$0.isLetter }
        guard let writing = words.first(where: { ["INSERT", "UPDATE", "DELETE", "TRUNCATE"].contains($0) }) else {
            return words.contains("SELECT") ? "SELECT" : nil
        }
        let reads =
            words.contains("SELECT") || words.contains("JOIN") || (writing == "UPDATE" && words.contains("FROM"))
            || (writing == "DELETE" && words.contains("USING"))
        return reads ? "probably \(writing)" : String(writing)
    }
}
