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

        /// Another query's text and binds, its placeholders renumbered after this one's: composes a
        /// filter or a common table expression into a larger statement without giving up bind parameters.
        public mutating func appendInterpolation(fragment: PostgresQuery) {
            sql += fragment.renumbered(offset: binds.count)
            binds += fragment.binds
        }
    }

    /// The SQL text with every placeholder `$n` shifted to `$(n + offset)`. Quoted literals and identifiers
    /// are copied as they are; dollar-quoted bodies do not occur in composed fragments.
    func renumbered(offset: Int) -> String {
        guard offset > 0, !binds.isEmpty else { return sql }
        var result = ""
        result.reserveCapacity(sql.utf8.count + binds.count)
        // Scalar by scalar: a quote followed by a combining mark is one Character that equals no quote.
        var quote: Unicode.Scalar?
        var iterator = sql.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = iterator.next()
        while let character = pending {
            pending = iterator.next()
            if let open = quote {
                result.unicodeScalars.append(character)
                if character == open { quote = nil }
                continue
            }
            if character == "'" || character == "\"" {
                quote = character
                result.unicodeScalars.append(character)
                continue
            }
            guard character == "$", let next = pending, ("0"..."9").contains(next) else {
                result.unicodeScalars.append(character)
                continue
            }
            var digits = ""
            while let digit = pending, ("0"..."9").contains(digit) {
                digits.unicodeScalars.append(digit)
                pending = iterator.next()
            }
            result += "$\((Int(digits) ?? 0) + offset)"
        }
        return result
    }

    /// Quotes an identifier as PostgreSQL does: wrapped in double quotes, inner quotes doubled.
    public static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingDoubleQuotes() + "\""
    }
}

extension String {
    /// Scalar by scalar: `"` followed by a combining mark is one Character, yet PostgreSQL sees the quote.
    fileprivate func replacingDoubleQuotes() -> String {
        var result = String.UnicodeScalarView()
        for scalar in unicodeScalars {
            if scalar == "\"" { result.append(contentsOf: "\"\"".unicodeScalars) } else { result.append(scalar) }
        }
        return String(result)
    }
}
