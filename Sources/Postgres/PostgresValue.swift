public import Foundation

/// A Swift value that can be sent to PostgreSQL as a bind parameter (text format).
public protocol PostgresEncodable: Sendable {
    /// The value in PostgreSQL's text input syntax for its type.
    var postgresText: String { get }
}

/// A Swift value that can be read from a column in PostgreSQL's text output format.
/// The connection sets `DateStyle=ISO` and `TimeZone=UTC`, so the formats are fixed.
public protocol PostgresDecodable: Sendable {
    /// Parses the column's text; returns nil when the text is not a valid value of this type.
    init?(postgresText: String)
}

extension String: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { self }
    public init?(postgresText: String) { self = postgresText }
}

extension Int64: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    public init?(postgresText: String) { self.init(postgresText) }
}

extension Int32: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    public init?(postgresText: String) { self.init(postgresText) }
}

extension Int: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    public init?(postgresText: String) { self.init(postgresText) }
}

extension Double: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    public init?(postgresText: String) { self.init(postgresText) }
}

extension Bool: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { self ? "true" : "false" }
    public init?(postgresText: String) {
        switch postgresText {
        case "t", "true": self = true
        case "f", "false": self = false
        default: return nil
        }
    }
}

extension UUID: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { uuidString.lowercased() }
    public init?(postgresText: String) { self.init(uuidString: postgresText) }
}

extension Date: PostgresEncodable, PostgresDecodable {
    /// RFC 3339 in UTC with microseconds, PostgreSQL's own precision.
    public var postgresText: String { PostgresTimestamp.format(self) }
    public init?(postgresText: String) {
        guard let date = PostgresTimestamp.parse(postgresText) else { return nil }
        self = date
    }
}

/// `text[]` and friends, in PostgreSQL's array literal syntax with every element quoted.
extension Array: PostgresEncodable where Element == String {
    /// `{"a","b \"c\""}`, built on UTF-8 bytes (a page's ids are encoded for every page a run reads).
    public var postgresText: String {
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        bytes.reserveCapacity(reduce(2) { $0 + $1.utf8.count + 3 })
        for (index, element) in enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "\""))
            for byte in element.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
                bytes.append(byte)
            }
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Array: PostgresDecodable where Element == String {
    /// Parses a one-dimensional array of text (`{a,"b c",NULL}`); a NULL element is refused, because a
    /// `[String]` cannot represent it.
    public init?(postgresText: String) {
        var scalars = postgresText.unicodeScalars[...]
        guard scalars.first == "{", scalars.last == "}" else { return nil }
        scalars = scalars.dropFirst().dropLast()
        var elements: [String] = []
        guard !scalars.isEmpty else {
            self = []
            return
        }
        var current = String.UnicodeScalarView()
        var quoted = false
        var wasQuoted = false
        var iterator = scalars.makeIterator()
        while let scalar = iterator.next() {
            if quoted {
                if scalar == "\\" {
                    guard let next = iterator.next() else { return nil }
                    current.append(next)
                } else if scalar == "\"" {
                    quoted = false
                } else {
                    current.append(scalar)
                }
            } else if scalar == "\"" {
                quoted = true
                wasQuoted = true
            } else if scalar == "," {
                let element = String(current)
                if !wasQuoted && element == "NULL" { return nil }
                elements.append(element)
                current = String.UnicodeScalarView()
                wasQuoted = false
            } else {
                current.append(scalar)
            }
        }
        guard !quoted else { return nil }
        let last = String(current)
        if !wasQuoted && last == "NULL" { return nil }
        elements.append(last)
        self = elements
    }
}
