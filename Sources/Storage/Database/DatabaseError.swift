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

    /// One of clawback's own refusals (SQLSTATE class CB, raised by its functions and triggers).
    public var isClawbackRule: Bool { sqlState?.hasPrefix("CB") == true }

    public var description: String {
        guard case .permissionDenied(let privilege, let object) = kind else { return text }
        let needed = [privilege, object.map { "on \($0)" }].compactMap { $0 }.joined(separator: " ")
        return "the database role clawback connects as lacks a privilege"
            + (needed.isEmpty ? "" : " (it needs \(needed))") + ": \(text); grant it, or connect as the role `clawback migrate` ran as"
    }

    private static func kind(of error: PostgresError) -> Kind {
        if error.code == .connectionFailed { return .unreachable }
        if error.code == .connectionBroken || error.code == .timedOut { return .interrupted }
        guard let sqlState = error.sqlState else { return .refused }
        if sqlState == "42501" { return permission(error) }
        let transient = ["08", "53", "57P"].contains { sqlState.hasPrefix($0) } || ["57014", "40001", "40P01", "55P03"].contains(sqlState)
        return transient ? .interrupted : .refused
    }

    /// The privilege and object a 42501 is about. The server names the object ("permission denied for table
    /// grants", "… for schema clawback", "must be owner of table grants"); the privilege follows from the
    /// object's kind and the statement's verb.
    private static func permission(_ error: PostgresError) -> Kind {
        let message = error.message
        var object: String?
        var kindOfObject: String?
        for prefix in ["permission denied for ", "must be owner of "] {
            guard let range = message.range(of: prefix) else { continue }
            let words = message[range.upperBound...].split(separator: " ", maxSplits: 1)
            if words.count == 2 {
                kindOfObject = String(words[0])
                object = "\(words[0]) \(words[1])"
            }
            if prefix == "must be owner of " { return .permissionDenied(privilege: "ownership", object: object) }
        }
        let privilege: String? =
            switch kindOfObject {
            case "schema": "USAGE"
            case "function", "procedure": "EXECUTE"
            case "sequence": "USAGE"
            case "table", "relation", "view", "materialized": verb(error.query)
            default: nil
            }
        return .permissionDenied(privilege: privilege, object: object)
    }

    /// The privilege a statement's verb needs on a table (the first of them in the SQL: a `WITH … INSERT`
    /// needs INSERT).
    private static func verb(_ sql: String?) -> String? {
        guard let sql else { return nil }
        let words = sql.uppercased().split { !$0.isLetter }
        return words.first { ["INSERT", "UPDATE", "DELETE", "TRUNCATE"].contains($0) }.map(String.init)
            ?? (words.contains("SELECT") ? "SELECT" : nil)
    }
}
