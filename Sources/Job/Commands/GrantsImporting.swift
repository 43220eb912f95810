import Foundation
import Storage

/// `clawback grants import FILE`: grants from another system, JSONL or CSV, validated whole before any is
/// loaded (unless the bad lines are to be skipped). Every refusal is an error carrying its exit status.
public enum GrantsImporting {
    public struct Request: Sendable {
        public var file: String
        /// `jsonl` or `csv`; nil: from the file's extension.
        public var format: String?
        public var skipInvalid: Bool

        public init(file: String, format: String?, skipInvalid: Bool) {
            self.file = file
            self.format = format
            self.skipInvalid = skipInvalid
        }
    }

    public struct Outcome: Sendable {
        public var inserted: Int
        public var alreadyPresent: Int
        /// Each bad line, `FILE: line N: reason`, at most 100 of them, then how many more.
        public var badLines: [String]
        public var skipped: Int

        public var summary: String { "imported \(inserted) new grant(s); \(alreadyPresent) already present; \(skipped) bad line(s) skipped" }
    }

    /// Why nothing was imported.
    public enum Refusal: ExitStatusCarrying {
        /// `--format` is neither jsonl nor csv, or the extension does not say (64).
        case unknownFormat(String)
        /// The file cannot be read (66), and the system's reason when known.
        case unreadable(String, reason: String? = nil)
        /// The file as a whole is wrong, a CSV header for example (65).
        case badFile(file: String, problem: String)
        /// Some lines are bad and `--skip-invalid` was not given: nothing loaded (65). The lines are listed.
        case badLines(file: String, badLines: [String], bad: Int, total: Int)

        public var exitStatus: ExitStatus {
            switch self {
            case .unknownFormat: .usage
            case .unreadable: .noInput
            case .badFile, .badLines: .dataError
            }
        }

        public var description: String {
            switch self {
            case .unknownFormat(let problem): problem
            case .unreadable(let file, let reason): "cannot read \(file)" + (reason.map { ": \($0)" } ?? "")
            case .badFile(let file, let error): "\(file): \(error)"
            case .badLines(_, let lines, let bad, let total):
                (lines + ["nothing imported: \(bad) bad line(s) of \(total); fix them or use --skip-invalid"]).joined(separator: "\n")
            }
        }
    }

    public static func run(_ request: Request, _ context: CommandContext) throws -> Outcome {
        let format: GrantImport.Format
        if let named = request.format {
            guard let known = GrantImport.Format(rawValue: named.lowercased()) else {
                throw Refusal.unknownFormat("--format \(named) is not jsonl or csv")
            }
            format = known
        } else {
            guard let guessed = GrantImport.Format(path: request.file) else {
                throw Refusal.unknownFormat(
                    "cannot tell the format of \(request.file) from its extension; give --format jsonl or --format csv")
            }
            format = guessed
        }
        // Readable before the database is asked anything: an unreadable file is the user's (66), not the database's.
        guard access(request.file, R_OK) == 0 else { throw Refusal.unreadable(request.file, reason: String(cString: strerror(errno))) }
        let connection = try context.connect()
        let outcome: GrantImport.Outcome
        do {
            outcome = try GrantImport.importFile(request.file, format: format, skipInvalid: request.skipInvalid, on: connection)
        } catch let error as GrantImport.Unreadable {
            throw Refusal.unreadable(request.file, reason: error.reason)
        } catch let error as GrantImport.FileError {
            throw Refusal.badFile(file: request.file, problem: error.description)
        }
        var lines = outcome.invalid.prefix(100).map { "\(request.file): \($0)" }
        if outcome.invalid.count > 100 { lines.append("\(request.file): ... and \(outcome.invalid.count - 100) more bad lines") }
        if !outcome.invalid.isEmpty && !request.skipInvalid {
            throw Refusal.badLines(file: request.file, badLines: lines, bad: outcome.invalid.count, total: outcome.valid + outcome.invalid.count)
        }
        return Outcome(inserted: outcome.inserted, alreadyPresent: outcome.alreadyPresent, badLines: lines, skipped: outcome.invalid.count)
    }
}
