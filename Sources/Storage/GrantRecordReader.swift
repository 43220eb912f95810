import Foundation

/// Reads the records of a grants file, each as field name -> text with its line number: JSONL (one JSON
/// object per line) or CSV (RFC 4180 with a header row of column names; LF or CRLF; quoted fields may hold
/// commas, quotes and line breaks; a UTF-8 byte order mark is skipped). A record that cannot be read is
/// returned as a problem for its line, and reading goes on with the next.
struct GrantRecordReader {
    /// A field's text; `isNumber` when JSON gave it as a number rather than a string.
    struct Value: Equatable {
        var text: String
        var isNumber = false
    }

    enum Record {
        case fields(line: Int, [String: Value])
        case unreadable(line: Int, reason: String)
    }

    struct HeaderError: Error, CustomStringConvertible {
        let description: String
    }

    private let decoder = JSONDecoder()
    /// Keeps `bytes` valid.
    private let source: GrantFileBytes
    private let bytes: UnsafeBufferPointer<UInt8>
    private let format: GrantImport.Format
    private var index = 0
    private var line = 1
    private var header: [String] = []

    init(_ source: GrantFileBytes, format: GrantImport.Format, columns: [String], required: [String]) throws(HeaderError) {
        self.source = source
        bytes = source.buffer
        self.format = format
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        guard format == .csv else { return }
        guard case .fields(_, let names)? = nextCSV(named: false) else { throw HeaderError(description: "line 1: no header row of column names") }
        header = (0..<names.count).map { names[String($0)]?.text ?? "" }
        let unknown = header.filter { !columns.contains($0) }
        guard unknown.isEmpty else {
            throw HeaderError(
                description: "line 1: unknown column(s) \(unknown.joined(separator: ", ")); the columns are \(columns.joined(separator: ", "))")
        }
        let missing = required.filter { !header.contains($0) }
        guard missing.isEmpty else { throw HeaderError(description: "line 1: missing column(s) \(missing.joined(separator: ", "))") }
        let duplicated = Set(header.filter { name in header.filter { $0 == name }.count > 1 })
        guard duplicated.isEmpty else {
            throw HeaderError(description: "line 1: column(s) given twice: \(duplicated.sorted().joined(separator: ", "))")
        }
    }

    mutating func next() -> Record? {
        switch format {
        case .jsonl: nextJSON()
        case .csv: nextCSV(named: true)
        }
    }

    private mutating func nextJSON() -> Record? {
        while index < bytes.count {
            let start = index
            let number = line
            while index < bytes.count && bytes[index] != 0x0A { index += 1 }
            var end = index
            if index < bytes.count { index += 1 }
            line += 1
            if end > start && bytes[end - 1] == 0x0D { end -= 1 }
            let slice = bytes[start..<end]
            if slice.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            guard String(validating: slice, as: UTF8.self) != nil else { return .unreadable(line: number, reason: "not UTF-8") }
            guard let object = try? decoder.decode([String: JSONScalar].self, from: Data(slice)) else {
                return .unreadable(line: number, reason: "not a JSON object of strings and numbers")
            }
            var fields: [String: Value] = [:]
            for (key, value) in object {
                switch value {
                case .null: continue
                case .text(let text): fields[key] = Value(text: text)
                case .number(let text): fields[key] = Value(text: text, isNumber: true)
                case .other: return .unreadable(line: number, reason: "\(key) must be a string or a number")
                }
            }
            return .fields(line: number, fields)
        }
        return nil
    }

    /// One CSV record; `named` false returns the fields keyed by position (for the header).
    private mutating func nextCSV(named: Bool) -> Record? {
        // Blank lines between records are skipped.
        while index < bytes.count && (bytes[index] == 0x0A || bytes[index] == 0x0D) {
            if bytes[index] == 0x0A { line += 1 }
            index += 1
        }
        guard index < bytes.count else { return nil }
        let number = line
        var values: [[UInt8]] = []
        var field: [UInt8] = []
        var problem: String?
        while true {
            if index < bytes.count && bytes[index] == UInt8(ascii: "\"") && field.isEmpty {
                index += 1
                var closed = false
                while index < bytes.count {
                    let byte = bytes[index]
                    index += 1
                    if byte == UInt8(ascii: "\"") {
                        if index < bytes.count && bytes[index] == UInt8(ascii: "\"") {
                            field.append(byte)
                            index += 1
                            continue
                        }
                        closed = true
                        break
                    }
                    if byte == 0x0A { line += 1 }
                    field.append(byte)
                }
                if !closed { problem = problem ?? "a quoted field is not closed" }
                if index < bytes.count && ![UInt8(ascii: ","), 0x0A, 0x0D].contains(bytes[index]) {
                    problem = problem ?? "text after a closing quote"
                }
            }
            while index < bytes.count && ![UInt8(ascii: ","), 0x0A, 0x0D].contains(bytes[index]) {
                if bytes[index] == UInt8(ascii: "\"") { problem = problem ?? "a quote inside an unquoted field" }
                field.append(bytes[index])
                index += 1
            }
            values.append(field)
            field = []
            if index < bytes.count && bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if index < bytes.count && bytes[index] == 0x0D { index += 1 }
            if index < bytes.count && bytes[index] == 0x0A { index += 1 }
            line += 1
            break
        }
        if let problem { return .unreadable(line: number, reason: problem) }
        var texts: [String] = []
        for value in values {
            guard let text = String(validating: value, as: UTF8.self) else { return .unreadable(line: number, reason: "not UTF-8") }
            texts.append(text)
        }
        guard named else {
            return .fields(line: number, Dictionary(uniqueKeysWithValues: texts.enumerated().map { (String($0), Value(text: $1)) }))
        }
        guard texts.count == header.count else {
            return .unreadable(line: number, reason: "\(texts.count) fields where the header has \(header.count)")
        }
        var fields: [String: Value] = [:]
        for (name, text) in zip(header, texts) where !text.isEmpty { fields[name] = Value(text: text) }
        return .fields(line: number, fields)
    }
}

/// A JSON value as an import line may hold it: text, a number (kept as written), null, or something else.
private enum JSONScalar: Decodable {
    case text(String)
    case number(String)
    case null
    case other

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let text = try? container.decode(String.self) {
            self = .text(text)
        } else if (try? container.decode(Bool.self)) != nil {
            self = .other
        } else if let integer = try? container.decode(Int64.self) {
            self = .number(String(integer))
        } else if let number = try? container.decode(Double.self) {
            self = .number(String(number))
        } else {
            self = .other
        }
    }
}
