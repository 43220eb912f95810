import Foundation

/// A strict RFC 4180 reader for the tests: every record ends with CRLF, a quote inside a quoted field is
/// doubled, a bare quote in an unquoted field or a lone CR or LF is an error, every record has as many
/// fields as the header. Stricter than spreadsheets, so a report it accepts opens anywhere.
public struct StrictCSV {
    public struct Malformed: Error, CustomStringConvertible {
        public let description: String
    }

    public let header: [String]
    public let records: [[String]]

    public init(_ bytes: [UInt8], expectByteOrderMark: Bool = false) throws {
        var bytes = bytes[...]
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        if expectByteOrderMark {
            guard bytes.starts(with: bom) else { throw Malformed(description: "no byte order mark") }
            bytes = bytes.dropFirst(3)
        } else if bytes.starts(with: bom) {
            throw Malformed(description: "unexpected byte order mark")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw Malformed(description: "not UTF-8") }
        var records: [[String]] = []
        var record: [String] = []
        var field = ""
        var scalars = Array(text.unicodeScalars)[...]
        var fieldStarted = false
        while let scalar = scalars.popFirst() {
            if scalar == "\"" && !fieldStarted && field.isEmpty {
                // Quoted field: up to the closing quote; "" is one quote.
                while true {
                    guard let inner = scalars.popFirst() else { throw Malformed(description: "unterminated quoted field") }
                    if inner == "\"" {
                        if scalars.first == "\"" {
                            scalars.removeFirst()
                            field.unicodeScalars.append("\"")
                        } else {
                            break
                        }
                    } else {
                        field.unicodeScalars.append(inner)
                    }
                }
                fieldStarted = true
                guard let next = scalars.first, next == "," || next == "\r" else {
                    throw Malformed(description: "text after a closing quote in record \(records.count + 1)")
                }
                continue
            }
            switch scalar {
            case ",":
                record.append(field)
                field = ""
                fieldStarted = false
            case "\r":
                guard scalars.popFirst() == "\n" else { throw Malformed(description: "CR without LF in record \(records.count + 1)") }
                record.append(field)
                records.append(record)
                record = []
                field = ""
                fieldStarted = false
            case "\n":
                throw Malformed(description: "bare LF in record \(records.count + 1)")
            case "\"":
                throw Malformed(description: "quote inside an unquoted field in record \(records.count + 1)")
            default:
                if fieldStarted { throw Malformed(description: "text after a quoted field") }
                field.unicodeScalars.append(scalar)
            }
        }
        guard record.isEmpty, field.isEmpty else { throw Malformed(description: "the last record does not end with CRLF") }
        guard let header = records.first else { throw Malformed(description: "no header") }
        for (index, record) in records.enumerated() where record.count != header.count {
            throw Malformed(description: "record \(index + 1) has \(record.count) fields, the header \(header.count)")
        }
        self.header = header
        self.records = Array(records.dropFirst())
    }

    /// Records as dictionaries keyed by the header's names.
    public var rows: [[String: String]] {
        records.map { Dictionary(uniqueKeysWithValues: zip(header, $0)) }
    }
}
