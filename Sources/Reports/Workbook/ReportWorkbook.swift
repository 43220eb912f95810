import Foundation
import ZIPFoundation

/// The cell styles of the workbook's `styles.xml`, by index.
enum WorkbookStyles {
    static let general = 0
    static let header = 1
    static let text = 2
    static let dateTime = 3
    /// A number's style by its decimals: 0 to 3, a currency's ISO 4217 exponent (and whole numbers).
    static let decimals: [Int: Int] = [0: 4, 1: 5, 2: 6, 3: 7]

    static let xml = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">\
        <numFmts count="3"><numFmt numFmtId="164" formatCode="yyyy\\-mm\\-dd\\ hh:mm:ss.000"/><numFmt numFmtId="165" formatCode="0.0"/>\
        <numFmt numFmtId="166" formatCode="0.000"/></numFmts>\
        <fonts count="2"><font><sz val="11"/><name val="Calibri"/></font><font><b/><sz val="11"/><name val="Calibri"/></font></fonts>\
        <fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>\
        <borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>\
        <cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>\
        <cellXfs count="8">\
        <xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>\
        <xf numFmtId="49" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1" applyNumberFormat="1"/>\
        <xf numFmtId="49" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>\
        <xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>\
        <xf numFmtId="1" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>\
        <xf numFmtId="165" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>\
        <xf numFmtId="2" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>\
        <xf numFmtId="166" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>\
        </cellXfs><cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>
        """
}

/// The report as an .xlsx workbook beside its CSVs: a sheet each for the detail, the summary, the summary's
/// recovery section and the refund requests, typed as the CSVs are (see `WorksheetWriter`), with frozen
/// headers and filters. SpreadsheetML is written here; ZIPFoundation makes the container.
final class ReportWorkbook {
    private(set) var sheets: [WorksheetWriter] = []
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-xlsx-\(UUID().uuidString)")
        // Player and transaction ids pass through here: readable by clawback's user only.
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func sheet(_ name: String, columns: [String]) throws -> WorksheetWriter {
        let sheet = try WorksheetWriter(name: name, columns: columns, directory: directory)
        sheets.append(sheet)
        return sheet
    }

    /// Finishes every sheet and writes the workbook to `path` (through `atomicFile`'s temporary name).
    func write(to atomicFile: AtomicFile) throws {
        for sheet in sheets { try sheet.finish() }
        let zip = directory.appendingPathComponent("workbook.xlsx")
        let archive = try Archive(url: zip, accessMode: .create)
        func add(_ path: String, _ text: String) throws {
            let data = Data(text.utf8)
            try archive.addEntry(with: path, type: .file, uncompressedSize: Int64(data.count), compressionMethod: .deflate) { position, size in
                data.subdata(in: Int(position)..<Int(position) + size)
            }
        }
        let indices = sheets.indices.map { $0 + 1 }
        try add(
            "[Content_Types].xml",
            """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">\
            <Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>\
            <Default Extension="xml" ContentType="application/xml"/>\
            <Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>\
            <Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>\
            \(indices.map { "<Override PartName=\"/xl/worksheets/sheet\($0).xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml\"/>" }.joined())\
            </Types>
            """)
        try add(
            "_rels/.rels",
            """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">\
            <Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/>\
            </Relationships>
            """)
        let names = sheets.enumerated().map { index, sheet in
            "<sheet name=\"\(sheet.name)\" sheetId=\"\(index + 1)\" r:id=\"rId\(index + 1)\"/>"
        }
        let filters = sheets.enumerated().map { index, sheet in
            "<definedName name=\"_xlnm._FilterDatabase\" localSheetId=\"\(index)\" hidden=\"1\">'\(sheet.name)'!\(sheet.absoluteFilterRange)</definedName>"
        }
        try add(
            "xl/workbook.xml",
            """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" \
            xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">\
            <sheets>\(names.joined())</sheets><definedNames>\(filters.joined())</definedNames></workbook>
            """)
        try add(
            "xl/_rels/workbook.xml.rels",
            """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">\
            \(indices.map { "<Relationship Id=\"rId\($0)\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet\" Target=\"worksheets/sheet\($0).xml\"/>" }.joined())\
            <Relationship Id="rId\(sheets.count + 1)" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>\
            </Relationships>
            """)
        try add("xl/styles.xml", WorkbookStyles.xml)
        for (index, sheet) in sheets.enumerated() {
            try archive.addEntry(with: "xl/worksheets/sheet\(index + 1).xml", fileURL: sheet.file, compressionMethod: .deflate)
        }
        // The archive is complete once `archive` is released; its bytes go through the report's atomic file.
        let handle = try FileHandle(forReadingFrom: zip)
        defer { try? handle.close() }
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { try atomicFile.write(Array(chunk)) }
    }
}
