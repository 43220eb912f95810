public import Storage

/// Why a report could not be produced. The database work it describes is committed either way.
public enum ReportError: Error, Sendable, CustomStringConvertible {
    /// A report file or its directory could not be written.
    case cannotWrite(FileWriteError)
    /// Nothing to report on: no such run, or no finished run for the window.
    case noRuns(String)
    /// The report's data could not be read.
    case read(ReportStore.Failure)
    /// A stored value a report cannot represent (which would be a bug or a hand-edited row).
    case badData(String)
    /// The PDF could not be printed (the CSVs and the HTML page are written).
    case pdf(String)

    public var description: String {
        switch self {
        case .cannotWrite(let error): "cannot write the report: \(error)"
        case .noRuns(let what): "nothing to report: \(what)"
        case .read(let error): "cannot read the report's data: \(error)"
        case .badData(let what): "cannot report: \(what)"
        case .pdf(let why): "the reports are written, but not the PDF: \(why)"
        }
    }
}
