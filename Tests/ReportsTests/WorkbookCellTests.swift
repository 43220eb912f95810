import Testing

@testable import Reports

/// Excel's limit of 32,767 characters in a cell: a longer text (an unbounded id) is cut and says so, where
/// Excel would "repair" the whole file.
@Suite("The workbook's cells")
struct WorkbookCellTests {
    @Test("a text past Excel's 32,767 characters is cut to fit, naming its length; anything shorter is untouched")
    func longText() {
        let limit = WorksheetWriter.maximumCellLength
        let fits = String(repeating: "a", count: limit)
        #expect(WorksheetWriter.fitting(fits) == fits)
        // Characters of two UTF-16 units count twice, as Excel counts them; none is split.
        for long in [String(repeating: "b", count: limit + 1), String(repeating: "😀", count: 20_000), "x" + String(repeating: "é", count: 40_000)] {
            let cut = WorksheetWriter.fitting(long)
            #expect(cut.utf16.count <= limit)
            #expect(cut.hasSuffix(" [cut: \(long.utf16.count) characters in all; the CSV holds the whole text]"))
            #expect(long.hasPrefix(String(cut.prefix(100))))
        }
    }
}
