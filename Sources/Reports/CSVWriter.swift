public import Foundation

/// One cell of a report row. Text cells pass the formula guard; numbers are written as they are, never
/// quoted or guarded, so a spreadsheet reads them as numbers; moments as `ReportTimestamp` text (a workbook
/// writes them as dates).
public enum CSVField: Sendable, Equatable {
    case text(String)
    /// Already formatted by the caller: digits, an optional leading minus and an optional decimal point.
    case number(String)
    case moment(Date)
    case empty

    public static func integer<T: BinaryInteger>(_ value: T) -> CSVField { .number(String(value)) }

    public static func optionalText(_ value: String?) -> CSVField { value.map(CSVField.text) ?? .empty }

    public static func optionalMoment(_ value: Date?) -> CSVField { value.map(CSVField.moment) ?? .empty }

    /// The cell as the CSV shows it (before quoting and the formula guard).
    public var csvText: String {
        switch self {
        case .text(let text), .number(let text): text
        case .moment(let date): ReportTimestamp.format(date)
        case .empty: ""
        }
    }
}

/// RFC 4180 output: CRLF line ends, a header row, a field quoted when it holds a comma, a double quote, CR or
/// LF, and quotes inside doubled. UTF-8, with an optional byte order mark for Excel (which otherwise reads
/// the file in the machine's legacy code page and garbles non-ASCII player ids).
public struct CSVWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(byteOrderMark: Bool) {
        if byteOrderMark { bytes += [0xEF, 0xBB, 0xBF] }
    }

    public mutating func appendRow(_ fields: [CSVField]) {
        for (index, field) in fields.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            switch field {
            case .text(let text): appendQuotedIfNeeded(FormulaGuard.neutralise(text))
            // Numbers and moments are never quoted or guarded: their text is written as `csvText` gives it.
            case .number, .moment, .empty: bytes += field.csvText.utf8
            }
        }
        bytes += [0x0D, 0x0A]
    }

    public mutating func appendHeader(_ names: [String]) {
        appendRow(names.map(CSVField.text))
    }

    /// Hands the bytes written so far to `body` and forgets them: lets a large report stream to disk.
    public mutating func drain<Failure: Error>(_ body: ([UInt8]) throws(Failure) -> Void) throws(Failure) {
        try body(bytes)
        bytes.removeAll(keepingCapacity: true)
    }

    private mutating func appendQuotedIfNeeded(_ text: String) {
        let utf8 = text.utf8
        let needsQuotes = utf8.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0D || $0 == 0x0A }
        guard needsQuotes else {
            bytes += utf8
            return
        }
        bytes.append(UInt8(ascii: "\""))
        for byte in utf8 {
            if byte == UInt8(ascii: "\"") { bytes.append(byte) }
            bytes.append(byte)
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// Keeps a text cell from being run as a formula by Excel, LibreOffice or Google Sheets (CSV injection):
/// a cell starting with `=`, `+`, `-`, `@`, tab or CR gets a leading apostrophe. A cell that already starts
/// with an apostrophe gets one more, so the guard is reversible: drop one leading apostrophe, if any, to get
/// the stored value back exactly.
public enum FormulaGuard {
    static let triggers: Set<UInt8> = [
        UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "@"), 0x09, 0x0D,
        UInt8(ascii: "'"),
    ]

    public static func neutralise(_ text: String) -> String {
        guard let first = text.utf8.first, triggers.contains(first) else { return text }
        return "'" + text
    }

    /// The stored value of a guarded cell.
    public static func restore(_ cell: String) -> String {
        cell.hasPrefix("'") ? String(cell.dropFirst()) : cell
    }
}
