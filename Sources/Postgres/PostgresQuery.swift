/// A SQL statement whose interpolated values become bind parameters (`$1`, `$2`, …), never SQL text.
///
///     let query: PostgresQuery = "SELECT * FROM clawback.grants WHERE player_id = \(playerID)"
///     // sql: "SELECT * FROM clawback.grants WHERE player_id = $1", binds: [playerID]
///
/// Identifiers (a partition's name) go through `\(identifier:)`, which quotes them. Raw SQL text can be
/// spliced in only through the loudly named `\(unescaped:)`, meant for trusted constants.
public struct PostgresQuery: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The SQL text with `$n` placeholders.
    public private(set) var sql: String
    /// The bind values in text format; `nil` is SQL NULL.
    public private(set) var binds: [String?]

    public init(stringLiteral value: String) {
        sql = value
        binds = []
    }

    public init(stringInterpolation: StringInterpolation) {
        sql = stringInterpolation.sql
        binds = stringInterpolation.binds
    }

    /// The SQL text only: binds are never printed, they may be personal data.
    public var description: String { sql }

    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        var sql = ""
        var binds: [String?] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            binds.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) { sql += literal }

        /// A bind parameter.
        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            binds.append(value.postgresText)
            sql += "$\(binds.count)"
        }

        /// A bind parameter that may be NULL.
        public mutating func appendInterpolation(_ value: (some PostgresEncodable)?) {
            binds.append(value?.postgresText)
            sql += "$\(binds.count)"
        }

        /// A quoted SQL identifier (`"name"`), for names that cannot be bind parameters.
        public mutating func appendInterpolation(identifier: String) {
            sql += PostgresQuery.quoteIdentifier(identifier)
        }

        /// Raw SQL text. Only for trusted constants of this program, never for input.
        public mutating func appendInterpolation(unescaped text: String) { sql += text }
    }

    /// Quotes an identifier as PostgreSQL does: wrapped in double quotes, inner quotes doubled.
    public static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingDoubleQuotes() + "\""
    }
}

extension String {
    fileprivate func replacingDoubleQuotes() -> String {
        var result = ""
        result.reserveCapacity(utf8.count + 2)
        for character in self {
            if character == "\"" { result += "\"\"" } else { result.append(character) }
        }
        return result
    }
}
