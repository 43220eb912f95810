import Foundation

/// One sheet of the report's workbook, its SpreadsheetML written to a temporary file a row at a time (a
/// detail sheet of a million purchases never sits in memory). Numbers are numeric cells styled with as many
/// decimals as the figure has (a currency's ISO 4217 exponent: JPY 0, USD 2, BHD 3), moments dates, and text
/// inline strings under the CSV's formula guard, so that every cell reads back as the CSV's.
final class WorksheetWriter {
    let name: String
    let columns: [String]
    let file: URL
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private(set) var rows = 0
    /// A worksheet's rows at most (Excel's and the format's limit): a sheet past it is refused.
    static let maximumRows = 1_048_576

    init(name: String, columns: [String], directory: URL) throws {
        self.name = name
        self.columns = columns
        file = directory.appendingPathComponent("sheet-\(UUID().uuidString).xml")
        guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
            throw FileWriteError(path: file.path, reason: "cannot create the workbook's temporary sheet")
        }
        handle = try FileHandle(forWritingTo: file)
        buffer += Array(
            """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">\
            <sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>\
            </sheetView></sheetViews><sheetData>
            """.utf8)
        append(columns.map(CSVField.text), header: true)
    }

    deinit { try? handle.close() }

    func append(_ fields: [CSVField], header: Bool = false) {
        rows += 1
        buffer += Array("<row r=\"\(rows)\">".utf8)
        for (index, field) in fields.enumerated() {
            let reference = Self.column(index) + String(rows)
            switch field {
            case .empty: continue
            case .number(let text):
                buffer += Array("<c r=\"\(reference)\" s=\"\(Self.numberStyle(text))\"><v>\(text)</v></c>".utf8)
            case .moment(let date):
                buffer += Array("<c r=\"\(reference)\" s=\"\(WorkbookStyles.dateTime)\"><v>\(Self.serial(date))</v></c>".utf8)
            case .text(let text):
                let style = header ? WorkbookStyles.header : WorkbookStyles.text
                buffer += Array("<c r=\"\(reference)\" s=\"\(style)\" t=\"inlineStr\"><is><t xml:space=\"preserve\">".utf8)
                buffer += Self.escaped(Self.fitting(FormulaGuard.neutralise(text)))
                buffer += Array("</t></is></c>".utf8)
            }
        }
        buffer += Array("</row>".utf8)
    }

    /// Writes what is buffered (a report streams its detail through here).
    func flush() throws {
        try handle.write(contentsOf: buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    /// Closes the sheet: its autofilter over every row written.
    func finish() throws {
        guard rows <= Self.maximumRows else {
            throw FileWriteError(
                path: "the .xlsx workbook",
                reason: "its \(name) sheet would have \(rows) rows, past a worksheet's \(Self.maximumRows): use the CSV, which has no limit")
        }
        buffer += Array("</sheetData><autoFilter ref=\"\(filterRange)\"/></worksheet>".utf8)
        try flush()
        try handle.close()
    }

    var filterRange: String { "A1:\(lastColumn)\(max(rows, 1))" }
    /// The same range as the workbook's defined name for the filter wants it: `$A$1:$AH$120`.
    var absoluteFilterRange: String { "$A$1:$\(lastColumn)$\(max(rows, 1))" }
    private var lastColumn: String { Self.column(max(columns.count, 1) - 1) }

    /// `A`, …, `Z`, `AA`, …: the column of `index` (from 0).
    static func column(_ index: Int) -> String {
        var index = index
        var name = ""
        repeat {
            name = String(UnicodeScalar(UInt8(65 + index % 26))) + name
            index = index / 26 - 1
        } while index >= 0
        return name
    }

    /// The style for a number with the decimals it was written with.
    static func numberStyle(_ text: String) -> Int {
        guard let point = text.firstIndex(of: ".") else { return WorkbookStyles.decimals[0] ?? WorkbookStyles.general }
        return WorkbookStyles.decimals[text.distance(from: point, to: text.endIndex) - 1] ?? WorkbookStyles.general
    }

    /// A moment as a spreadsheet's serial day number (days since 1899-12-30), to the millisecond the cell
    /// shows, cut rather than rounded: 23:59:59.9997 on the 31st must never read as the next month's first
    /// second. Taken to PostgreSQL's microsecond first, so that 07.25 is never 07.2499999.
    static func serial(_ date: Date) -> String {
        let microseconds = (date.timeIntervalSince1970 * 1_000_000).rounded()
        let milliseconds = (microseconds / 1_000).rounded(.down)
        return String(format: "%.12f", milliseconds / 86_400_000 + 25_569)
    }

    /// Excel holds at most 32,767 characters in a cell and "repairs" a file with a longer one. Ids are not
    /// bounded, so a longer text is cut, and says so at its end; the CSV beside the workbook keeps it whole.
    static let maximumCellLength = 32_767

    static func fitting(_ text: String) -> String {
        guard text.utf16.count > maximumCellLength else { return text }
        let marker = " [cut: \(text.utf16.count) characters in all; the CSV holds the whole text]"
        var kept = ""
        var length = 0
        for character in text {
            let size = character.utf16.count
            guard length + size + marker.utf16.count <= maximumCellLength else { break }
            kept.append(character)
            length += size
        }
        return kept + marker
    }

    /// XML text: `&`, `<`, `>` escaped, a CR as a reference, an underscore before an `x` as `_x005F_` (so
    /// that no `_xHHHH_` in an id is read as an escape), and characters XML 1.0 cannot carry (controls but
    /// tab, CR, LF) replaced by U+FFFD.
    static func escaped(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        let scalars = Array(text.unicodeScalars)
        for (index, scalar) in scalars.enumerated() {
            switch scalar {
            case "&": bytes += Array("&amp;".utf8)
            case "<": bytes += Array("&lt;".utf8)
            case ">": bytes += Array("&gt;".utf8)
            case "\t", "\n": bytes += Array(String(scalar).utf8)
            // An XML parser reads a raw CR as LF: the reference keeps it.
            case "\r": bytes += Array("&#13;".utf8)
            // Excel reads `_xHHHH_` in a cell's text as an escaped character: a literal one escapes its underscore.
            case "_" where index + 1 < scalars.count && scalars[index + 1] == "x": bytes += Array("_x005F_".utf8)
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF: bytes += Array("\u{FFFD}".utf8)
            default: bytes += Array(String(scalar).utf8)
            }
        }
        return bytes
    }
}
