/// One row, copied out of libpq: it stays valid after the result that produced it is cleared.
public struct PostgresRow: Sendable {
    /// Column names, shared by all rows of one result.
    public let columns: PostgresColumns
    /// Text values; `nil` is SQL NULL (distinct from the empty string).
    public let values: [String?]

    // The two decoders are inlinable so that they are specialized where they are called: generic and
    // unspecialized, each call looked up its type's metadata at run time (a tenth of streaming a window).

    /// Decodes column `index`; throws when the value is NULL or not a valid `T`.
    @inlinable
    public func decode<T: PostgresDecodable>(_ type: T.Type, at index: Int) throws(PostgresError) -> T {
        guard let text = try text(at: index) else { throw decodingError("is NULL, expected \(T.self)", at: index) }
        guard let value = T(postgresText: text) else { throw decodingError("is not a valid \(T.self)", at: index) }
        return value
    }

    /// Decodes column `index`, with SQL NULL as `nil`.
    @inlinable
    public func decode<T: PostgresDecodable>(_ type: T?.Type, at index: Int) throws(PostgresError) -> T? {
        guard let text = try text(at: index) else { return nil }
        guard let value = T(postgresText: text) else { throw decodingError("is not a valid \(T.self)", at: index) }
        return value
    }

    /// Decodes column `index` as a stored enumeration: its raw value. A value this binary does not know is a
    /// decoding error naming the column and the value (an enumeration's name, never personal data), not a
    /// default: a newer clawback's value must stop an older one, not be read as something else.
    public func decode<T: RawRepresentable>(_ type: T.Type, at index: Int) throws(PostgresError) -> T where T.RawValue == String {
        guard let text = try text(at: index) else { throw decodingError("is NULL, expected \(T.self)", at: index) }
        return try enumeration(T.self, text, at: index)
    }

    /// Decodes column `index` as a stored enumeration, with SQL NULL as `nil`.
    public func decode<T: RawRepresentable>(_ type: T?.Type, at index: Int) throws(PostgresError) -> T? where T.RawValue == String {
        guard let text = try text(at: index) else { return nil }
        return try enumeration(T.self, text, at: index)
    }

    /// Decodes the column named `name` as a stored enumeration.
    public func decode<T: RawRepresentable>(_ type: T.Type, column name: String) throws(PostgresError) -> T where T.RawValue == String {
        try decode(type, at: try index(of: name))
    }

    /// Decodes the column named `name` as a stored enumeration, with SQL NULL as `nil`.
    public func decode<T: RawRepresentable>(_ type: T?.Type, column name: String) throws(PostgresError) -> T? where T.RawValue == String {
        try decode(type, at: try index(of: name))
    }

    private func enumeration<T: RawRepresentable>(_: T.Type, _ text: String, at index: Int) throws(PostgresError) -> T
    where T.RawValue == String {
        guard let value = T(rawValue: text) else {
            throw decodingError("holds \(T.self) '\(text)', which this version of clawback does not know", at: index)
        }
        return value
    }

    /// The text of column `index`, nil for SQL NULL.
    @usableFromInline
    func text(at index: Int) throws(PostgresError) -> String? {
        guard values.indices.contains(index) else {
            throw decodingError("does not exist (the row has \(values.count) columns)", at: index)
        }
        return values[index]
    }

    /// Decodes the column named `name`; throws when it is missing, NULL or not a valid `T`.
    public func decode<T: PostgresDecodable>(_ type: T.Type, column name: String) throws(PostgresError) -> T {
        try decode(type, at: try index(of: name))
    }

    /// Decodes the column named `name`, with SQL NULL as `nil`.
    public func decode<T: PostgresDecodable>(_ type: T?.Type, column name: String) throws(PostgresError) -> T? {
        try decode(type, at: try index(of: name))
    }

    private func index(of name: String) throws(PostgresError) -> Int {
        guard let index = columns.index(of: name) else {
            throw PostgresError(.decoding, operation: "decode", message: "no column named \"\(name)\" in the result")
        }
        return index
    }

    @usableFromInline
    func decodingError(_ problem: String, at index: Int) -> PostgresError {
        let name = columns.names.indices.contains(index) ? "\"\(columns.names[index])\"" : "#\(index)"
        // The value itself is not quoted: it may be personal data.
        return PostgresError(.decoding, operation: "decode", message: "column \(name) \(problem)")
    }
}

/// The column names of a result and a name-to-index map, built once per result.
public final class PostgresColumns: Sendable {
    public let names: [String]
    private let indexByName: [String: Int]

    init(_ names: [String]) {
        self.names = names
        var map: [String: Int] = [:]
        for (index, name) in names.enumerated() where map[name] == nil { map[name] = index }
        indexByName = map
    }

    public func index(of name: String) -> Int? { indexByName[name] }
}

/// The complete result of a statement: its rows and, for DML, how many rows it touched.
public struct PostgresResult: Sendable {
    public let rows: [PostgresRow]
    /// Rows affected by INSERT/UPDATE/DELETE (0 for other statements).
    public let affectedRows: Int
    /// The command tag ("INSERT 0 1", "SELECT 3", "COMMIT"...).
    public let commandTag: String

    /// The single row, or nil for an empty result.
    public var first: PostgresRow? { rows.first }
}
